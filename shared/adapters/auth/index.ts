/** Identity and tenancy of the job API: tokens → principal → what it may do. See docs/security.md. */
export { APP_ROLES, ROLES, appRoleOf, rolesFromClaim, type Role } from './roles';
export { OPERATOR, QUEUE_OWNER, anonymousPrincipal, ownerIdOf, principalFromClaims, type Principal, type PrincipalKind, type ClaimsOutcome } from './principal';
export { ACTIONS, can, roleFor, appRolesFor, seesAllJobs, maySeeJob, listOwnerFilter, type Action } from './permissions';
export { matchesOperatorKey } from './operatorKeys';
export { createTokenValidator, TokenRejectedError, IssuerUnavailableError, type TokenValidator } from './tokenValidator';
export { authenticate, bearerChallenge, REALM, type Credentials, type AuthOutcome } from './authenticate';
export { dataOwnerKey, ownerDataArea, dataCallerOf, QUEUE_DATA_CALLER, USERS_ROOT, type DataCaller } from './dataArea';
