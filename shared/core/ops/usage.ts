/** GET /api/usage: node-minutes and estimated cost per day and per tag, summed over finished jobs. Pure. */
import type { JobCost } from './cost';
import { controlPlaneCost, estimateControlPlaneUsage, DEFAULT_USAGE_COEFFICIENTS, type ControlPlaneUsage } from './controlPlaneCost';
import { CONTROL_PLANE_PRICES } from './controlPlanePrices';
import { COUNTED_BUDGET } from './countedBudget';

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
   * an estimate from each job's nodes and pool minutes (shared/core/ops/controlPlaneCost.ts), priced with dated prices.
   */
  controlPlane: ControlPlaneUsageReport;
  /** Per job, newest release first (at most PER_JOB_MAX rows; `perJobOmitted` counts the older ones left out). */
  perJob: UsageJobRow[];
  perJobOmitted: number;
}

/** One finished job's usage: the nodes' cost beside the control plane's own (the dashboard's usage page). */
export interface UsageJobRow {
  id: string;
  tags: Record<string, string>;
  releasedAt: string;
  vmSize?: string;
  nodes: number;
  minutes: number;
  nodeMinutes: number;
  /** Absent when the VM size had no price. */
  estimatedCost?: number;
  currency: string;
  priceSource: string;
  controlPlane: { estimatedCost: number; cpuSeconds: number; executions: number; storageTransactions: ControlPlaneUsage['storage'] };
}

/** Rows of `perJob` at most: the report stays a page's worth; the totals still count every job. */
export const PER_JOB_MAX = 500;

export interface ControlPlaneUsageReport {
  currency: string;
  estimatedCost: number;
  perDay: Record<string, number>;
  basis: string;
  pricesAsOf: string;
  priceSource: string;
  /** True while the prices are the dated constants rather than loaded ones. */
  fallback: boolean;
  /** The usage behind `estimatedCost`, summed over the jobs: Functions busy seconds, executions, storage transactions. */
  cpuSeconds: number;
  executions: number;
  storageTransactions: ControlPlaneUsage['storage'];
  /** The day the per-job storage transactions were counted (shared/core/ops/countedBudget.ts). */
  storageCountedAt: string;
  /** The day the per-job executions were counted and the CPU-seconds measured (countedBudget.ts, `host`). */
  hostWorkCountedAt: string;
}

/** The control plane's estimated usage of one job, from its cost record. */
export function jobControlPlaneUsage(cost: Pick<JobCost, 'nodes' | 'minutes'>): ControlPlaneUsage {
  return estimateControlPlaneUsage({ nodes: Math.max(0, cost.nodes), minutes: Math.max(0, cost.minutes) });
}

/** The control plane's estimated cost of one job, from its cost record. */
export function jobControlPlaneCost(cost: Pick<JobCost, 'nodes' | 'minutes'>): number {
  return controlPlaneCost(jobControlPlaneUsage(cost)).total;
}

const empty = (): UsageBucket => ({ jobs: 0, nodeMinutes: 0, estimatedCost: 0, unpriced: 0 });
const round = (n: number, d: number) => Math.round(n * 10 ** d) / 10 ** d;
const roundedStorage = (s: ControlPlaneUsage['storage']): ControlPlaneUsage['storage'] => ({
  table: round(s.table, 3),
  queue: round(s.queue, 3),
  blobWrite: round(s.blobWrite, 3),
  blobRead: round(s.blobRead, 3),
});

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
    cpuSeconds: 0,
    executions: 0,
    storageTransactions: { table: 0, queue: 0, blobWrite: 0, blobRead: 0 },
    storageCountedAt: COUNTED_BUDGET.countedAt,
    hostWorkCountedAt: COUNTED_BUDGET.host.countedAt,
  };
  const report: UsageReport = { perDay: {}, perTag: {}, total: empty(), controlPlane, perJob: [], perJobOmitted: 0 };
  const rows: UsageJobRow[] = [];
  for (const job of jobs) {
    const cost = job.cost;
    if (!cost) continue;
    report.currency ??= cost.currency;
    add(report.total, cost);
    add((report.perDay[cost.releasedAt.slice(0, 10)] ??= empty()), cost);
    for (const [k, v] of Object.entries(job.tags)) add((report.perTag[`${k}=${v}`] ??= empty()), cost);
    const used = jobControlPlaneUsage(cost);
    const cp = controlPlaneCost(used).total;
    const day = cost.releasedAt.slice(0, 10);
    controlPlane.estimatedCost = round(controlPlane.estimatedCost + cp, 6);
    controlPlane.perDay[day] = round((controlPlane.perDay[day] ?? 0) + cp, 6);
    controlPlane.cpuSeconds = round(controlPlane.cpuSeconds + used.cpuSeconds, 3);
    controlPlane.executions = round(controlPlane.executions + used.executions, 3);
    for (const k of Object.keys(used.storage) as (keyof ControlPlaneUsage['storage'])[])
      controlPlane.storageTransactions[k] = round(controlPlane.storageTransactions[k] + used.storage[k], 3);
    rows.push({
      id: job.id,
      tags: job.tags,
      releasedAt: cost.releasedAt,
      ...(cost.vmSize ? { vmSize: cost.vmSize } : {}),
      nodes: cost.nodes,
      minutes: cost.minutes,
      nodeMinutes: cost.nodeMinutes.total,
      ...(cost.estimatedCost !== undefined ? { estimatedCost: cost.estimatedCost } : {}),
      currency: cost.currency,
      priceSource: cost.priceSource,
      controlPlane: {
        estimatedCost: round(cp, 6),
        cpuSeconds: round(used.cpuSeconds, 3),
        executions: round(used.executions, 3),
        storageTransactions: roundedStorage(used.storage),
      },
    });
  }
  rows.sort((a, b) => b.releasedAt.localeCompare(a.releasedAt) || a.id.localeCompare(b.id));
  report.perJob = rows.slice(0, PER_JOB_MAX);
  report.perJobOmitted = rows.length - report.perJob.length;
  return report;
}
