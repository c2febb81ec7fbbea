/**
 * Resource Manager's door: an Entra bearer token for the management audience (missing, malformed, expired or for
 * another audience → 401 with ARM's codes and WWW-Authenticate), then role-based access: pool operations need a
 * Batch Account Contributor-level role on the account, and a PUT that assigns a user-assigned identity also needs
 * `Microsoft.ManagedIdentity/userAssignedIdentities/assign/action` on that identity (Managed Identity Operator),
 * else 403 AuthorizationFailed / LinkedAuthorizationFailed as Azure answers them. Who holds which role is the
 * emulator's configuration (the local stack grants both to the app identity, as infra/roles.json does in Azure).
 */
import type { EntraTokenVerifier, VerifiedToken } from '../../identity/verify';
import { TokenRejected } from '../../identity/verify';
import { ArmHttpError } from './errors';

/** What Resource Manager accepts as `aud`. */
export const ARM_AUDIENCES = [
  'https://management.core.windows.net/',
  'https://management.core.windows.net',
  'https://management.azure.com/',
  'https://management.azure.com',
];

export interface ArmAccessConfig {
  verify: EntraTokenVerifier;
  /** Object ids holding Batch Account Contributor (or Contributor) on the account. */
  contributors: string[];
  /** Identity ARM id (any case) → object ids holding Managed Identity Operator on it. */
  identityOperators: Record<string, string[]>;
  /** The authority named in WWW-Authenticate. */
  authority: string;
}

export async function authenticateArm(cfg: ArmAccessConfig, authorization: string | undefined): Promise<VerifiedToken> {
  const challenge = (error: string, description: string) => ({
    'WWW-Authenticate': `Bearer authorization_uri="${cfg.authority}", error="${error}", error_description="${description}"`,
  });
  if (!authorization) {
    throw new ArmHttpError(
      401,
      'AuthenticationFailed',
      "Authentication failed. The 'Authorization' header is missing.",
      challenge('invalid_token', "The authentication failed because of missing 'Authorization' header."),
    );
  }
  const m = /^Bearer\s+(\S+)$/i.exec(authorization);
  if (!m) {
    throw new ArmHttpError(
      401,
      'AuthenticationFailed',
      "Authentication failed. The 'Authorization' header is provided in an invalid format.",
      challenge('invalid_token', "The authentication failed because of 'Authorization' header format."),
    );
  }
  try {
    return await cfg.verify(m[1], ARM_AUDIENCES);
  } catch (err) {
    if (!(err instanceof TokenRejected)) throw err;
    if (err.problem === 'expired') {
      throw new ArmHttpError(
        401,
        'ExpiredAuthenticationToken',
        `The access token expiry UTC time is earlier than current UTC time '${new Date().toISOString()}' (${err.message}).`,
        challenge('invalid_token', 'The access token has expired.'),
      );
    }
    if (err.problem === 'audience') {
      throw new ArmHttpError(
        401,
        'InvalidAuthenticationTokenAudience',
        `The access token has been obtained for wrong audience or resource. It should exactly match with one of the allowed audiences '${ARM_AUDIENCES.join("','")}'.`,
        challenge('invalid_token', 'The access token has an invalid audience.'),
      );
    }
    throw new ArmHttpError(
      401,
      'InvalidAuthenticationToken',
      `The access token is invalid (${err.message}).`,
      challenge('invalid_token', 'The access token is invalid.'),
    );
  }
}

export function authorizeArm(cfg: ArmAccessConfig, caller: VerifiedToken, action: string, scope: string): void {
  if (cfg.contributors.includes(caller.oid)) return;
  throw new ArmHttpError(
    403,
    'AuthorizationFailed',
    `The client '${caller.appId ?? caller.oid}' with object id '${caller.oid}' does not have authorization to perform action '${action}' over scope '${scope}' or the scope is invalid. If access was recently granted, please refresh your credentials.`,
  );
}

export function authorizeIdentityAssignment(cfg: ArmAccessConfig, caller: VerifiedToken, action: string, scope: string, identityIds: string[]): void {
  const denied = identityIds.filter((id) => {
    const key = Object.keys(cfg.identityOperators).find((k) => k.toLowerCase() === id.toLowerCase());
    return !(key && cfg.identityOperators[key].includes(caller.oid));
  });
  if (!denied.length) return;
  throw new ArmHttpError(
    403,
    'LinkedAuthorizationFailed',
    `The client '${caller.appId ?? caller.oid}' with object id '${caller.oid}' has permission to perform action '${action}' on scope '${scope}'; however, it does not have permission to perform action(s) 'Microsoft.ManagedIdentity/userAssignedIdentities/assign/action' on the linked scope(s) '${denied.join("','")}' (respectively) or the linked scope(s) are invalid.`,
  );
}
