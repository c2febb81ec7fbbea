/**
 * The usage page's view model, pure (unit-tested in tests/ui/jobDetail.test.ts): GET /api/usage reduced to what the
 * page shows, the nodes' cost beside the control plane's own, per job, per day and in total. Read leniently: any part
 * the server does not send (an older or newer server) shows as "–" rather than breaking the page.
 */
import type { UsageReport, UsageJobRow } from '../../shared/core/ops/usage';

/** The answer as the page reads it: every part may be missing. */
export type UsageAnswer = Partial<Omit<UsageReport, 'controlPlane' | 'perJob'>> & {
  controlPlane?: Partial<UsageReport['controlPlane']>;
  perJob?: Partial<UsageJobRow>[];
};

const DASH = '–';

/** An amount of money: 4 decimals under 1, else 2; control-plane amounts are tiny, so they get `digits`. */
export function money(amount: number | undefined, currency: string | undefined, digits?: number): string {
  if (amount === undefined || !Number.isFinite(amount)) return DASH;
  const d = digits ?? (amount < 1 ? 4 : 2);
  return `${amount.toFixed(d)}${currency ? ` ${currency}` : ''}`;
}

function num(n: number | undefined, digits = 0): string {
  return n === undefined || !Number.isFinite(n) ? DASH : n.toFixed(digits);
}

/** Storage transactions summed over kinds, and the split for the tooltip. */
export function transactions(s: { table?: number; queue?: number; blobWrite?: number; blobRead?: number } | undefined): { total: string; detail: string } {
  if (!s) return { total: DASH, detail: '' };
  const parts = { table: s.table ?? 0, queue: s.queue ?? 0, 'blob write': s.blobWrite ?? 0, 'blob read': s.blobRead ?? 0 };
  const total = Object.values(parts).reduce((a, b) => a + b, 0);
  return {
    total: total.toFixed(0),
    detail: Object.entries(parts)
      .map(([k, v]) => `${k} ${v.toFixed(0)}`)
      .join(', '),
  };
}

export interface UsageJobLine {
  id: string;
  released: string;
  shape: string;
  nodeMinutes: string;
  nodesCost: string;
  controlPlaneCost: string;
  cpuSeconds: string;
  storageTransactions: string;
  storageDetail: string;
}

export interface UsageSummary {
  jobs: string;
  nodeMinutes: string;
  nodesCost: string;
  unpriced?: string;
  controlPlaneCost: string;
  cpuSeconds: string;
  executions: string;
  storageTransactions: string;
  storageDetail: string;
  /** Where the control plane's prices come from and their date, and whether they are the dated fallback. */
  controlPlanePrices: string;
  basis?: string;
  /** The nodes' price sources seen in the jobs (each job carries its own). */
  nodePriceSources: string[];
  perJob: UsageJobLine[];
  omitted?: string;
  perDay: { day: string; jobs: string; nodeMinutes: string; nodesCost: string; controlPlaneCost: string }[];
}

const CP_DIGITS = 5;

export function usageSummary(r: UsageAnswer): UsageSummary {
  const cp = r.controlPlane ?? {};
  const cur = r.currency;
  const tx = transactions(cp.storageTransactions);
  const perJob = (r.perJob ?? []).map((j): UsageJobLine => {
    const t = transactions(j.controlPlane?.storageTransactions);
    return {
      id: j.id ?? DASH,
      released: j.releasedAt ?? '',
      shape: `${j.nodes ?? '?'} × ${j.vmSize ?? '?'}`,
      nodeMinutes: num(j.nodeMinutes, 1),
      nodesCost: j.estimatedCost === undefined ? 'no price' : money(j.estimatedCost, j.currency),
      controlPlaneCost: money(j.controlPlane?.estimatedCost, cp.currency, CP_DIGITS),
      cpuSeconds: num(j.controlPlane?.cpuSeconds, 1),
      storageTransactions: t.total,
      storageDetail: t.detail,
    };
  });
  const days = new Set([...Object.keys(r.perDay ?? {}), ...Object.keys(cp.perDay ?? {})]);
  const perDay = [...days]
    .sort()
    .reverse()
    .map((day) => {
      const b = r.perDay?.[day];
      return {
        day,
        jobs: num(b?.jobs),
        nodeMinutes: num(b?.nodeMinutes, 1),
        nodesCost: money(b?.estimatedCost, cur),
        controlPlaneCost: money(cp.perDay?.[day], cp.currency, CP_DIGITS),
      };
    });
  const sources = [...new Set((r.perJob ?? []).map((j) => j.priceSource).filter((s): s is string => !!s))];
  return {
    jobs: num(r.total?.jobs),
    nodeMinutes: num(r.total?.nodeMinutes, 1),
    nodesCost: money(r.total?.estimatedCost, cur),
    ...(r.total?.unpriced
      ? { unpriced: `${r.total.unpriced} job(s) without a price for their VM size: their node-minutes are counted, their cost is not` }
      : {}),
    controlPlaneCost: money(cp.estimatedCost, cp.currency, CP_DIGITS),
    cpuSeconds: num(cp.cpuSeconds, 1),
    executions: num(cp.executions),
    storageTransactions: tx.total,
    storageDetail: tx.detail,
    controlPlanePrices: `prices as of ${cp.pricesAsOf ?? '?'}${cp.fallback && !/^dated fallback/.test(cp.priceSource ?? '') ? ' (dated fallback)' : ''}: ${cp.priceSource ?? 'unknown source'}`,
    ...(cp.basis ? { basis: cp.basis } : {}),
    nodePriceSources: sources,
    perJob,
    ...(r.perJobOmitted ? { omitted: `${r.perJobOmitted} older job(s) not listed (counted in the totals)` } : {}),
    perDay,
  };
}
