/**
 * The account's dedicated core quota, as Batch applies it in Batch-service allocation mode: a limit per VM family and
 * one for the whole account, counted over every node that is allocated (a node of a pool being deleted counts until
 * it is gone). A resize that would go over allocates what fits and ends with the resize error
 * `AccountCoreQuotaReached` (azure-platform notes; Batch's PoolResizeErrorCodes). Cores and family per VM size come
 * from the emulator's catalog (catalog.ts); a pool restored from an older state file with a size the catalog lacks
 * falls back to the app's naming rule (shared/core/planning/vmSizes.ts).
 *
 * Only what is configured is enforced; the account GET reports Batch's defaults for the rest (arm/account.ts).
 */
import { vmSizeInfo } from '../../../shared/core/planning/vmSizes';
import { catalogSize } from './catalog';
import type { PoolRecord } from './types';

export interface AccountQuota {
  /** Dedicated cores of the whole account. */
  dedicatedCores?: number;
  /** Dedicated cores per VM family, e.g. { standardDSv5Family: 10 }. */
  perFamily?: Record<string, number>;
  /**
   * Low-priority/Spot cores of the whole account (reported by the account GET, enforced when low-priority nodes are
   * allocated: Batch counts them apart from dedicated cores, and a resize over it ends with
   * `AccountLowPriorityCoreQuotaReached`).
   */
  lowPriorityCores?: number;
  /** Pools (reported by the account GET). */
  pools?: number;
  /** Active jobs and job schedules (reported by the account GET). */
  activeJobs?: number;
}

export const QUOTA_ERROR = { code: 'AccountCoreQuotaReached', message: 'The specified account has reached core quota' } as const;
export const LOW_PRIORITY_QUOTA_ERROR = {
  code: 'AccountLowPriorityCoreQuotaReached',
  message: 'The specified account has reached low priority core quota',
} as const;

/** Whether a node is a dedicated one (records saved before low-priority nodes existed have no flag: dedicated). */
export const isDedicatedNode = (n: { isDedicated?: boolean }): boolean => n.isDedicated !== false;

function sizeOf(pool: PoolRecord): { cores: number; family: string } {
  const name = typeof pool.spec.vmSize === 'string' ? pool.spec.vmSize : '';
  const size = catalogSize(name);
  return size ? { cores: size.vCPUs, family: size.family } : vmSizeInfo(name);
}

/** Cores allocated now: in total and per family, of dedicated nodes (or, `dedicated` false, of low-priority ones). */
export function coresInUse(pools: Iterable<PoolRecord>, dedicated = true): { total: number; byFamily: Map<string, number> } {
  let total = 0;
  const byFamily = new Map<string, number>();
  for (const pool of pools) {
    const { cores, family } = sizeOf(pool);
    // A preempted node's VM is gone: it holds no cores until Batch brings it back.
    const nodes = [...pool.nodes.values()].filter((n) => !n.removed && isDedicatedNode(n) === dedicated && n.state !== 'preempted').length;
    total += nodes * cores;
    byFamily.set(family, (byFamily.get(family) ?? 0) + nodes * cores);
  }
  return { total, byFamily };
}

/** How many more nodes `pool` may allocate under the quota (Infinity when no quota applies to it). */
export function nodesWithinQuota(quota: AccountQuota, pools: Iterable<PoolRecord>, pool: PoolRecord): number {
  const { cores, family } = sizeOf(pool);
  const used = coresInUse(pools);
  let room = Number.POSITIVE_INFINITY;
  if (quota.dedicatedCores !== undefined) room = Math.min(room, quota.dedicatedCores - used.total);
  const fam = quota.perFamily?.[family];
  if (fam !== undefined) room = Math.min(room, fam - (used.byFamily.get(family) ?? 0));
  return room === Number.POSITIVE_INFINITY ? room : Math.max(0, Math.floor(room / cores));
}

/** How many more low-priority nodes `pool` may allocate under the account's low-priority core quota. */
export function lowPriorityNodesWithinQuota(quota: AccountQuota, pools: Iterable<PoolRecord>, pool: PoolRecord): number {
  if (quota.lowPriorityCores === undefined) return Number.POSITIVE_INFINITY;
  const { cores } = sizeOf(pool);
  return Math.max(0, Math.floor((quota.lowPriorityCores - coresInUse(pools, false).total) / cores));
}
