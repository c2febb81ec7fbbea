/**
 * Admission: which waiting jobs may start now. Pure and deterministic: an admission pass reads the Admission
 * partition (admissionStore.ts), decides here, and commits the result in one guarded transaction, so this function is
 * where every rule lives and what the property tests exercise (tests/unit/admission.test.ts).
 *
 * Rules (docs/scheduling.md):
 * - Order: queue priority (higher first), then job priority (higher first), then submission order (first come first
 *   served), then job id. The order is a total order of keys that never change while a job waits.
 * - Limits: the Batch account's dedicated cores per VM family and in total, the deployment's concurrent pools and
 *   nodes (shared limits); per owner and per queue node and core caps (own limits). A job starts only if it fits
 *   every limit with what is reserved already (never over-commit).
 * - A job that could not fit even on an empty system is refused with the reason (it would wait forever).
 * - Bounded backfill: when a job cannot fit a SHARED limit it blocks: later jobs may start before it only while it
 *   cannot fit anyway, and each blocked job lets at most `backfillLimit` later jobs start ahead of it over its whole
 *   wait (the count is kept on its waiting row). After that nothing later starts until it has. A job waiting only on
 *   its own owner's or queue's cap blocks nobody: other owners and queues are not held back by someone else's cap.
 * - Several Batch accounts (`limits.accounts`): the core quota is each account's, and a job that may start is placed
 *   on the best account it fits now (shared/core/planning/placement.ts); it waits only when no account has the quota free.
 *   It is placed again at every pass, so a waiting job goes to whichever account frees up first.
 */
import { EMPTY_LOAD, neverFitsAnyAccount, placeJob, type AccountLoad, type PlacementAccount } from '../planning/placement';

export interface QueueConfig {
  name: string;
  /** Higher runs first. */
  priority: number;
  /** Caps over the jobs of this queue that hold reservations (undefined = none). */
  maxNodes?: number;
  maxCores?: number;
}

export interface AdmissionLimits {
  queues: readonly QueueConfig[];
  /** Dedicated core quota of the Batch account: per VM family, and `total` for the account (undefined = none). */
  coreQuota: { total?: number; families: Readonly<Record<string, number>> };
  maxPools?: number;
  maxNodes?: number;
  ownerMaxNodes?: number;
  ownerMaxCores?: number;
  /** How many later jobs may start ahead of a blocked job over its whole wait (0 = strict order). */
  backfillLimit: number;
  /**
   * The Batch accounts jobs are placed on, the home account first (several BATCH_ACCOUNTS): each with its own core
   * quota, which then replaces `coreQuota`. Undefined: one account, `coreQuota`.
   */
  accounts?: readonly PlacementAccount[];
}

/** What placement needs of a job besides its demand (kept on its waiting row). */
export interface PlacementNeeds {
  vmSize?: string;
  spotCores?: number;
  stagingAccounts?: string[];
  maxCost?: number;
  hours?: number;
}

/** What a job holds while it runs: cores of one VM family (0 for a reused pool), nodes, and pools it creates. */
export interface Demand {
  family: string;
  cores: number;
  nodes: number;
  pools: number;
  /** For placement over several accounts. */
  place?: PlacementNeeds;
}

export interface Reservation extends Demand {
  jobId: string;
  owner: string;
  queue: string;
  /** When the grant was made (ISO). */
  grantedAt: string;
  /** The n-th grant of the deployment (a monotonically increasing number kept in the ledger). */
  grant: number;
  /** The job's own run has seen the grant (later passes stop re-sending it). */
  acked: boolean;
  /** When the job started waiting for admission (ISO), when known. */
  waitingSince?: string;
  /** The Batch account it was placed on, with why (several accounts only; else the home account). */
  account?: string;
  placedBecause?: string;
}

export interface WaitingJob extends Demand {
  jobId: string;
  owner: string;
  queue: string;
  priority: number;
  /** Submission order key (the job's submission time, then its index in an array). */
  order: string;
  /** How many later jobs have started ahead of it while it was blocked. */
  jumpedBy: number;
  /** When its waiting row was written (ISO). */
  enqueuedAt?: string;
}

