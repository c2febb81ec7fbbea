/**
 * The sweep's rules as pure decisions over what it observed: which leftovers to remove, which runs are lost
 * or stalled. No I/O here; sweep.ts observes and acts. Every action names the job it concerns, so it can be
 * written to that job's timeline, and the rule that chose it, so each run can be summarised per rule.
 */
import type { JobState } from '../state/states';
import { isTerminal } from '../state/states';
import { isOrchestrationFinished } from '../contract/orchestration';
import { CONTAINER_CLEANUP_PURPOSE, planContainerCleanup, type ContainerAction, type ObservedContainerJob } from './leftoverContainers';

export interface SweepSettings {
  /** A running orchestration whose progress is older than this is stalled. */
  stallLimitMs: number;
  /** Extra time before a resource whose job is unknown, or past its wall-clock limit, is removed. */
  graceMs: number;
  /** Staging containers of finished (or unknown) jobs are deleted this long after their last change. */
  stagingRetentionMs: number;
  /** Finished jobs' rows, timelines and orchestration history are purged this long after they ended (undefined: never). */
  jobsRetentionMs?: number;
  /**
   * The first run since this host started: a job whose orchestration start was lost (see `shouldRedrive`) is re-driven
   * at once instead of after the grace. Safe because the start is idempotent (instance id = job id).
   */
  redriveAtOnce?: boolean;
}

export interface ObservedJobRow {
  id: string;
  state: JobState;
  createdAt: string;
  updatedAt: string;
  /** The job's whole-pipeline limit in ms (maxWallClock plus provisioning/staging allowances), if any. */
  wallClockLimitMs?: number;
  /** The job keeps its pool after it ends (spec cleanup.deletePool never, or onSuccess and the job did not succeed). */
  keepsPool: boolean;
  /** The job keeps its staged data for this long after it ends (spec cleanup.keepStagedData). */
  keepStagedDataMs?: number;
  /** Someone asked to cancel the job (DELETE /api/jobs/{id}). */
  cancelRequestedAt?: string;
  /** An array's own row: it has no orchestration (its jobs have), so it is never a lost or stalled run. */
  isArray?: boolean;
  /** The row holds a valid spec and this sweep can start orchestrations: a lost start can be re-driven from it. */
  redrivable?: boolean;
}

export interface ObservedOrchestration {
  /** A Durable runtime status (shared/core/contract/orchestration.ts); any other text is treated as unknown. */
  runtimeStatus: string;
  /** Last time the instance changed (the Durable lastUpdatedTime). */
  lastUpdatedTime: string;
  /** The pipeline's own progress stamp (custom status updatedAt), if it reported any. */
  progressAt?: string;
  /** For a Terminated instance: the reason given to terminate (its output). */
  terminationReason?: string;
}

export interface ObservedPool {
  poolId: string;
  jobId: string;
  /** The Batch account it is in, when not the home account (BATCH_ACCOUNTS): the action goes there. */
  account?: string;
  /** The submitter recorded on the pool (pools have owners); absent on pools from before owners. */
  owner?: string;
  state: string;
  creationTime?: string;
}

export interface ObservedBatchJob {
  batchJobId: string;
  jobId: string;
  /** The Batch account it is in, when not the home account. */
  account?: string;
  state: string;
  creationTime?: string;
  /** Housekeeping jobs (e.g. container cleanup) carry their purpose; a job's own Batch job has none. */
  purpose?: string;
}

export interface ObservedStagingContainer {
  account: string;
  container: string;
  lastModified: string;
  /** The job it belongs to, when the name maps back to a known job. */
  jobId?: string;
}

export interface SweepObservation {
  now: string;
  jobs: ReadonlyMap<string, ObservedJobRow>;
  /** Orchestration per job id; absent = no instance (never started, or purged / lost). */
  orchestrations: ReadonlyMap<string, ObservedOrchestration>;
  pools: readonly ObservedPool[];
  batchJobs: readonly ObservedBatchJob[];
  staging: readonly ObservedStagingContainer[];
  /** Finished jobs that ran containers on a reused pool and are not yet known to have left none behind. */
  containerJobs?: readonly ObservedContainerJob[];
  /** Jobs something could not be observed about this run: no action touches them or their resources. */
  unobserved?: ReadonlySet<string>;
}

/** Something one run could not do for one job (or at all): reported in the run's summary, retried next run. */
export interface SweepSkip {
  step: string;
  jobId?: string;
  error: string;
}

