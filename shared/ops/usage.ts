/** GET /api/usage: node-minutes and estimated cost per day and per tag, summed over finished jobs. Pure. */
import type { JobCost } from './cost';

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
  const report: UsageReport = { perDay: {}, perTag: {}, total: empty() };
  for (const job of jobs) {
    const cost = job.cost;
    if (!cost) continue;
    report.currency ??= cost.currency;
    add(report.total, cost);
    add((report.perDay[cost.releasedAt.slice(0, 10)] ??= empty()), cost);
    for (const [k, v] of Object.entries(job.tags)) add((report.perTag[`${k}=${v}`] ??= empty()), cost);
  }
  return report;
}