export interface AdmissionDecision {
  /** Jobs to admit now, in grant order. */
  admit: WaitingJob[];
  /** Jobs that can never fit, with why. */
  refuse: { jobId: string; reason: string }[];
  /** New jumpedBy counts of blocked jobs that later jobs started ahead of. */
  jumped: Record<string, number>;
  /** For every job left waiting, why. */
  waiting: Record<string, string>;
  /** Where each admitted job goes and why (several accounts only). */
  placed: Record<string, { account: string; reason: string }>;
}

export interface Usage {
  familyCores: Map<string, number>;
  totalCores: number;
  pools: number;
  nodes: number;
  owners: Map<string, { nodes: number; cores: number }>;
  queues: Map<string, { nodes: number; cores: number }>;
}

export function usageOf(reservations: readonly (Demand & { owner?: string; queue?: string })[]): Usage {
  const u: Usage = { familyCores: new Map(), totalCores: 0, pools: 0, nodes: 0, owners: new Map(), queues: new Map() };
  for (const r of reservations) add(u, r);
  return u;
}

function add(u: Usage, d: Demand & { owner?: string; queue?: string }): void {
  u.familyCores.set(d.family, (u.familyCores.get(d.family) ?? 0) + d.cores);
  u.totalCores += d.cores;
  u.pools += d.pools;
  u.nodes += d.nodes;
  const bump = (m: Map<string, { nodes: number; cores: number }>, key: string | undefined) => {
    if (key === undefined) return;
    const cur = m.get(key) ?? { nodes: 0, cores: 0 };
    m.set(key, { nodes: cur.nodes + d.nodes, cores: cur.cores + d.cores });
  };
  bump(u.owners, d.owner);
  bump(u.queues, d.queue);
}

type Check = { ok: true } | { ok: false; shared: boolean; reason: string };

const over = (used: number, want: number, limit: number | undefined) => limit !== undefined && want > 0 && used + want > limit;

/** Whether `job` fits now, next to what `u` holds; if not, which limit stops it and whether that limit is shared. */
export function fitsNow(limits: AdmissionLimits, u: Usage, job: WaitingJob): Check {
  const familyQuota = limits.coreQuota.families[job.family];
  const fam = u.familyCores.get(job.family) ?? 0;
  if (over(fam, job.cores, familyQuota))
    return { ok: false, shared: true, reason: `${job.family}: ${fam} of ${familyQuota} cores in use, the job needs ${job.cores}` };
  if (over(u.totalCores, job.cores, limits.coreQuota.total))
    return { ok: false, shared: true, reason: `account cores: ${u.totalCores} of ${limits.coreQuota.total} in use, the job needs ${job.cores}` };
  if (over(u.pools, job.pools, limits.maxPools)) return { ok: false, shared: true, reason: `pools: ${u.pools} of ${limits.maxPools} in use` };
  if (over(u.nodes, job.nodes, limits.maxNodes))
    return { ok: false, shared: true, reason: `nodes: ${u.nodes} of ${limits.maxNodes} in use, the job needs ${job.nodes}` };
  const owner = u.owners.get(job.owner) ?? { nodes: 0, cores: 0 };
  if (over(owner.nodes, job.nodes, limits.ownerMaxNodes))
    return { ok: false, shared: false, reason: `owner ${job.owner}: ${owner.nodes} of ${limits.ownerMaxNodes} nodes in use` };
  if (over(owner.cores, job.cores, limits.ownerMaxCores))
    return { ok: false, shared: false, reason: `owner ${job.owner}: ${owner.cores} of ${limits.ownerMaxCores} cores in use` };
  const queue = limits.queues.find((q) => q.name === job.queue);
  const q = u.queues.get(job.queue) ?? { nodes: 0, cores: 0 };
  if (over(q.nodes, job.nodes, queue?.maxNodes))
    return { ok: false, shared: false, reason: `queue ${job.queue}: ${q.nodes} of ${queue?.maxNodes} nodes in use` };
  if (over(q.cores, job.cores, queue?.maxCores))
    return { ok: false, shared: false, reason: `queue ${job.queue}: ${q.cores} of ${queue?.maxCores} cores in use` };
  return { ok: true };
}

