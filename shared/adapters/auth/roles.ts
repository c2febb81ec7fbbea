/**
 * The app roles of the API's Entra ID app registration and the roles they grant in the app. A token carries the
 * app role *values* it was assigned in its `roles` claim (users and groups get them through the enterprise
 * application's assignments, client applications through application permissions); values we do not know are
 * ignored, so adding a role in Entra never widens what a caller may do here.
 */
import { ROLES, type Role } from '../../core/config/auth';

export { ROLES, type Role };

/** App role value (as declared in the app registration's appRoles) → the role it grants. */
export const APP_ROLES: Readonly<Record<string, Role>> = Object.freeze({
  'Jobs.Read': 'reader',
  'Jobs.Submit': 'submitter',
  'Jobs.Admin': 'admin',
});

/** The app role value that grants `role` (for messages and the OpenAPI document). */
export function appRoleOf(role: Role): string {
  const found = Object.entries(APP_ROLES).find(([, r]) => r === role);
  if (!found) throw new Error(`no app role grants ${role}`);
  return found[0];
}

/** The roles granted by a `roles` claim: known values only, each once, in ROLES order. Anything else grants nothing. */
export function rolesFromClaim(claim: unknown): Role[] {
  if (!Array.isArray(claim)) return [];
  const granted = new Set<Role>();
  for (const value of claim) {
    if (typeof value === 'string' && Object.prototype.hasOwnProperty.call(APP_ROLES, value)) granted.add(APP_ROLES[value]);
  }
  return ROLES.filter((r) => granted.has(r));
}
