/**
 * Cost model of one job, pure: node-minutes from the pool's allocation (the create request) to its release
 * (the delete request, or the job's end for a pool we keep), per stage, and the estimated cost from a price table.
 * Spot (low-priority) node-minutes are counted apart from dedicated ones and priced with the Spot price when the
 * quote has one (pool.spot; a fallback to dedicated nodes moves the Spot nodes to the dedicated side from then on).
 */
export interface StageTiming {
  startedAt: string;
  endedAt?: string;
}

export interface PoolUsage {
  vmSize?: string;
  dedicatedNodes: number;
  lowPriorityNodes: number;
  /** When the Spot nodes were replaced by dedicated ones (pool.spot.fallback "dedicated"): from then they bill as dedicated. */
  lowPriorityUntil?: string;
  /** ISO time the pool was requested (created, or taken over when reused). */
  allocatedAt: string;
  /** ISO time the pool was released (delete requested, or the job ended for a pool we do not delete). */
  releasedAt: string;
}

export interface JobCost {
  vmSize?: string;
  nodes: number;
  allocatedAt: string;
  releasedAt: string;
  minutes: number;
  nodeMinutes: { dedicated: number; lowPriority: number; total: number };
  /** Dedicated node-minutes spent while each stage was current (clipped to the pool's lifetime). */
  perStage: Record<string, number>;
  pricePerNodeHour?: number;
  /** The Spot price used for the Spot node-minutes (absent: they were priced as dedicated, or there were none). */
  spotPricePerNodeHour?: number;
  currency: string;
  /** Absent when the VM size is not in the price table. */
  estimatedCost?: number;
  /** The estimated cost of each kind of node, when the job had Spot nodes. */
  estimatedCostSplit?: { dedicated: number; spot: number };
  priceSource: string;
  /** Σ over nodes of (node ready → MPI task start): billed minutes nodes sat idle before MPI (absent without an MPI task). */
  idleNodeMinutesBeforeMpi?: number;
}

/** One MPI task start: when the task was added, on which nodes, and when its attempt began. */
export interface MpiStart {
  at: string;
  nodes: readonly string[];
  attemptStartedAt: string;
}

/**
 * Billed idle node-minutes before MPI: for each MPI task started, Σ over its nodes of (the node ready → the task's
 * start), a node's readiness counted from its attempt's start at the earliest (the wait between attempts is the
 * retry's, not the staging's). A node never seen ready counts from its attempt's start. Times as the orchestrator saw
 * them (within one poll).
 */
export function idleNodeMinutesBeforeMpi(nodeReadyAt: Readonly<Record<string, string>>, starts: readonly MpiStart[]): number {
  let ms = 0;
  for (const s of starts) {
    const at = Date.parse(s.at);
    const from = Date.parse(s.attemptStartedAt);
    for (const id of s.nodes) {
      const ready = nodeReadyAt[id] ? Math.max(from, Date.parse(nodeReadyAt[id])) : from;
      ms += Math.max(0, at - ready);
    }
  }
  return round2(ms / 60_000);
}

const round2 = (n: number) => Math.round(n * 100) / 100;

function minutesBetween(fromIso: string, toIso: string): number {
  return Math.max(0, Date.parse(toIso) - Date.parse(fromIso)) / 60_000;
}

/** Node-hours used so far by `nodes` nodes allocated at `allocatedAtMs` (what the budget guard compares). */
export function nodeHoursSoFar(nodes: number, allocatedAtMs: number, nowMs: number): number {
  return (nodes * Math.max(0, nowMs - allocatedAtMs)) / 3_600_000;
}

const round4 = (n: number) => Math.round(n * 10_000) / 10_000;

/** Dedicated and Spot node-minutes of a pool's life: Spot nodes bill as Spot until `lowPriorityUntil`, then as dedicated. */
export function splitNodeMinutes(usage: PoolUsage): { dedicated: number; lowPriority: number } {
  const minutes = minutesBetween(usage.allocatedAt, usage.releasedAt);
  const until =
    usage.lowPriorityUntil !== undefined
      ? new Date(Math.min(Math.max(Date.parse(usage.lowPriorityUntil), Date.parse(usage.allocatedAt)), Date.parse(usage.releasedAt))).toISOString()
      : usage.releasedAt;
  const spotMinutes = minutesBetween(usage.allocatedAt, until);
  return {
    dedicated: usage.dedicatedNodes * minutes + usage.lowPriorityNodes * (minutes - spotMinutes),
    lowPriority: usage.lowPriorityNodes * spotMinutes,
  };
}

