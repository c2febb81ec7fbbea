/**
 * The account's dedicated core quota, as Batch applies it in Batch-service allocation mode: a limit per VM family and
 * one for the whole account, counted over every node that is allocated (a node of a pool being deleted counts until
 * it is gone). A resize that would go over allocates what fits and ends with the resize error
 * `AccountCoreQuotaReached` (azure-platform notes; Batch's PoolResizeErrorCodes). Cores and family per VM size come
 * from the app's table (shared/planning/vmSizes.ts): the emulator has no catalogue of its own, so it is only as right
 * as that table.
 */
import { vmSizeInfo } from '../../../shared/planning/vmSizes';
import type { PoolRecord } from './types';

export interface AccountQuota {
  /** Dedicated cores of the whole account. */
  dedicatedCores?: number;
  /** Dedicated cores per VM family, e.g. { standardDSv5Family: 10 }. */
  perFamily?: Record<string, number>;
}

export const QUOTA_ERROR = { code: 'AccountCoreQuotaReached', message: 'The specified account has reached core quota' } as const;

function sizeOf(pool: PoolRecord) {
  return vmSizeInfo(typeof pool.spec.vmSize === 'string' ? pool.spec.vmSize : '');
}

/** Cores allocated now: in total and per family. */
export function coresInUse(pools: Iterable<PoolRecord>): { total: number; byFamily: Map<string, number> } {
  let total = 0;
  const byFamily = new Map<string, number>();
  for (const pool of pools) {
    const { cores, family } = sizeOf(pool);
    const nodes = [...pool.nodes.values()].filter((n) => !n.removed).length;
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
