/**
 * Admission as the activities, the sweep and the API use it: ask (enqueue + pass), release (+ pass), reconcile, and
 * read-only views (a job's place, the queues). Each call reads the partition, plans with the pure functions of
 * ledger.ts / admission.ts and commits through AdmissionStore (ETag-guarded, retried on conflict), so any number of
 * them may run at once on any number of hosts.
 */
import type { JobRecord } from '../../core/state/record';
import type { QueueProgress } from '../../core/contract/progress';
import type { JobQueueView, QueuesResponse } from '../../core/state/view';
import { isTerminal } from '../../core/state/states';
import type { JobStore } from '../state/jobStore';
import { positions, usageOf, type AdmissionLimits, type Demand, type Reservation } from '../../core/scheduling/admission';
import { AdmissionConflictError, type AdmissionStore, type ReadSnapshot, type StoredWaitingJob } from './admissionStore';
import { demandOf, placementNeeds, priorityOf, queueOf, submissionOrder } from '../../core/scheduling/demand';
import { needsAck, planPass, planReconcile, statusOf, type AdmissionSnapshot, type AdmissionStatus, type PassOutcome } from '../../core/scheduling/ledger';

export interface AdmissionDeps {
  store: AdmissionStore;
  limits: AdmissionLimits;
  now?: () => Date;
  /** Grants and refusals not seen by their run this long are sent again by later passes (default 30 s). */
  resendAfterMs?: number;
}

/** A pass as committed: what it decided, and the partition as it is after the commit. */
export interface CommittedPass extends PassOutcome {
  after: AdmissionSnapshot;
}

/** Who must be told (admission event): granted, refused, and unseen older grants/refusals. */
export function toNotify(pass: PassOutcome, except?: string): string[] {
  return [...new Set([...pass.admitted.map((r) => r.jobId), ...pass.refused.map((r) => r.jobId), ...pass.resend])].filter((id) => id !== except);
}

function after(
  s: ReadSnapshot,
  change: { ledger?: AdmissionSnapshot['ledger']; deleteWaiting: string[]; deleteAcks?: string[]; deleteReleases?: string[] },
): AdmissionSnapshot {
  const gone = new Set(change.deleteWaiting);
  const unacked = new Set(change.deleteAcks ?? []);
  const folded = new Set(change.deleteReleases ?? []);
  return {
    ledger: change.ledger ?? s.ledger,
    waiting: s.waiting.filter((w) => !gone.has(w.jobId)),
    acks: new Set([...s.acks].filter((id) => !unacked.has(id))),
    releases: new Set([...s.releases].filter((id) => !folded.has(id))),
  };
}

/**
 * One pass, committed. Its grants are dated when the pass read the partition (not when it decided): a grant considered
 * exactly the jobs that were waiting by then, which is what first come first served is judged on.
 */
export async function admissionPass(deps: AdmissionDeps, ackFor?: string): Promise<CommittedPass> {
  const { result, snapshot } = await deps.store.mutate((s) => planPass(s, deps.limits, deps.now?.() ?? s.readAt, deps.resendAfterMs ?? 30_000, ackFor));
  return { ...result, after: after(snapshot, result) };
}

/**
 * A pass that may lose to other writers every time (AdmissionConflictError): then it decided nothing, and the partition
 * as read now stands. Whoever asked loses nothing: the other writers' passes did the work, and the next pass runs soon.
 */
async function passOrNothing(deps: AdmissionDeps, ackFor?: string): Promise<CommittedPass> {
  try {
    return await admissionPass(deps, ackFor);
  } catch (err) {
    if (!(err instanceof AdmissionConflictError)) throw err;
    const s = await deps.store.read();
    return { deleteWaiting: [], admitted: [], refused: [], resend: [], waitingReasons: {}, after: after(s, { deleteWaiting: [] }) };
  }
}

/** The claim a job makes in the queue, from its row: its demand, queue, priority and submission order. */
export function claimOf(job: JobRecord): Omit<StoredWaitingJob, 'jumpedBy' | 'enqueuedAt'> {
  if (!job.spec) throw new Error(`job ${job.id} has no valid spec: it cannot be admitted`);
  return {
    jobId: job.id,
    owner: job.owner,
    queue: queueOf(job.spec),
    priority: priorityOf(job.spec),
    order: submissionOrder(job.array?.submittedAt ?? job.createdAt, job.array?.index),
    ...withPlacement(demandOf(job.id, job.spec), job.spec),
  };
}

