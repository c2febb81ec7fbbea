/**
 * Pools have owners: who may run a job on an existing pool (pool.poolId). Decided at the door (submission and dry
 * run) and again by the pipeline just before the job is placed on the pool (the poolInspect activity), from the
 * pool's own metadata, so a pool that changed hands in between is refused then too. The decision is pure; the reads
 * it needs come through a small port (PoolLookup), built from the deployment in shared/services.ts.
 *
 * A caller may use:
 *   - any pool, when an admin (Jobs.Admin or an operator key);
 *   - a pool the deployment declares shared for it (SHARED_POOLS: shared/core/config/sharedPools.ts);
 *   - a pool its own job created: the pool's metadata names it as the submitter (SUBMITTER_KEY), or, for a pool
 *     created before pools recorded their submitter, the Jobs row of the job named in the metadata (JOB_KEY) has
 *     it as owner.
 * Anything else is refused with one answer that says only "not yours": never who owns it, which job, its size or
 * state. A pool id that does not exist is let through as before (the job then fails at Provisioning: "does not
 * exist"); docs/security.md ("Pools have owners") says why that answer is acceptable.
 */
import type { SharedPool, SharedPoolUser } from '../config/sharedPools';
import type { SpecError } from '../spec';
import type { JobSpec } from '../spec/schema';

import type { PoolAccessBasis } from '../state/record';

export type { PoolAccessBasis };

/** The error code of a refusal (HTTP 403, the job's error on the admission check). */
export const POOL_FORBIDDEN = 'PoolForbidden';
/** The field a refusal names. */
export const POOL_ID_PATH = 'pool.poolId';

export interface PoolCaller {
  /** The owner id the job is (or would be) recorded with. */
  owner: string;
  /** Admins may use any pool. */
  admin: boolean;
  /** Which door: an HTTP caller with the submitter role, or the job-submissions queue (for SHARED_POOLS). */
  as: SharedPoolUser;
}

/** What the pool's metadata says (a pool read); `creatorJobOwner` only for pools without a recorded submitter. */
export interface PoolFacts {
  exists: boolean;
  /** The submitter recorded on the pool (SUBMITTER_KEY). */
  owner?: string;
  /** The control-plane job the pool was created for (JOB_KEY); absent on pools the control plane did not create. */
  ownedByJob?: string;
  /** The owner on the Jobs row of `ownedByJob` (undefined: no such row). */
  creatorJobOwner?: string;
}

export type PoolAccess = { allowed: true; basis: PoolAccessBasis } | { allowed: false; reason: string };

/** The one sentence a refusal says, whatever the reason behind it. */
export function notYours(poolId: string): string {
  return `pool ${poolId} is not one you may use: a job may run only on a pool created by its submitter's own jobs, or on one this deployment shares (SHARED_POOLS)`;
}

/** The deployment's declaration of `poolId` for this caller, if any (pool ids are case-insensitive in Batch). */
export function sharedFor(poolId: string, caller: Pick<PoolCaller, 'as'>, shared: readonly SharedPool[]): boolean {
  const entry = shared.find((p) => p.poolId.toLowerCase() === poolId.toLowerCase());
  return !!entry && entry.users.includes(caller.as);
}

/** Whether the pool's facts are needed at all (an admin or a declared shared pool needs no read). */
export function needsPoolRead(poolId: string, caller: PoolCaller, shared: readonly SharedPool[]): boolean {
  return !caller.admin && !sharedFor(poolId, caller, shared);
}

/** Pure: may `caller` run a job on `poolId`? */
export function decidePoolAccess(poolId: string, caller: PoolCaller, facts: PoolFacts | undefined, shared: readonly SharedPool[]): PoolAccess {
  if (caller.admin) return { allowed: true, basis: 'admin' };
  if (sharedFor(poolId, caller, shared)) return { allowed: true, basis: 'shared' };
  if (!facts) return { allowed: false, reason: notYours(poolId) };
  if (!facts.exists) return { allowed: true, basis: 'absent' };
  // A recorded submitter decides alone: the job row is consulted only for pools from before owners were recorded.
  if (facts.owner !== undefined) return facts.owner === caller.owner ? { allowed: true, basis: 'owner' } : { allowed: false, reason: notYours(poolId) };
  if (facts.ownedByJob !== undefined && facts.creatorJobOwner !== undefined && facts.creatorJobOwner === caller.owner)
    return { allowed: true, basis: 'creatorJob' };
  return { allowed: false, reason: notYours(poolId) };
}

/** The reads the decision needs, from this deployment's Batch account and Jobs table. */
export interface PoolLookup {
  inspect(poolId: string): Promise<{ exists: boolean; owner?: string; ownedByJob?: string }>;
  /** The owner on a job's row (undefined: no row). */
  jobOwner(jobId: string): Promise<string | undefined>;
}

/** Everything the door needs to judge pool.poolId: who asks, what the deployment shares, and how to read a pool. */
export interface PoolGate {
  caller: PoolCaller;
  shared: readonly SharedPool[];
  lookup: PoolLookup;
}

/** Reads what the decision needs (nothing for an admin or a shared pool, the job row only for an old pool) and decides. */
export async function judgePool(poolId: string, gate: PoolGate): Promise<PoolAccess> {
  if (!needsPoolRead(poolId, gate.caller, gate.shared)) return decidePoolAccess(poolId, gate.caller, undefined, gate.shared);
  const pool = await gate.lookup.inspect(poolId);
  const creatorJobOwner = pool.exists && pool.owner === undefined && pool.ownedByJob !== undefined ? await gate.lookup.jobOwner(pool.ownedByJob) : undefined;
  return decidePoolAccess(poolId, gate.caller, { ...pool, ...(creatorJobOwner !== undefined ? { creatorJobOwner } : {}) }, gate.shared);
}

export type PoolCheck = { ok: true; basis?: PoolAccessBasis } | { ok: false; errors: SpecError[] };

/** The door's check of a valid spec: nothing to judge without pool.poolId; a refusal names the field. */
export async function checkPoolAccess(spec: JobSpec, gate: PoolGate): Promise<PoolCheck> {
  const poolId = spec.pool.poolId;
  if (poolId === undefined) return { ok: true };
  const access = await judgePool(poolId, gate);
  return access.allowed ? { ok: true, basis: access.basis } : { ok: false, errors: [{ path: POOL_ID_PATH, message: access.reason }] };
}

/** An HTTP caller (its principal): a submitter, or an admin who may use any pool. */
export function poolCallerOf(principal: { id: string; roles: readonly string[] }): PoolCaller {
  return { owner: principal.id, admin: principal.roles.includes('admin'), as: 'submitter' };
}

/** A message on the job-submissions queue: its jobs' owner is the queue, never an admin. */
export function queuePoolCaller(queueOwner: string): PoolCaller {
  return { owner: queueOwner, admin: false, as: 'queue' };
}

/**
 * The caller as the admission check rebuilds it from the job row: its owner, the door it came through (the queue's
 * owner id is fixed), and admin only when the door recorded that an admin's right let it through (or the owner is the
 * operator, always an admin). An admin's job thus keeps its pool; anyone else is judged by the pool as it is now.
 */
export function callerOfJobRow(row: { owner: string; poolAccess?: PoolAccessBasis }, ids: { queue: string; operator: string }): PoolCaller {
  return { owner: row.owner, admin: row.poolAccess === 'admin' || row.owner === ids.operator, as: row.owner === ids.queue ? 'queue' : 'submitter' };
}
