/**
 * Placement over several Batch accounts: which account a job that admission lets start runs on. Pure and
 * deterministic (property tests: tests/unit/placement.test.ts); the admission pass (shared/core/scheduling/admission.ts)
 * calls it with the accounts' quotas and what the deployment's running jobs hold on each, so a job that waits is
 * placed again at every pass and goes to whichever account frees up first.
 *
 * An account is a candidate only when its region offers the job's VM size (when its facts are known) and the job fits its dedicated core quota now (per VM family when the account
 * enforces it, and in total) next to what our jobs hold there; with Spot nodes asked for, also its low-priority
 * cores. Among the candidates the first of these decides (docs/scheduling.md, "Placement"):
 *   1. within the job's budget: an account whose estimated cost (price × nodes × wall-clock limit) exceeds
 *      `limits.maxCost` comes after those within it (unknown price or budget: within);
 *   2. Spot: when the job asks for Spot nodes, an account with free low-priority cores for them comes first;
 *   3. queue length: fewer of our jobs holding the account;
 *   4. price: the lower price per node-hour for the size in the account's price region (unknown: after known);
 *   5. data locality: more of the job's staging accounts in the account's region;
 *   6. the order of BATCH_ACCOUNTS (the home account first).
 */

export interface AccountCoreQuota {
  total?: number;
  families: Readonly<Record<string, number>>;
}

export interface PlacementAccount {
  name: string;
  /** The dedicated core quota admission keeps for this account (live quota, lowered by the deployment's cap). */
  coreQuota: AccountCoreQuota;
  /** Low-priority (Spot) cores of the account, when known. */
  lowPriorityCores?: number;
  region?: string;
  /** Staging accounts in the account's region (data locality). */
  stagingAccounts?: readonly string[];
  /** Price per node-hour of each VM size (lower-case name) in the account's price region, when known. */
  prices?: Readonly<Record<string, number>>;
  /** The VM sizes (lower-case names) the account's region offers, when known (its facts); unknown: any. */
  vmSizes?: ReadonlySet<string>;
}

/** Why the account cannot run the job's size at all (its region does not offer it), or undefined. */
export function sizeBlock(acc: PlacementAccount, job: Pick<PlacementJob, 'vmSize'>): string | undefined {
  if (!acc.vmSizes || job.vmSize === undefined || acc.vmSizes.has(job.vmSize.toLowerCase())) return undefined;
  return `${job.vmSize} is not offered${acc.region ? ` in ${acc.region}` : ''}`;
}

/** What the deployment's running jobs hold on one account. */
export interface AccountLoad {
  familyCores: ReadonlyMap<string, number>;
  totalCores: number;
  lowPriorityCores: number;
  /** Jobs holding a reservation on it. */
  jobs: number;
}

export interface PlacementJob {
  family: string;
  /** Dedicated cores the job holds (0 on a reused pool). */
  cores: number;
  nodes: number;
  vmSize?: string;
  /** Low-priority cores the job asks for (pool.spot), if any. */
  spotCores?: number;
  /** Staging accounts the job's data goes through. */
  stagingAccounts?: readonly string[];
  /** The job's budget and the hours its price is estimated for (limits.maxCost, limits.maxWallClock). */
  maxCost?: number;
  hours?: number;
}

export interface AccountVerdict {
  account: string;
  /** Why not, when the job does not fit the account now. */
  blocked?: string;
  freeCores?: number;
  jobs: number;
  pricePerNodeHour?: number;
  estimatedCost?: number;
  withinBudget: boolean;
  spotFree?: boolean;
  localStaging: number;
}

export type Placement = { account: string; reason: string; verdicts: AccountVerdict[] } | { account?: undefined; reason: string; verdicts: AccountVerdict[] };

export const EMPTY_LOAD: AccountLoad = { familyCores: new Map(), totalCores: 0, lowPriorityCores: 0, jobs: 0 };

const over = (used: number, want: number, limit: number | undefined) => limit !== undefined && want > 0 && used + want > limit;

/** Why the job does not fit the account's quota next to `load`, or undefined when it does. */
export function quotaBlock(acc: PlacementAccount, load: AccountLoad, job: PlacementJob): string | undefined {
  const familyQuota = acc.coreQuota.families[job.family];
  const fam = load.familyCores.get(job.family) ?? 0;
  if (over(fam, job.cores, familyQuota)) return `${job.family}: ${fam} of ${familyQuota} cores in use, the job needs ${job.cores}`;
  if (over(load.totalCores, job.cores, acc.coreQuota.total))
    return `account cores: ${load.totalCores} of ${acc.coreQuota.total} in use, the job needs ${job.cores}`;
  return undefined;
}

/** Free cores the job's family has on the account now (the smaller of family and total), or undefined when unlimited. */
function freeCores(acc: PlacementAccount, load: AccountLoad, family: string): number | undefined {
  const f = acc.coreQuota.families[family];
  const fam = f === undefined ? undefined : f - (load.familyCores.get(family) ?? 0);
  const tot = acc.coreQuota.total === undefined ? undefined : acc.coreQuota.total - load.totalCores;
  if (fam === undefined) return tot;
  return tot === undefined ? fam : Math.min(fam, tot);
}