/** A job that creates its pool carries what placement over several accounts weighs (a reused pool stays home). */
function withPlacement(d: Demand, spec: NonNullable<JobRecord['spec']>): Demand {
  return d.pools > 0 ? { ...d, place: placementNeeds(spec) } : d;
}

export interface AdmissionAnswer {
  status: AdmissionStatus;
  pass: CommittedPass;
}

/**
 * A job's run asks to be admitted: its waiting row is written unless the job holds a grant or a refusal already, a
 * pass runs (marking the job's own grant or refusal seen), and the answer says where the job stands. A job whose row
 * has left the queue (it runs or ended) is never enqueued again: that is a late repeat of an old request (Durable runs
 * activities at least once, and a host that died may deliver one after the run went on), which must not take capacity.
 */
export async function requestAdmission(deps: AdmissionDeps, job: JobRecord): Promise<AdmissionAnswer> {
  const now = deps.now ?? (() => new Date());
  const before = await deps.store.read();
  const inQueue = job.state === 'Submitted' || job.state === 'Queued';
  if (inQueue && statusOf(before, job.id).state === 'absent') await deps.store.enqueue({ ...claimOf(job), enqueuedAt: now().toISOString() });
  const pass = await passOrNothing(deps, job.id);
  const st = statusOf(pass.after, job.id);
  // The run learns its grant or refusal from this answer: later passes need not send it again.
  if (needsAck(pass.after, job.id)) await deps.store.ack(job.id);
  if (st.state !== 'waiting') return { status: st, pass };
  const place = positions(deps.limits, pass.after.waiting).get(job.id);
  return { status: { state: 'waiting', reason: pass.waitingReasons[job.id] ?? 'waiting for the next pass', ...(place ? { position: place } : {}) }, pass };
}

/**
 * A job's run is over (or it was cancelled while waiting): its release row is written and a pass folds it in (what
 * the job held goes) and gives the capacity to others.
 */
export async function releaseAdmission(deps: AdmissionDeps, jobId: string): Promise<{ pass: CommittedPass }> {
  await deps.store.release(jobId);
  return { pass: await passOrNothing(deps) };
}

/**
 * Drops reservations, refusals and waiting rows of jobs that ended or are gone (a crashed or terminated run that never
 * released), then runs a pass. Reads the job row of every job the partition names.
 */
export async function reconcileAdmission(deps: AdmissionDeps, jobs: Pick<JobStore, 'get'>): Promise<{ dropped: string[]; pass: CommittedPass }> {
  const snap = await deps.store.read();
  const ids = [...new Set([...Object.keys(snap.ledger.reservations), ...Object.keys(snap.ledger.refused), ...snap.waiting.map((w) => w.jobId)])];
  const ended = new Set<string>();
  for (let i = 0; i < ids.length; i += 16) {
    const rows = await Promise.all(ids.slice(i, i + 16).map((id) => jobs.get(id)));
    rows.forEach((row, k) => {
      if (!row || isTerminal(row.state)) ended.add(ids[i + k]);
    });
  }
  const { result } = await deps.store.mutate((s) => planReconcile(s, ended));
  return { dropped: result.dropped, pass: await admissionPass(deps) };
}

/** Where a job stands, for GET /api/jobs/{id} (read-only: no pass). */
export function jobAdmissionView(limits: AdmissionLimits, snap: AdmissionSnapshot, job: JobRecord): JobQueueView {
  const name = job.spec ? queueOf(job.spec) : 'default';
  const st = statusOf(snap, job.id);
  if (st.state === 'granted') return { name, state: 'granted', grant: st.grant };
  if (st.state === 'refused') return { name, state: 'refused', reason: st.reason };
  if (st.state === 'absent') return { name, state: 'notQueued' };
  const waiting = snap.waiting.map((w) => ({ ...w, jumpedBy: snap.ledger.jumps[w.jobId] ?? 0 }));
  const place = positions(limits, waiting).get(job.id);
  return {
    name,
    state: 'waiting',
    ...(place ? { position: place.inQueue, positionOverall: place.overall } : {}),
    waitingInQueue: waiting.filter((w) => w.queue === name).length,
  };
}