/** Why a job can never start under these limits (it asks more than a limit allows with nothing else running), or undefined. */
export function neverFits(limits: AdmissionLimits, job: Pick<WaitingJob, 'family' | 'cores' | 'nodes' | 'pools' | 'queue'>): string | undefined {
  const queue = limits.queues.find((q) => q.name === job.queue);
  if (!queue) return `queue "${job.queue}" is not one of this deployment's queues (${limits.queues.map((q) => q.name).join(', ')})`;
  if (limits.accounts) {
    const none = neverFitsAnyAccount(limits.accounts, job);
    if (none) return none;
    return neverFits({ ...limits, accounts: undefined, coreQuota: { families: {} } }, job);
  }
  const familyQuota = limits.coreQuota.families[job.family];
  const checks: [number, number | undefined, string][] = [
    [job.cores, familyQuota, `the job needs ${job.cores} ${job.family} cores; the Batch account's quota for that family is ${familyQuota}`],
    [job.cores, limits.coreQuota.total, `the job needs ${job.cores} cores; the Batch account's dedicated core quota is ${limits.coreQuota.total}`],
    [job.pools, limits.maxPools, `the job creates a pool; this deployment allows ${limits.maxPools}`],
    [job.nodes, limits.maxNodes, `the job needs ${job.nodes} nodes; this deployment runs at most ${limits.maxNodes} at once`],
    [job.nodes, limits.ownerMaxNodes, `the job needs ${job.nodes} nodes; one owner may hold at most ${limits.ownerMaxNodes}`],
    [job.cores, limits.ownerMaxCores, `the job needs ${job.cores} cores; one owner may hold at most ${limits.ownerMaxCores}`],
    [job.nodes, queue.maxNodes, `the job needs ${job.nodes} nodes; queue ${queue.name} holds at most ${queue.maxNodes}`],
    [job.cores, queue.maxCores, `the job needs ${job.cores} cores; queue ${queue.name} holds at most ${queue.maxCores}`],
  ];
  for (const [want, limit, reason] of checks) if (over(0, want, limit)) return reason;
  return undefined;
}

/** The order waiting jobs are considered in (see the rules above). */
export function compareWaiting(limits: Pick<AdmissionLimits, 'queues'>): (a: WaitingJob, b: WaitingJob) => number {
  const qp = (name: string) => limits.queues.find((q) => q.name === name)?.priority ?? Number.NEGATIVE_INFINITY;
  return (a, b) =>
    qp(b.queue) - qp(a.queue) ||
    b.priority - a.priority ||
    (a.order < b.order ? -1 : a.order > b.order ? 1 : 0) ||
    (a.jobId < b.jobId ? -1 : a.jobId > b.jobId ? 1 : 0);
}

export function queueOrder(limits: Pick<AdmissionLimits, 'queues'>, waiting: readonly WaitingJob[]): WaitingJob[] {
  return [...waiting].sort(compareWaiting(limits));
}

/**
 * Decides one admission pass. `maxAdmissions` caps the grants of one pass (a pass commits in one entity-group
 * transaction, which holds at most 100 operations); the next pass continues where this one stopped.
 */