export function jobCost(
  usage: PoolUsage,
  timings: Record<string, StageTiming>,
  price: { pricePerNodeHour?: number; spotPricePerNodeHour?: number; currency: string; source: string },
  idleBeforeMpi?: number,
): JobCost {
  const minutes = minutesBetween(usage.allocatedAt, usage.releasedAt);
  const { dedicated, lowPriority } = splitNodeMinutes(usage);
  const from = Date.parse(usage.allocatedAt);
  const to = Date.parse(usage.releasedAt);
  const perStage: Record<string, number> = {};
  for (const [stage, t] of Object.entries(timings)) {
    const s = Math.max(from, Date.parse(t.startedAt));
    const e = Math.min(to, Date.parse(t.endedAt ?? usage.releasedAt));
    if (e > s) perStage[stage] = round2(((usage.dedicatedNodes + usage.lowPriorityNodes) * (e - s)) / 60_000);
  }
  const cost: JobCost = {
    vmSize: usage.vmSize,
    nodes: usage.dedicatedNodes + usage.lowPriorityNodes,
    allocatedAt: usage.allocatedAt,
    releasedAt: usage.releasedAt,
    minutes: round2(minutes),
    nodeMinutes: { dedicated: round2(dedicated), lowPriority: round2(lowPriority), total: round2(dedicated + lowPriority) },
    perStage,
    currency: price.currency,
    priceSource: price.source,
    ...(idleBeforeMpi !== undefined ? { idleNodeMinutesBeforeMpi: idleBeforeMpi } : {}),
  };
  if (price.pricePerNodeHour !== undefined) {
    cost.pricePerNodeHour = price.pricePerNodeHour;
    // Spot minutes at the Spot price when there is one; else at the dedicated price (an upper bound, never less).
    const spotPrice = lowPriority > 0 && price.spotPricePerNodeHour !== undefined ? price.spotPricePerNodeHour : price.pricePerNodeHour;
    if (lowPriority > 0 && price.spotPricePerNodeHour !== undefined) cost.spotPricePerNodeHour = price.spotPricePerNodeHour;
    const split = { dedicated: round4((dedicated / 60) * price.pricePerNodeHour), spot: round4((lowPriority / 60) * spotPrice) };
    // Rounded to 4 decimals: small test jobs cost fractions of a cent.
    cost.estimatedCost = round4((dedicated / 60) * price.pricePerNodeHour + (lowPriority / 60) * spotPrice);
    if (usage.lowPriorityNodes > 0) cost.estimatedCostSplit = split;
  }
  return cost;
}

export interface BudgetLimits {
  maxNodeHours?: number;
  maxCost?: { amount: number; currency: string };
}

/**
 * Whether the running job is over its budget, and why (the text recorded as the cancel reason after "budget").
 * maxCost in a currency other than the price table's cannot be compared: it is reported, not enforced.
 */
export function budgetVerdict(
  limits: BudgetLimits,
  used: { nodeHours: number; pricePerNodeHour?: number; currency: string },
): { exceeded: false; note?: string } | { exceeded: true; reason: string } {
  if (limits.maxNodeHours !== undefined && used.nodeHours > limits.maxNodeHours) {
    return { exceeded: true, reason: `budget: ${used.nodeHours.toFixed(4)} node-hours used, limit maxNodeHours ${limits.maxNodeHours}` };
  }
  if (limits.maxCost) {
    if (used.pricePerNodeHour === undefined) return { exceeded: false, note: 'maxCost not enforced: VM size not in the price table' };
    if (limits.maxCost.currency !== used.currency)
      return { exceeded: false, note: `maxCost not enforced: prices are in ${used.currency}, limit in ${limits.maxCost.currency}` };
    const spent = used.nodeHours * used.pricePerNodeHour;
    if (spent > limits.maxCost.amount) {
      return {
        exceeded: true,
        reason: `budget: estimated ${spent.toFixed(4)} ${used.currency} spent, limit maxCost ${limits.maxCost.amount} ${limits.maxCost.currency}`,
      };
    }
  }
  return { exceeded: false };
}

/** A price looked up once per job (activity costPrice), then used deterministically by the orchestrator. */
export interface PriceQuote {
  vmSize: string;
  pricePerNodeHour?: number;
  currency: string;
  /** Where the price comes from and as of when, in words (shown wherever a price is). */
  source: string;
  /** The day the price is stated for: the Retail Prices API's effectiveStartDate, or the fallback table's date. */
  asOf?: string;
  /** True when the price is the built-in (or PRICE_TABLE_JSON) table's, not the Retail Prices API's. */
  fallback?: boolean;
  /** The Spot price per node-hour (the Retail Prices API's Spot meter, else its Low Priority one), when known. */
  spotPricePerNodeHour?: number;
}

/** What a job is billed for right now: nodes allocated to it, and since when (undefined before the pool exists). */
export interface NodeUsage {
  nodes: number;
  allocatedAt?: string;
}

/**
 * The orchestrator's budget check for one job, called at every poll with the replayed clock and the job's
 * current usage (which grows while provisioning allocates nodes): the reason to cancel ("budget: …") once
 * node-hours or estimated cost go over the spec's limits, else undefined.
 */
export function budgetGuard(limits: BudgetLimits, price: PriceQuote): ((now: Date, usage: NodeUsage) => string | undefined) | undefined {
  if (limits.maxNodeHours === undefined && !limits.maxCost) return undefined;
  return (now, usage) => {
    if (usage.allocatedAt === undefined) return undefined;
    const v = budgetVerdict(limits, {
      nodeHours: nodeHoursSoFar(usage.nodes, Date.parse(usage.allocatedAt), now.getTime()),
      pricePerNodeHour: price.pricePerNodeHour,
      currency: price.currency,
    });
    return v.exceeded ? v.reason : undefined;
  };
}