export type SweepRule =
  'lostStart' | 'stalledRun' | 'lostRun' | 'cancelledRun' | 'leakedPool' | 'leakedBatchJob' | 'leftoverContainers' | 'expiredStaging' | 'retention';

export type SweepAction =
  | { kind: 'terminateOrchestration'; rule: SweepRule; jobId: string; reason: string }
  | { kind: 'failJob'; rule: SweepRule; jobId: string; reason: string }
  | { kind: 'redriveJob'; rule: SweepRule; jobId: string; reason: string }
  | { kind: 'cancelJob'; rule: SweepRule; jobId: string; reason: string }
  | { kind: 'purgeJob'; rule: SweepRule; jobId: string; reason: string }
  | { kind: 'terminateBatchJob'; rule: SweepRule; jobId: string; batchJobId: string; reason: string; account?: string }
  | { kind: 'deletePool'; rule: SweepRule; jobId: string; poolId: string; reason: string; owner?: string; account?: string }
  | { kind: 'deleteStaging'; rule: SweepRule; jobId?: string; account: string; container: string; reason: string }
  | { kind: 'deleteBatchJob'; rule: SweepRule; jobId: string; batchJobId: string; reason: string; account?: string }
  | (ContainerAction & { rule: SweepRule });

const ACTIVE_BATCH_JOB = new Set(['active', 'disabling', 'disabled', 'enabling']);
const GONE_POOL = new Set(['deleting']);

const ms = (iso: string | undefined) => (iso ? Date.parse(iso) : NaN);
const ageMs = (nowMs: number, iso: string | undefined) => {
  const t = ms(iso);
  return Number.isNaN(t) ? Infinity : nowMs - t;
};

/** A running orchestration without progress for longer than the limit (the later of its two stamps counts). */
export function isStalled(orch: ObservedOrchestration, nowMs: number, stallLimitMs: number): boolean {
  if (orch.runtimeStatus !== 'Running' && orch.runtimeStatus !== 'Pending') return false;
  const last = Math.max(ms(orch.lastUpdatedTime) || 0, ms(orch.progressAt) || 0);
  return nowMs - last > stallLimitMs;
}

/**
 * A job whose row is not finished but whose run is gone: no instance (purged, lost) or an instance that ended
 * without finishing the row (terminated by hand, crashed). Young jobs get the grace period: intake writes the
 * row a moment before it starts the orchestration.
 */
export function isLostRun(job: ObservedJobRow, orch: ObservedOrchestration | undefined, nowMs: number, graceMs: number): boolean {
  if (isTerminal(job.state)) return false;
  if (orch && !isOrchestrationFinished(orch.runtimeStatus)) return false;
  if (isCancelledRun(job, orch)) return true;
  const since = orch ? Math.max(ms(orch.lastUpdatedTime) || 0, ms(job.updatedAt) || 0) : ms(job.updatedAt) || 0;
  return nowMs - since > graceMs;
}

/**
 * A submission whose orchestration start was lost (the row is written first, then the orchestration is started: a
 * crash between the two, or a start the storage lost): the row is still `Submitted`, no cancel was asked for and there
 * is no instance at all. Such a job is started again from its recorded spec (intake's own path: idempotent, instance
 * id = job id). An array's row in `Submitted` is the same case for its jobs (the intake stopped half-way).
 * Only `Submitted` rows: from any later state the orchestration had run and moved the row, so without its history
 * the run cannot be resumed and the lost-run rule fails it. After the grace, or at once on the first run after the
 * host started (`redriveAtOnce`): an intake of the previous host can no longer be between the insert and the start,
 * and one of this host racing the re-drive makes the start answer "exists".
 */
export function shouldRedrive(
  job: ObservedJobRow,
  orch: ObservedOrchestration | undefined,
  nowMs: number,
  s: Pick<SweepSettings, 'graceMs' | 'redriveAtOnce'>,
): boolean {
  if (job.state !== 'Submitted' || orch || job.cancelRequestedAt !== undefined || !job.redrivable) return false;
  return s.redriveAtOnce === true || nowMs - (ms(job.updatedAt) || 0) > s.graceMs;
}

/**
 * A run that ended because someone stopped it: its orchestration was terminated (through the Durable management
 * API), or a cancel was asked for and the orchestration is gone. Such a job is cancelled at once, without the
 * grace a lost run gets: nothing will come back to finish it, and its nodes are billing.
 */