export function verdictOf(acc: PlacementAccount, load: AccountLoad, job: PlacementJob): AccountVerdict {
  const price = job.vmSize ? acc.prices?.[job.vmSize.toLowerCase()] : undefined;
  const estimatedCost = price !== undefined && job.hours !== undefined ? price * job.nodes * job.hours : undefined;
  const spotFree = job.spotCores ? acc.lowPriorityCores !== undefined && load.lowPriorityCores + job.spotCores <= acc.lowPriorityCores : undefined;
  const free = freeCores(acc, load, job.family);
  const blocked = sizeBlock(acc, job) ?? quotaBlock(acc, load, job);
  return {
    account: acc.name,
    ...(blocked ? { blocked } : {}),
    ...(free !== undefined ? { freeCores: free } : {}),
    jobs: load.jobs,
    ...(price !== undefined ? { pricePerNodeHour: price } : {}),
    ...(estimatedCost !== undefined ? { estimatedCost } : {}),
    withinBudget: estimatedCost === undefined || job.maxCost === undefined || estimatedCost <= job.maxCost,
    ...(spotFree !== undefined ? { spotFree } : {}),
    localStaging: (job.stagingAccounts ?? []).filter((s) => acc.stagingAccounts?.includes(s)).length,
  };
}

/** The ranking of candidates (see the rules above); `index` is the account's place in BATCH_ACCOUNTS. */
function compare(a: AccountVerdict & { index: number }, b: AccountVerdict & { index: number }): number {
  const bool = (x: boolean | undefined, y: boolean | undefined) => (x === y ? 0 : x ? -1 : 1);
  const priceOf = (v: AccountVerdict) => v.pricePerNodeHour ?? Number.POSITIVE_INFINITY;
  return (
    bool(a.withinBudget, b.withinBudget) ||
    bool(a.spotFree, b.spotFree) ||
    a.jobs - b.jobs ||
    (priceOf(a) === priceOf(b) ? 0 : priceOf(a) < priceOf(b) ? -1 : 1) ||
    b.localStaging - a.localStaging ||
    a.index - b.index
  );
}

function why(chosen: AccountVerdict, others: AccountVerdict[]): string {
  const parts = [chosen.freeCores === undefined ? 'quota free (no core limit)' : `quota free (${chosen.freeCores} cores free)`];
  parts.push(`${chosen.jobs} of our job(s) on it`);
  if (chosen.pricePerNodeHour !== undefined) parts.push(`${chosen.pricePerNodeHour} per node-hour`);
  if (chosen.spotFree) parts.push('Spot cores free');
  if (chosen.localStaging) parts.push(`${chosen.localStaging} staging account(s) in its region`);
  if (!chosen.withinBudget) parts.push('over the budget, as every account with free quota');
  const notes = others.map((v) => (v.blocked ? `${v.account}: ${v.blocked}` : `${v.account}: ranked lower`));
  return `placed on ${chosen.account}: ${parts.join(', ')}${notes.length ? `; ${notes.join('; ')}` : ''}`;
}

/**
 * Places one job: the best account it fits now, or none (it waits, and the next pass places it again). `loads` are
 * keyed by account name (missing: nothing held there).
 */
export function placeJob(accounts: readonly PlacementAccount[], loads: ReadonlyMap<string, AccountLoad>, job: PlacementJob): Placement {
  const verdicts = accounts.map((acc) => verdictOf(acc, loads.get(acc.name) ?? EMPTY_LOAD, job));
  const candidates = verdicts
    .map((v, index) => ({ ...v, index }))
    .filter((v) => !v.blocked)
    .sort(compare);
  if (!candidates.length) {
    return { reason: `no Batch account has the quota free now: ${verdicts.map((v) => `${v.account}: ${v.blocked}`).join('; ')}`, verdicts };
  }
  const { index: _i, ...chosen } = candidates[0];
  return {
    account: chosen.account,
    reason: why(
      chosen,
      verdicts.filter((v) => v.account !== chosen.account),
    ),
    verdicts,
  };
}

/** Why the job could not fit any account even with nothing of ours running there, or undefined. */
export function neverFitsAnyAccount(accounts: readonly PlacementAccount[], job: PlacementJob): string | undefined {
  const reasons: string[] = [];
  for (const acc of accounts) {
    const familyQuota = acc.coreQuota.families[job.family];
    const noSize = sizeBlock(acc, job);
    if (noSize) reasons.push(`${acc.name}: ${noSize}`);
    else if (over(0, job.cores, familyQuota)) reasons.push(`${acc.name}: its quota for ${job.family} is ${familyQuota}`);
    else if (over(0, job.cores, acc.coreQuota.total)) reasons.push(`${acc.name}: its dedicated core quota is ${acc.coreQuota.total}`);
    else return undefined;
  }
  return `the job needs ${job.cores} ${job.family} cores${job.vmSize ? ` of ${job.vmSize}` : ''}; no Batch account can ever hold them (${reasons.join('; ')})`;
}