export interface QueueView {
  name: string;
  priority: number;
  maxNodes?: number;
  maxCores?: number;
  /** Jobs waiting for admission in this queue. */
  waiting: number;
  /** Jobs holding a reservation (admitted, running or cleaning up). */
  running: number;
  reservedNodes: number;
  reservedCores: Record<string, number>;
}

/** One Batch account of several (BATCH_ACCOUNTS): its core quota as placement weighs it, and what our jobs hold on it. */
export interface AccountQueueView {
  name: string;
  region?: string;
  coreQuota: AdmissionLimits['coreQuota'];
  lowPriorityCores?: number;
  /** Jobs holding a reservation on this account. */
  running: number;
  reservedNodes: number;
  reservedCores: Record<string, number>;
}

export interface QueuesView {
  queues: QueueView[];
  totals: { waiting: number; running: number; pools: number; nodes: number; cores: number; coresByFamily: Record<string, number> };
  /** Present with several Batch accounts: each account's quota and reservations (a job without an account is the home one's). */
  accounts?: AccountQueueView[];
  limits: {
    coreQuota: AdmissionLimits['coreQuota'];
    maxPools?: number;
    maxNodes?: number;
    ownerMaxNodes?: number;
    ownerMaxCores?: number;
    backfillLimit: number;
  };
}

function coresByFamily(rs: readonly Reservation[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of rs) if (r.cores > 0) out[r.family] = (out[r.family] ?? 0) + r.cores;
  return out;
}

export function queuesView(limits: AdmissionLimits, snap: AdmissionSnapshot): QueuesView {
  const reservations = Object.values(snap.ledger.reservations);
  const usage = usageOf(reservations);
  const names = [...new Set([...limits.queues.map((q) => q.name), ...reservations.map((r) => r.queue), ...snap.waiting.map((w) => w.queue)])];
  const queues = names.map((name): QueueView => {
    const conf = limits.queues.find((q) => q.name === name);
    const held = reservations.filter((r) => r.queue === name);
    return {
      name,
      priority: conf?.priority ?? 0,
      ...(conf?.maxNodes !== undefined ? { maxNodes: conf.maxNodes } : {}),
      ...(conf?.maxCores !== undefined ? { maxCores: conf.maxCores } : {}),
      waiting: snap.waiting.filter((w) => w.queue === name).length,
      running: held.length,
      reservedNodes: held.reduce((n, r) => n + r.nodes, 0),
      reservedCores: coresByFamily(held),
    };
  });
  const { queues: _q, accounts: placement, ...rest } = limits;
  const home = placement?.[0]?.name;
  const accounts = placement?.map((a): AccountQueueView => {
    const held = reservations.filter((r) => (r.account ?? home) === a.name);
    return {
      name: a.name,
      ...(a.region ? { region: a.region } : {}),
      coreQuota: a.coreQuota,
      ...(a.lowPriorityCores !== undefined ? { lowPriorityCores: a.lowPriorityCores } : {}),
      running: held.length,
      reservedNodes: held.reduce((n, r) => n + r.nodes, 0),
      reservedCores: coresByFamily(held),
    };
  });
  return {
    queues,
    totals: {
      waiting: snap.waiting.length,
      running: reservations.length,
      pools: usage.pools,
      nodes: usage.nodes,
      cores: usage.totalCores,
      coresByFamily: coresByFamily(reservations),
    },
    ...(accounts ? { accounts } : {}),
    limits: rest,
  };
}

/**
 * A queued job's place for GET /api/jobs/{id}: read fresh from the Admission partition, with why it waits and which
 * dependencies are pending as its run last reported them (its custom status).
 */
export async function readJobQueue(deps: AdmissionDeps, job: JobRecord, live?: QueueProgress): Promise<JobQueueView> {
  const view = jobAdmissionView(deps.limits, await deps.store.read(), job);
  return {
    ...view,
    ...(view.state === 'waiting' && live?.reason ? { reason: live.reason } : {}),
    ...(view.state === 'notQueued' && live?.pending ? { pending: live.pending } : {}),
  };
}

/** The queues for GET /api/queues. */
export async function readQueues(deps: AdmissionDeps): Promise<QueuesResponse> {
  return queuesView(deps.limits, await deps.store.read());
}