export function isCancelledRun(job: ObservedJobRow, orch: ObservedOrchestration | undefined): boolean {
  if (isTerminal(job.state)) return false;
  if (orch?.runtimeStatus === 'Terminated') return true;
  return job.cancelRequestedAt !== undefined && (!orch || isOrchestrationFinished(orch.runtimeStatus));
}

/** Why an owned pool should go now, or undefined to keep it. */
export function poolVerdict(
  pool: ObservedPool,
  job: ObservedJobRow | undefined,
  failing: ReadonlySet<string>,
  nowMs: number,
  s: SweepSettings,
): string | undefined {
  if (GONE_POOL.has(pool.state)) return undefined;
  if (failing.has(pool.jobId)) return 'its run is lost or stalled';
  if (!job) return ageMs(nowMs, pool.creationTime) > s.graceMs ? `job ${pool.jobId} is unknown` : undefined;
  if (isTerminal(job.state)) return job.keepsPool ? undefined : `job ${job.id} is ${job.state}`;
  // Measured from the pool's creation, not the job's: time the job waited in the queue does not count (its budget
  // starts at admission, and the pool is created right after).
  if (job.wallClockLimitMs !== undefined && ageMs(nowMs, pool.creationTime ?? job.createdAt) > job.wallClockLimitMs + s.graceMs) {
    return `job ${job.id} is past its wall-clock limit plus grace`;
  }
  return undefined;
}

/** Why an owned Batch job still active should be terminated now, or undefined. */
export function batchJobVerdict(
  bj: ObservedBatchJob,
  job: ObservedJobRow | undefined,
  orch: ObservedOrchestration | undefined,
  failing: ReadonlySet<string>,
  nowMs: number,
  s: SweepSettings,
): string | undefined {
  if (!ACTIVE_BATCH_JOB.has(bj.state)) return undefined;
  // Housekeeping jobs outlive the job's run on purpose; the rule that made them removes them.
  if (bj.purpose !== undefined) return undefined;
  if (failing.has(bj.jobId)) return 'its run is lost or stalled';
  if (orch && isOrchestrationFinished(orch.runtimeStatus)) return `orchestration is ${orch.runtimeStatus}`;
  if (!orch && ageMs(nowMs, bj.creationTime) > s.graceMs) return job ? 'orchestration is missing' : `job ${bj.jobId} is unknown`;
  return undefined;
}

/** Why a staging container should be deleted now, or undefined. */
export function stagingVerdict(
  c: ObservedStagingContainer,
  job: ObservedJobRow | undefined,
  failing: ReadonlySet<string>,
  nowMs: number,
  s: SweepSettings,
): string | undefined {
  if (c.jobId && failing.has(c.jobId)) return 'its run is lost or stalled';
  const age = ageMs(nowMs, c.lastModified);
  if (!job) return age > s.stagingRetentionMs ? 'no known job and past the staging retention' : undefined;
  if (!isTerminal(job.state)) return undefined;
  const keep = Math.max(s.stagingRetentionMs, job.keepStagedDataMs ?? 0);
  return ageMs(nowMs, job.updatedAt) > keep ? `job ${job.id} is ${job.state} and its data is past retention` : undefined;
}

/**
 * The whole plan of one sweep. Order matters for the actor: orchestrations are terminated before their
 * resources are removed (so a stalled run cannot re-create them), and the job row is failed last (after its
 * resources went, so the row's reason is true when it is read).
 *
 * Each rule decides each row on its own: a row a rule cannot decide (`skipped` receives why) gets no action from
 * that rule, and every other row and rule goes on. Jobs in `o.unobserved` get no action at all.
 */
export function planSweep(o: SweepObservation, s: SweepSettings, skipped: SweepSkip[] = []): SweepAction[] {
  const p: SweepPass = {
    o,
    s,
    nowMs: Date.parse(o.now),
    actions: [],
    failing: new Set<string>(),
    each: (items, step, jobIdOf, decide) => {
      for (const item of items) {
        try {
          decide(item);
        } catch (err) {
          skipped.push({ step: `rule ${step}`, jobId: jobIdOf(item), error: err instanceof Error ? err.message : String(err) });
        }
      }
    },
  };
  planRuns(p);
  planResources(p);
  planContainerCleanups(p);
  planFailingJobs(p);
  planRetention(p);
  const unobserved = o.unobserved;
  return unobserved?.size ? p.actions.filter((a) => a.jobId === undefined || !unobserved.has(a.jobId)) : p.actions;
}