export function decideAdmission(
  limits: AdmissionLimits,
  reservations: readonly Reservation[],
  waiting: readonly WaitingJob[],
  maxAdmissions = Number.POSITIVE_INFINITY,
): AdmissionDecision {
  const usage = usageOf(reservations);
  const held = new Set(reservations.map((r) => r.jobId));
  const decision: AdmissionDecision = { admit: [], refuse: [], jumped: {}, waiting: {}, placed: {} };
  const accounts = limits.accounts;
  // With several accounts the deployment-wide checks run without a core quota; each account's comes in placement.
  const shared: AdmissionLimits = accounts ? { ...limits, coreQuota: { families: {} } } : limits;
  const loads = accounts ? loadsOf(accounts, reservations) : new Map<string, AccountLoad>();
  /** Jobs earlier in the order that a shared limit keeps out, with their jump counts. */
  const blocked: WaitingJob[] = [];
  const jumps = (j: WaitingJob) => decision.jumped[j.jobId] ?? j.jumpedBy;
  for (const job of queueOrder(limits, waiting)) {
    if (held.has(job.jobId)) continue; // already granted: a stale waiting row
    const never = neverFits(limits, job);
    if (never) {
      decision.refuse.push({ jobId: job.jobId, reason: never });
      continue;
    }
    if (decision.admit.length >= maxAdmissions) {
      decision.waiting[job.jobId] = 'more jobs are being admitted; next pass';
      continue;
    }
    const fit = fitsNow(shared, usage, job);
    if (!fit.ok) {
      if (fit.shared) blocked.push(job);
      decision.waiting[job.jobId] = fit.reason;
      continue;
    }
    // A job on an existing pool runs where that pool is: the home account (pool.poolId names a pool there).
    const placement = !accounts
      ? undefined
      : job.pools === 0
        ? { account: accounts[0].name, reason: `placed on ${accounts[0].name}: the job runs on an existing pool of the home account` }
        : placeJob(accounts, loads, placementJob(job));
    if (placement && placement.account === undefined) {
      blocked.push(job);
      decision.waiting[job.jobId] = placement.reason;
      continue;
    }
    const full = blocked.find((b) => jumps(b) >= limits.backfillLimit);
    if (full) {
      decision.waiting[job.jobId] = `behind ${full.jobId}, which waits for capacity and has been passed ${jumps(full)} time(s), the most allowed`;
      continue;
    }
    for (const b of blocked) decision.jumped[b.jobId] = jumps(b) + 1;
    decision.admit.push(job);
    add(usage, job);
    if (placement?.account !== undefined) {
      decision.placed[job.jobId] = { account: placement.account, reason: placement.reason };
      loads.set(placement.account, addLoad(loads.get(placement.account) ?? EMPTY_LOAD, job));
    }
  }
  return decision;
}

/** The placement view of a waiting job. */
export function placementJob(job: Demand): import('../planning/placement').PlacementJob {
  return { family: job.family, cores: job.cores, nodes: job.nodes, ...(job.place ?? {}) };
}

function addLoad(l: AccountLoad, d: Demand): AccountLoad {
  const familyCores = new Map(l.familyCores);
  familyCores.set(d.family, (familyCores.get(d.family) ?? 0) + d.cores);
  return { familyCores, totalCores: l.totalCores + d.cores, lowPriorityCores: l.lowPriorityCores + (d.place?.spotCores ?? 0), jobs: l.jobs + 1 };
}

/** What the reservations hold on each account (a reservation without an account is on the home account, the first). */
export function loadsOf(accounts: readonly PlacementAccount[], reservations: readonly (Demand & { account?: string })[]): Map<string, AccountLoad> {
  const loads = new Map<string, AccountLoad>();
  const home = accounts[0]?.name;
  for (const r of reservations) {
    const name = r.account ?? home;
    if (name === undefined) continue;
    loads.set(name, addLoad(loads.get(name) ?? EMPTY_LOAD, r));
  }
  return loads;
}

/** Position of each waiting job: 1-based, in its queue and overall, in the order the passes consider them. */
export function positions(limits: Pick<AdmissionLimits, 'queues'>, waiting: readonly WaitingJob[]): Map<string, { inQueue: number; overall: number }> {
  const out = new Map<string, { inQueue: number; overall: number }>();
  const perQueue = new Map<string, number>();
  queueOrder(limits, waiting).forEach((j, i) => {
    const n = (perQueue.get(j.queue) ?? 0) + 1;
    perQueue.set(j.queue, n);
    out.set(j.jobId, { inQueue: n, overall: i + 1 });
  });
  return out;
}
