/**
 * Which price a job is costed with, and what it would cost: pure. A price cached from the Azure Retail Prices API
 * (shared/core/ops/retailPrices.ts) wins while it is fresh; a stale one is still better than none (said so); otherwise the
 * configured table (the built-in list or PRICE_TABLE_JSON), marked as the fallback wherever it is shown.
 */
import { pricePerNodeHour, type PriceTable } from '../config/priceTable';
import type { PriceQuote } from './cost';
import type { NodePrice } from './retailPrices';

/** A Retail Prices answer as the cache keeps it: with when it was fetched. */
export interface CachedNodePrice extends NodePrice {
  fetchedAt: string;
}

const day = (iso: string) => iso.slice(0, 10);

export function retailQuote(vmSize: string, cached: CachedNodePrice, stale: boolean): PriceQuote {
  const staleNote = stale ? ', stale: the last refresh failed' : '';
  return {
    vmSize,
    ...(cached.dedicated !== undefined ? { pricePerNodeHour: cached.dedicated } : {}),
    // Spot nodes (pool.spot) bill at the Spot meter; Batch's older Low Priority meter where there is no Spot one.
    ...((cached.spot ?? cached.lowPriority) !== undefined ? { spotPricePerNodeHour: (cached.spot ?? cached.lowPriority) as number } : {}),
    currency: cached.currency,
    source: `Azure Retail Prices API: ${cached.region}, Linux pay-as-you-go (${cached.meterName}), effective ${day(cached.effectiveStartDate)}, fetched ${day(cached.fetchedAt)}${staleNote}`,
    asOf: day(cached.effectiveStartDate),
    fallback: false,
  };
}

export function fallbackQuote(vmSize: string, table: PriceTable, why: string): PriceQuote {
  const price = pricePerNodeHour(table, vmSize);
  return {
    vmSize,
    ...(price !== undefined ? { pricePerNodeHour: price } : {}),
    currency: table.currency,
    source: `fallback (${why}): ${table.source}`,
    ...(table.asOf ? { asOf: table.asOf } : {}),
    fallback: true,
  };
}

/**
 * The quote for a size: the cached retail price when it is at most `maxAgeMs` old, a stale cached price when a
 * refresh failed, else the table's. A cached entry without a dedicated price (the size has only Spot meters in the
 * region) falls back as well.
 */
export function chooseQuote(args: {
  vmSize: string;
  cached?: CachedNodePrice;
  now: Date;
  maxAgeMs: number;
  refreshFailed?: string;
  table: PriceTable;
  retailDisabled?: string;
}): PriceQuote {
  const { vmSize, cached, now, maxAgeMs, refreshFailed, table, retailDisabled } = args;
  if (retailDisabled) return fallbackQuote(vmSize, table, retailDisabled);
  if (cached && cached.dedicated !== undefined) {
    const fresh = now.getTime() - Date.parse(cached.fetchedAt) <= maxAgeMs;
    if (fresh || refreshFailed) return retailQuote(vmSize, cached, !fresh);
  }
  if (refreshFailed) return fallbackQuote(vmSize, table, `the Retail Prices API could not be read: ${refreshFailed}`);
  return fallbackQuote(vmSize, table, `the Retail Prices API lists no Linux pay-as-you-go price for ${vmSize}`);
}

/** What a job may cost: its rate, and the most it can spend before a limit stops it. */
export interface CostEstimate {
  vmSize: string | null;
  nodes: number;
  currency: string;
  pricePerNodeHour: number | null;
  /** nodes × price: what every hour the pool is up costs. */
  perHour: number | null;
  /** The most the job can cost: the pool for its whole wall clock, or less where maxNodeHours or maxCost stops it first. */
  worstCase: number | null;
  /** Which limit sets the worst case. */
  boundBy: 'maxWallClock' | 'maxNodeHours' | 'maxCost' | null;
  wallClockHours: number;
  maxCost: { amount: number; currency: string } | null;
  priceSource: string;
  priceAsOf: string | null;
  fallback: boolean;
  /** Why a figure is missing or a limit is not comparable. */
  notes: string[];
}

const money = (n: number) => Math.round(n * 10_000) / 10_000;

/**
 * The estimate a dry run shows. Worst case = nodes × price × wall clock, lowered by maxNodeHours and by maxCost (the
 * budget watchdog cancels the job there; a poll interval can overshoot a little, docs/operations.md). The wall clock
 * counts the MPI task's limit only: allocation and staging before it are billed too, and are not in this figure.
 */
export function costEstimate(args: {
  vmSize: string | undefined;
  nodes: number;
  wallClockMinutes: number;
  maxNodeHours?: number;
  maxCost?: { amount: number; currency: string };
  quote: PriceQuote | undefined;
}): CostEstimate {
  const { vmSize, nodes, wallClockMinutes, maxNodeHours, maxCost, quote } = args;
  const notes: string[] = [];
  const price = quote?.pricePerNodeHour;
  const wallClockHours = wallClockMinutes / 60;
  const base = {
    vmSize: vmSize ?? null,
    nodes,
    currency: quote?.currency ?? 'USD',
    pricePerNodeHour: price ?? null,
    wallClockHours,
    maxCost: maxCost ?? null,
    priceSource: quote?.source ?? 'no price: the VM size is unknown',
    priceAsOf: quote?.asOf ?? null,
    fallback: quote?.fallback ?? true,
  };
  if (price === undefined) {
    notes.push(vmSize ? `no price known for ${vmSize}` : 'the pool is reused: its nodes are billed to whoever created it');
    return { ...base, perHour: null, worstCase: null, boundBy: null, notes };
  }
  let nodeHours = nodes * wallClockHours;
  let boundBy: CostEstimate['boundBy'] = 'maxWallClock';
  if (maxNodeHours !== undefined && maxNodeHours < nodeHours) {
    nodeHours = maxNodeHours;
    boundBy = 'maxNodeHours';
  }
  let worstCase = nodeHours * price;
  if (maxCost) {
    if (maxCost.currency !== base.currency) notes.push(`maxCost is in ${maxCost.currency}, prices in ${base.currency}: not comparable, not enforced`);
    else if (maxCost.amount < worstCase) {
      worstCase = maxCost.amount;
      boundBy = 'maxCost';
    }
  }
  return { ...base, perHour: money(nodes * price), worstCase: money(worstCase), boundBy, notes };
}

/** With pool.spot: the pool's hourly rate with its Spot nodes, and on dedicated nodes only (both shown by a dry run). */
export function spotEstimate(
  nodes: number,
  spotNodes: number,
  quote: PriceQuote | undefined,
): { nodes: number; spotPricePerNodeHour: number | null; perHour: number | null; perHourAllDedicated: number | null } {
  const spot = Math.min(nodes, spotNodes);
  const dedicatedPrice = quote?.pricePerNodeHour;
  const spotPrice = quote?.spotPricePerNodeHour;
  const allDedicated = dedicatedPrice === undefined ? null : money(nodes * dedicatedPrice);
  const perHour = dedicatedPrice === undefined ? null : money((nodes - spot) * dedicatedPrice + spot * (spotPrice ?? dedicatedPrice));
  return { nodes: spot, spotPricePerNodeHour: spotPrice ?? null, perHour, perHourAllDedicated: allDedicated };
}
