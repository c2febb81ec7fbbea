/**
 * Whose data is where: every owner (principal id, shared/adapters/auth/principal.ts) has one area in the deployment's data
 * accounts, the blob prefix `users/<ownerKey>/` in any container jobs may use. The owner key is the owner id itself
 * when that is already a safe blob path (`<tid>/<oid>` of an Entra principal, lowercase GUIDs; `operator`,
 * `anonymous`, `queue`), so a user can read it off `GET /api/me` and find it in Storage Explorer. Pure.
 */
import { OPERATOR, QUEUE_OWNER } from './principal';
import type { Principal } from './principal';
import type { Role } from '../../core/config/auth';

const GUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const ENTRA_OWNER = new RegExp(`^${GUID}/${GUID}$`);
/** The owners that are not Entra principals: each a fixed word, never a GUID pair, so no two keys overlap. */
const FIXED_OWNERS: readonly string[] = [OPERATOR.id, 'anonymous', QUEUE_OWNER];

/** The directory every owner's area lives under, in every container jobs may use. */
export const USERS_ROOT = 'users/';

/**
 * The path-safe, stable key of an owner id, or undefined for an id that is none of the known forms (such an owner
 * has no area: nothing in the data accounts is its own).
 */
export function dataOwnerKey(ownerId: string): string | undefined {
  if (ENTRA_OWNER.test(ownerId) || FIXED_OWNERS.includes(ownerId)) return ownerId;
  return undefined;
}

/** The owner's area: the blob prefix `users/<ownerKey>/` (always ends in "/"), or undefined when it has none. */
export function ownerDataArea(ownerId: string): string | undefined {
  const key = dataOwnerKey(ownerId);
  return key === undefined ? undefined : `${USERS_ROOT}${key}/`;
}

/** Who names data: the owner whose area is its own, the roles that open shared areas, and whether it may name any area. */
export interface DataCaller {
  owner: string;
  roles: readonly Role[];
  /** Admins (Jobs.Admin, the operator) may name any area: they run the deployment. */
  admin: boolean;
}

export function dataCallerOf(principal: Principal): DataCaller {
  return { owner: principal.id, roles: principal.roles, admin: principal.roles.includes('admin') };
}

/**
 * The queue door's caller: whoever may send to the queue submits as `queue`, with the submitter's rights (it is a
 * submission door, not an admin one), so its jobs' data lives under `users/queue/`.
 */
export const QUEUE_DATA_CALLER: DataCaller = Object.freeze({ owner: QUEUE_OWNER, roles: Object.freeze(['submitter'] as Role[]), admin: false });
