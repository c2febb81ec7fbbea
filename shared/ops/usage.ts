/** GET /api/usage: node-minutes and estimated cost per day and per tag, summed over finished jobs. Pure. */
import type { JobCost } from './cost';
import { controlPlaneCost, estimateControlPlaneUsage, DEFAULT_USAGE_COEFFICIENTS } from './controlPlaneCost';
import { CONTROL_PLANE_PRICES } from './controlPlanePrices';
import { addTransactions, COUNTED_BUDGET, type StorageTransactions } from './countedBudget';

export interface UsageInput {
  id: string;
  tags: Record<string, string>;
  cost?: JobCost;
}

export interface UsageBucket {
  jobs: number;
  nodeMinutes: number;
  estimatedCost: number;
  /** Jobs whose VM size had no price: their node-minutes are counted, their cost is not. */
  unpriced: number;
}

export interface UsageReport {
  currency?: string;
  /** UTC day of the pool's release → bucket. */
  perDay: Record<string, UsageBucket>;
  /** "key=value" → bucket. */
  perTag: Record<string, UsageBucket>;
  total: UsageBucket;
  /**
   * The control plane's own cost (Functions host and storage transactions) of the same jobs, beside the nodes' cost:
   * an estimate from each job's nodes and pool minutes (shared/ops/controlPlaneCost.ts), priced with dated prices.
   */
  controlPlane: ControlPlaneUsageReport;
}

export interface ControlPlaneUsageReport {
  currency: string;
  estimatedCost: number;
  perDay: Record<string, number>;
  basis: string;
  pricesAsOf: string;
  priceSource: string;
  /** True while the prices are the dated constants rather than loaded ones. */
  fallback: boolean;
  /** The storage transactions priced above, summed over the jobs (from the counted per-job table, countedBudget.ts). */
  storageTransactions: StorageTransactions;
  /** The day the per-job transactions were counted. */
  storageCountedAt: string;
}

/** The control plane's estimated cost of one job, from its cost record. */
export function jobControlPlaneCost(cost: Pick<JobCost, 'nodes' | 'minutes'>): number {
  return controlPlaneCost(jobControlPlaneUsage(cost)).total;
}

function jobControlPlaneUsage(cost: Pick<JobCost, 'nodes' | 'minutes'>) {
  return estimateControlPlaneUsage({ nodes: Math.max(0, cost.nodes), minutes: Math.max(0, cost.minutes) });
}

const empty = (): UsageBucket => ({ jobs: 0, nodeMinutes: 0, estimatedCost: 0, unpriced: 0 });
const round = (n: number, d: number) => Math.round(n * 10 ** d) / 10 ** d;

function add(bucket: UsageBucket, cost: JobCost): void {
  bucket.jobs += 1;
  bucket.nodeMinutes = round(bucket.nodeMinutes + cost.nodeMinutes.total, 2);
  if (cost.estimatedCost === undefined) bucket.unpriced += 1;
  else bucket.estimatedCost = round(bucket.estimatedCost + cost.estimatedCost, 4);
}

/** Jobs without a cost (no pool was ever allocated, or still running) are left out. */
export function usageReport(jobs: readonly UsageInput[]): UsageReport {
  const controlPlane: ControlPlaneUsageReport = {
    currency: CONTROL_PLANE_PRICES.currency,
    estimatedCost: 0,
    perDay: {},
    basis: DEFAULT_USAGE_COEFFICIENTS.basis,
    pricesAsOf: CONTROL_PLANE_PRICES.asOf,
    priceSource: CONTROL_PLANE_PRICES.source,
    fallback: CONTROL_PLANE_PRICES.fallback,
    storageTransactions: { table: 0, queue: 0, blobWrite: 0, blobRead: 0 },
    storageCountedAt: COUNTED_BUDGET.countedAt,
  };
  const report: UsageReport = { perDay: {}, perTag: {}, total: empty(), controlPlane };
  for (const job of jobs) {
    const cost = job.cost;
    if (!cost) continue;
    report.currency ??= cost.currency;
    add(report.total, cost);
    add((report.perDay[cost.releasedAt.slice(0, 10)] ??= empty()), cost);
    for (const [k, v] of Object.entries(job.tags)) add((report.perTag[`${k}=${v}`] ??= empty()), cost);
    const used = jobControlPlaneUsage(cost);
    const cp = controlPlaneCost(used).total;
    controlPlane.storageTransactions = roundAll(addTransactions(controlPlane.storageTransactions, used.storage));
    const day = cost.releasedAt.slice(0, 10);
    controlPlane.estimatedCost = round(controlPlane.estimatedCost + cp, 6);
    controlPlane.perDay[day] = round((controlPlane.perDay[day] ?? 0) + cp, 6);
  }
  return report;
}

function roundAll(s: StorageTransactions): StorageTransactions {
  return { table: round(s.table, 2), queue: round(s.queue, 2), blobWrite: round(s.blobWrite, 2), blobRead: round(s.blobRead, 2) };
}
