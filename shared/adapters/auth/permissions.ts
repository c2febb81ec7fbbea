/**
 * What each role may do, and the one visibility rule of the job API: a principal sees its own jobs, an admin sees
 * every job. A job you may not see does not exist for you (404, never 403), so ids of other people's jobs do not
 * leak. Pure.
 */
import { ROLES, type Role } from '../../core/config/auth';
import type { Principal } from './principal';
import { appRoleOf } from './roles';

/** job:read covers list, status, timeline, logs and output tails; usage:read the usage report (own jobs). */
export const ACTIONS = ['job:read', 'job:submit', 'job:cancel', 'usage:read'] as const;
export type Action = (typeof ACTIONS)[number];

/** Each role includes the one before it: a submitter reads its own jobs, an admin does everything. */
const GRANTS: Readonly<Record<Role, readonly Action[]>> = {
  reader: ['job:read', 'usage:read'],
  submitter: ['job:read', 'usage:read', 'job:submit', 'job:cancel'],
  admin: ACTIONS,
};

export function can(principal: Principal, action: Action): boolean {
  return principal.roles.some((r) => GRANTS[r].includes(action));
}

/** The lowest role granting `action`. */
export function roleFor(action: Action): Role {
  const role = ROLES.find((r) => GRANTS[r].includes(action));
  if (!role) throw new Error(`no role grants ${action}`);
  return role;
}

/** The app role values that grant `action` (for 403 messages and the OpenAPI document). */
export function appRolesFor(action: Action): string[] {
  return ROLES.filter((r) => GRANTS[r].includes(action)).map(appRoleOf);
}

export function seesAllJobs(principal: Principal): boolean {
  return principal.roles.includes('admin');
}

/** Whether the job owned by `owner` exists for this principal. */
export function maySeeJob(principal: Principal, owner: string): boolean {
  return seesAllJobs(principal) || owner === principal.id;
}

/** The owner filter of a listing: undefined (every job) for admins, else the principal's own id. */
export function listOwnerFilter(principal: Principal): string | undefined {
  return seesAllJobs(principal) ? undefined : principal.id;
}