/** One sweep's plan as the rules build it: the actions so far and the jobs found failing. */
interface SweepPass {
  o: SweepObservation;
  s: SweepSettings;
  nowMs: number;
  actions: SweepAction[];
  /** Jobs whose run is found stalled, lost or cancelled: their resources go and their rows are ended. */
  failing: Set<string>;
  /** Runs `decide` on each item; an item it cannot decide is skipped (with why), the others go on. */
  each: <T>(items: Iterable<T>, step: string, jobIdOf: (item: T) => string | undefined, decide: (item: T) => void) => void;
}

/** lostStart, stalledRun, lostRun: unfinished jobs whose start was lost (re-driven) or whose run stalled or is lost. */
function planRuns(p: SweepPass): void {
  const { o, s, nowMs, actions, failing, each } = p;
  each(
    o.jobs.values(),
    'lostStart/stalledRun/lostRun',
    (job) => job.id,
    (job) => {
      const orch = o.orchestrations.get(job.id);
      if (isTerminal(job.state)) return;
      if (shouldRedrive(job, orch, nowMs, s)) {
        actions.push({
          kind: 'redriveJob',
          rule: 'lostStart',
          jobId: job.id,
          reason: `the orchestration start was lost: the row is Submitted and no instance exists${s.redriveAtOnce ? ' (first sweep since the host started)' : ''}`,
        });
        return;
      }
      if (job.isArray) return;
      if (orch && isStalled(orch, nowMs, s.stallLimitMs)) {
        failing.add(job.id);
        const reason = `stalled: no progress for ${Math.round((nowMs - Math.max(ms(orch.lastUpdatedTime) || 0, ms(orch.progressAt) || 0)) / 1000)} s (limit ${Math.round(s.stallLimitMs / 1000)} s)`;
        actions.push({ kind: 'terminateOrchestration', rule: 'stalledRun', jobId: job.id, reason });
      } else if (isLostRun(job, orch, nowMs, s.graceMs)) {
        failing.add(job.id);
      }
    },
  );
}

/** Batch jobs, pools and staging containers: leaked ones, and those of failing jobs. */
function planResources(p: SweepPass): void {
  const { o, s, nowMs, actions, failing, each } = p;
  each(
    o.batchJobs,
    'leakedBatchJob',
    (bj) => bj.jobId,
    (bj) => {
      const reason = batchJobVerdict(bj, o.jobs.get(bj.jobId), o.orchestrations.get(bj.jobId), failing, nowMs, s);
      if (reason)
        actions.push({
          kind: 'terminateBatchJob',
          rule: failing.has(bj.jobId) ? ruleOf(o, bj.jobId, nowMs, s) : 'leakedBatchJob',
          jobId: bj.jobId,
          batchJobId: bj.batchJobId,
          reason,
          ...inAccount(bj),
        });
    },
  );
  each(
    o.pools,
    'leakedPool',
    (pool) => pool.jobId,
    (pool) => {
      const reason = poolVerdict(pool, o.jobs.get(pool.jobId), failing, nowMs, s);
      if (reason)
        actions.push({
          kind: 'deletePool',
          rule: failing.has(pool.jobId) ? ruleOf(o, pool.jobId, nowMs, s) : 'leakedPool',
          jobId: pool.jobId,
          poolId: pool.poolId,
          reason,
          ...(pool.owner !== undefined ? { owner: pool.owner } : {}),
          ...inAccount(pool),
        });
    },
  );
  each(
    o.staging,
    'expiredStaging',
    (c) => c.jobId,
    (c) => {
      const reason = stagingVerdict(c, c.jobId ? o.jobs.get(c.jobId) : undefined, failing, nowMs, s);
      if (reason)
        actions.push({
          kind: 'deleteStaging',
          rule: c.jobId && failing.has(c.jobId) ? ruleOf(o, c.jobId, nowMs, s) : 'expiredStaging',
          jobId: c.jobId,
          account: c.account,
          container: c.container,
          reason,
        });
    },
  );
}

/** leftoverContainers: the container cleanups on reused pools, and housekeeping Batch jobs nobody waits on. */
function planContainerCleanups(p: SweepPass): void {
  const { o, nowMs, actions, each } = p;
  const containerJobs = o.containerJobs ?? [];
  each(
    containerJobs,
    'leftoverContainers',
    (c) => c.jobId,
    (c) => {
      const action = planContainerCleanup(c, nowMs);
      if (action) actions.push({ ...action, rule: 'leftoverContainers' });
    },
  );
  const watched = new Set(containerJobs.map((c) => c.jobId));
  each(
    o.batchJobs,
    'leftoverContainers',
    (bj) => bj.jobId,
    (bj) => {
      // A housekeeping job already being deleted stays listed (state deleting) until Batch has removed it.
      if (bj.purpose === CONTAINER_CLEANUP_PURPOSE && !watched.has(bj.jobId) && bj.state !== 'deleting') {
        actions.push({
          kind: 'deleteBatchJob',
          rule: 'leftoverContainers',
          jobId: bj.jobId,
          batchJobId: bj.batchJobId,
          reason: `no finished job of ours still waits on this container cleanup`,
          ...inAccount(bj),
        });
      }
    },
  );
}

/** The failing jobs' rows: cancelled or failed, with why. */
function planFailingJobs(p: SweepPass): void {
  const { o, s, nowMs, actions, failing, each } = p;
  each(
    failing,
    'stalledRun/lostRun/cancelledRun',
    (id) => id,
    (id) => {
      const rule = ruleOf(o, id, nowMs, s);
      const orch = o.orchestrations.get(id);
      if (rule === 'cancelledRun') {
        const reason =
          orch?.runtimeStatus === 'Terminated'
            ? `cancelled: the orchestration was terminated${orch.terminationReason ? ` (${orch.terminationReason})` : ''}`
            : 'cancelled: the orchestration was gone when the cancel was asked for';
        actions.push({ kind: 'cancelJob', rule, jobId: id, reason });
        return;
      }
      const reason =
        rule === 'stalledRun'
          ? (actions.find((a) => a.kind === 'terminateOrchestration' && a.jobId === id)?.reason ?? 'stalled')
          : orch
            ? `lost: orchestration ended ${orch.runtimeStatus} without finishing the job`
            : lostReason(o.jobs.get(id));
      actions.push({ kind: 'failJob', rule, jobId: id, reason });
    },
  );
}

/** Retention: only jobs that own nothing any more (their leftovers are removed first, by the rules above, in an earlier run). */
function planRetention(p: SweepPass): void {
  const { o, s, nowMs, actions, each } = p;
  const containerJobs = o.containerJobs ?? [];
  const retention = s.jobsRetentionMs;
  if (retention !== undefined) {
    const owns = new Set<string>([
      ...o.pools.map((p) => p.jobId),
      ...o.batchJobs.filter((b) => ACTIVE_BATCH_JOB.has(b.state)).map((b) => b.jobId),
      ...o.staging.flatMap((c) => (c.jobId ? [c.jobId] : [])),
      ...containerJobs.map((c) => c.jobId),
    ]);
    each(
      o.jobs.values(),
      'retention',
      (job) => job.id,
      (job) => {
        if (!isTerminal(job.state) || owns.has(job.id) || ageMs(nowMs, job.updatedAt) <= retention) return;
        const orch = o.orchestrations.get(job.id);
        if (orch && !isOrchestrationFinished(orch.runtimeStatus)) return;
        actions.push({
          kind: 'purgeJob',
          rule: 'retention',
          jobId: job.id,
          reason: `job ${job.id} ended more than ${Math.round((retention / 86_400_000) * 10) / 10} day(s) ago`,
        });
      },
    );
  }
}

/** The account a resource is in, carried onto its action (absent: the home account). */
const inAccount = (r: { account?: string }) => (r.account !== undefined ? { account: r.account } : {});

/** Why a job without an instance is failed rather than re-driven. */
function lostReason(job: ObservedJobRow | undefined): string {
  if (job?.state === 'Submitted') return 'lost: orchestration never started, and it cannot be started again from the row (no valid spec recorded)';
  return `lost: orchestration missing (purged or never started)${job ? `; its run had reached ${job.state} and cannot be resumed without its history` : ''}`;
}

function ruleOf(o: SweepObservation, jobId: string, nowMs: number, s: SweepSettings): SweepRule {
  const orch = o.orchestrations.get(jobId);
  if (orch && isStalled(orch, nowMs, s.stallLimitMs)) return 'stalledRun';
  const job = o.jobs.get(jobId);
  return job && isCancelledRun(job, orch) ? 'cancelledRun' : 'lostRun';
}

/** Counts per rule and action kind, for the one structured summary line each run logs. */
export function summarise(actions: readonly SweepAction[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const a of actions) counts[`${a.rule}.${a.kind}`] = (counts[`${a.rule}.${a.kind}`] ?? 0) + 1;
  return counts;
}
