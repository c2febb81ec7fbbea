/**
 * One sweep run: take the singleton lease, observe (owned pools and Batch jobs, job rows, orchestration
 * status, staging containers), plan with the pure rules (./sweepRules), act idempotently, write every action
 * to the timeline of the job it concerns, and return one summary (counts per rule) for the structured log line.
 */
import type { BlobServiceClient } from '@azure/storage-blob';
import {
  BatchError,
  addNodeTask,
  createJob,
  deleteJob,
  deletePool,
  getNodeLifecycleStatus,
  listNodes,
  listOwnedJobs,
  listOwnedPools,
  listTasks,
  terminateJob,
  type BatchContext,
  type OwnedJob,
} from '../batch';
import { buildContainerCleanupCommand } from '../../core/mpi/commands';
import { containerNameFor } from '../../core/planning/mpiTaskRequest';
import { CONTAINER_CLEANUP_PURPOSE, type ContainerAction, type ObservedContainerJob } from '../../core/ops/leftoverContainers';
import { IllegalTransitionError, JobNotFoundError, isTerminal, type JobRecord, type JobStore } from '../state';
import { planJob, stagingContainerFor } from '../../core/planning/jobPlan';
import { parseIsoDuration } from '../../core/spec/duration';
import type { BlobAccount } from '../storage/clients';
import { tryAcquireSweepLease } from './lease';
import {
  planSweep,
  summarise,
  type ObservedBatchJob,
  type ObservedJobRow,
  type ObservedOrchestration,
  type ObservedPool,
  type ObservedStagingContainer,
  type SweepAction,
  type SweepSettings,
  type SweepSkip,
} from '../../core/ops/sweepRules';

/** What the sweep needs from Durable (the function adapts the Durable client to it). */
export interface OrchestrationControl {
  status(instanceId: string): Promise<ObservedOrchestration | undefined>;
  terminate(instanceId: string, reason: string): Promise<void>;
  /** Deletes the instance's history (already gone is fine). */
  purge(instanceId: string): Promise<void>;
}

export interface SweepDeps {
  /** The home Batch account (BATCH_ACCOUNT_*): reused pools, container cleanups, and a failed listing skips the run. */
  batch: BatchContext;
  /**
   * The deployment's other Batch accounts (BATCH_ACCOUNTS), where admission places jobs: their owned pools and Batch
   * jobs are swept by the same rules. One that cannot be listed is reported (`accounts`) and its placed jobs are left
   * alone this run; it never stops the sweep of the others.
   */
  otherAccounts?: readonly { name: string; batch: BatchContext }[];
  /** The home account's name, for the report. */
  homeAccount?: string;
  store: JobStore;
  orchestrations: OrchestrationControl;
  stagingAccounts: readonly BlobAccount[];
  /** Host storage, where the lease blob lives. */
  hostBlobs: BlobServiceClient;
  settings: SweepSettings;
  /**
   * Starts a job's run again from its row (shared/core/intake/redrive.ts) for the lostStart rule. Absent: this sweep cannot
   * start orchestrations, and a row whose start was lost is failed by the lost-run rule instead.
   */
  redrive?: (jobId: string) => Promise<string>;
  /** The event relay's records of a job (cursors, delivery attempts), purged with it; absent when events are off. */
  eventDeliveries?: { purge(jobId: string): Promise<number> };
  now?: () => Date;
}

export interface SweepReport {
  runId: string;
  /** false when another run held the lease. */
  ran: boolean;
  startedAt: string;
  durationMs: number;
  observed: { jobs: number; pools: number; batchJobs: number; stagingContainers: number; containerJobs: number };
  /** Each Batch account swept (the home account first): listed, or why not. */
  accounts: { name: string; listed: boolean; error?: string }[];
  counts: Record<string, number>;
  actions: (SweepAction & { ok: boolean; error?: string })[];
  /**
   * What could not be observed, decided or recorded this run, each on its own: the rest of the sweep went on,
   * and whatever was skipped is looked at again next run. A job skipped while observing gets no action at all.
   */
  skipped: SweepSkip[];
}

/** Guard against an unbounded scan: the sweep looks at this many job rows at most per run. */
const MAX_JOB_ROWS = 20_000;

export async function runSweep(deps: SweepDeps): Promise<SweepReport> {
  const now = deps.now ?? (() => new Date());
  const started = now();
  const runId = `${started
    .toISOString()
    .replace(/[^0-9]/g, '')
    .slice(0, 14)}-${Math.random().toString(36).slice(2, 8)}`;
  const report: SweepReport = {
    runId,
    ran: false,
    startedAt: started.toISOString(),
    durationMs: 0,
    observed: { jobs: 0, pools: 0, batchJobs: 0, stagingContainers: 0, containerJobs: 0 },
    accounts: [],
    counts: {},
    actions: [],
    skipped: [],
  };
  const skip = (step: string, err: unknown, jobId?: string) => report.skipped.push({ step, jobId, error: errorText(err) });
  const lease = await tryAcquireSweepLease(deps.hostBlobs);
  if (!lease) {
    report.durationMs = now().getTime() - started.getTime();
    return report;
  }
  try {
    report.ran = true;
    // Without the whole picture (every job row, every owned pool and Batch job) no rule can tell a leak from a
    // live job's resource: a failed listing skips the run.
    let listed: [Awaited<ReturnType<typeof listAllJobs>>, Awaited<ReturnType<typeof listOwnedPools>>, OwnedJob[]];
    try {
      listed = await Promise.all([listAllJobs(deps.store), listOwnedPools(deps.batch), listOwnedJobs(deps.batch)]);
    } catch (err) {
      skip('list jobs, pools and Batch jobs (the run decided nothing)', err);
      return report;
    }
    const [{ rows, unreadable }, homePools, homeBatchJobs] = listed;
    report.accounts.push({ name: deps.homeAccount ?? 'home', listed: true });
    const unobserved = new Set<string>();
    const pools: ObservedPool[] = [...homePools];
    const batchJobs: ObservedBatchJob[] = [...homeBatchJobs];
    await listOtherAccounts(deps, rows, pools, batchJobs, unobserved, report, skip);
    // A row that cannot be read is a job we know nothing about, not an unknown job: its resources are left alone.
    for (const u of unreadable) {
      unobserved.add(u.id);
      skip('read job row', new Error(u.error), u.id);
    }
    const jobs = new Map<string, ObservedJobRow>();
    for (const r of rows) {
      try {
        jobs.set(r.id, observeRow(r, deps.redrive !== undefined));
      } catch (err) {
        unobserved.add(r.id);
        skip('observe job row', err, r.id);
      }
    }
    const byContainer = new Map(rows.map((r) => [stagingContainerFor(r.id), r.id]));
    const staging = await listStaging(deps.stagingAccounts, byContainer, skip);

    // Orchestration status for every unfinished job and for every job that still owns something.
    const retention = deps.settings.jobsRetentionMs;
    const due = (r: JobRecord) => retention !== undefined && isTerminal(r.state) && now().getTime() - Date.parse(r.updatedAt) > retention;
    const ids = new Set<string>([
      ...rows.filter((r) => !isTerminal(r.state) || due(r)).map((r) => r.id),
      ...pools.map((p) => p.jobId),
      ...batchJobs.map((b) => b.jobId),
    ]);
    const orchestrations = await orchestrationStatuses(deps, ids, unobserved, skip);
    // Reused pools are the home account's (a job on an existing pool is never placed elsewhere).
    const containerJobs = await observeContainerJobs(deps.batch, rows, homeBatchJobs, (jobId, err) => {
      unobserved.add(jobId);
      skip('observe containers on a reused pool', err, jobId);
    });
    report.observed = {
      jobs: rows.length,
      pools: pools.length,
      batchJobs: batchJobs.length,
      stagingContainers: staging.length,
      containerJobs: containerJobs.length,
    };

    const plan = planSweep(
      { now: now().toISOString(), jobs, orchestrations, pools, batchJobs, staging, containerJobs, unobserved },
      deps.settings,
      report.skipped,
    );
    report.counts = summarise(plan);
    await applyPlan(deps, runId, plan, report, skip);
    return report;
  } finally {
    await lease.release();
    report.durationMs = now().getTime() - started.getTime();
  }
}

type Skip = (step: string, err: unknown, jobId?: string) => void;

/** The pools and Batch jobs of the other Batch accounts; the jobs of an account that does not answer are unobserved. */
async function listOtherAccounts(
  deps: SweepDeps,
  rows: readonly JobRecord[],
  pools: ObservedPool[],
  batchJobs: ObservedBatchJob[],
  unobserved: Set<string>,
  report: SweepReport,
  skip: Skip,
): Promise<void> {
  for (const other of deps.otherAccounts ?? []) {
    try {
      const [p, b] = await Promise.all([listOwnedPools(other.batch), listOwnedJobs(other.batch)]);
      pools.push(...p.map((x) => ({ ...x, account: other.name })));
      batchJobs.push(...b.map((x) => ({ ...x, account: other.name })));
      report.accounts.push({ name: other.name, listed: true });
    } catch (err) {
      // Unseen is not gone: the jobs placed there keep their resources and rows until the account answers again.
      report.accounts.push({ name: other.name, listed: false, error: errorText(err) });
      skip(`list pools and Batch jobs of Batch account ${other.name} (its jobs were left alone)`, err);
      for (const r of rows) if (r.batchAccount === other.name) unobserved.add(r.id);
    }
  }
}

/** The orchestration status of each of `ids`; a job whose status could not be read is unobserved. */
async function orchestrationStatuses(deps: SweepDeps, ids: Iterable<string>, unobserved: Set<string>, skip: Skip): Promise<Map<string, ObservedOrchestration>> {
  const orchestrations = new Map<string, ObservedOrchestration>();
  for (const id of ids) {
    try {
      const s = await deps.orchestrations.status(id);
      if (s) orchestrations.set(id, s);
    } catch (err) {
      // Unknown is not "missing": a job whose orchestration could not be read must not look lost.
      unobserved.add(id);
      skip('read orchestration status', err, id);
    }
  }
  return orchestrations;
}

/** Carries out the plan's actions in order, each recorded in the report and noted on its job's timeline. */
async function applyPlan(deps: SweepDeps, runId: string, plan: SweepAction[], report: SweepReport, skip: Skip): Promise<void> {
  const failures = new Map<string, string[]>();
  for (const action of plan) {
    try {
      const detail = await act(deps, action, failures.get(action.jobId ?? '') ?? []);
      report.actions.push({ ...action, ok: true });
      await note(deps.store, runId, action, detail).catch((err) => skip(`write the ${action.kind} note to the timeline`, err, action.jobId));
    } catch (err) {
      const message = `${action.kind} for job ${action.jobId ?? '?'}: ${(err as Error).message}`;
      if (action.jobId) failures.set(action.jobId, [...(failures.get(action.jobId) ?? []), message]);
      report.actions.push({ ...action, ok: false, error: message });
    }
  }
}

/** The Batch account an action goes to: its resource's account, else the home one. */
function batchOf(deps: SweepDeps, account: string | undefined): BatchContext {
  if (account === undefined) return deps.batch;
  const other = deps.otherAccounts?.find((o) => o.name === account);
  if (!other) throw new Error(`Batch account ${account} is not configured`);
  return other.batch;
}

async function act(deps: SweepDeps, a: SweepAction, earlierFailures: string[]): Promise<string> {
  switch (a.kind) {
    case 'terminateOrchestration':
      await deps.orchestrations.terminate(a.jobId, a.reason);
      return 'orchestration terminated';
    case 'terminateBatchJob':
      // Terminating runs the job release task on every node, which removes the job's containers.
      return `Batch job ${a.batchJobId}${where(a.account)}: ${await terminateJob(batchOf(deps, a.account), a.batchJobId, 'sweep')}`;
    case 'deletePool': {
      const r = await deletePool(batchOf(deps, a.account), a.poolId);
      return `pool ${a.poolId}${where(a.account)} (owner ${a.owner ?? 'not recorded'}) ${r.deleted ? 'deletion requested' : 'already gone'}`;
    }
    case 'deleteStaging': {
      const account = deps.stagingAccounts.find((s) => s.name === a.account);
      if (!account) throw new Error(`staging account ${a.account} is not configured`);
      const r = await account.service.getContainerClient(a.container).deleteIfExists();
      return `staging container ${a.account}/${a.container} ${r.succeeded ? 'deleted' : 'already gone'}`;
    }
    case 'purgeJob': {
      await deps.orchestrations.purge(a.jobId);
      // Before the row: an interrupted purge leaves the row, which the next run finds and purges again.
      await deps.eventDeliveries?.purge(a.jobId);
      const r = await deps.store.purge(a.jobId);
      return `job row ${r.row ? 'and' : 'already gone;'} ${r.events} event(s) and orchestration history purged`;
    }
    case 'deleteBatchJob': {
      const r = await deleteJob(batchOf(deps, a.account), a.batchJobId);
      return `Batch job ${a.batchJobId}${where(a.account)} ${r.deleted ? 'deleted' : 'already gone'}`;
    }
    case 'cleanContainers':
      return cleanContainers(deps.batch, a);
    case 'finishContainerCleanup': {
      const deleted = a.cleanupJobId ? (await deleteJob(deps.batch, a.cleanupJobId)).deleted : false;
      await deps.store.update(a.jobId, { containersCheckedAt: (deps.now ?? (() => new Date()))().toISOString() });
      return `no container of the job is left on its nodes${deleted ? `; cleanup job ${a.cleanupJobId} deleted` : ''}`;
    }
    case 'redriveJob': {
      if (!deps.redrive) throw new Error('this sweep cannot start orchestrations');
      return `run re-driven from the recorded submission: ${await deps.redrive(a.jobId)}`;
    }
    case 'failJob':
      await endJob(deps.store, a.jobId, 'Failed', a.rule === 'stalledRun' ? 'Stalled' : 'LostRun', withFailures(a.reason, earlierFailures));
      return 'job marked Failed';
    case 'cancelJob':
      await endJob(deps.store, a.jobId, 'Cancelled', 'Cancelled', withFailures(a.reason, earlierFailures));
      return 'job marked Cancelled';
  }
}

const where = (account: string | undefined) => (account === undefined ? '' : ` in Batch account ${account}`);

function withFailures(reason: string, earlierFailures: string[]): string {
  return earlierFailures.length ? `${reason}; cleanup incomplete: ${earlierFailures.join('; ')}` : reason;
}

/** Moves the row through CleaningUp to its end (the only legal way from a running stage). */
async function endJob(store: JobStore, jobId: string, to: 'Failed' | 'Cancelled', code: string, reason: string): Promise<void> {
  try {
    const job = await store.get(jobId);
    if (!job || isTerminal(job.state)) return;
    if (job.state !== 'CleaningUp' && job.state !== 'Submitted' && job.state !== 'Queued')
      await store.transition(jobId, 'CleaningUp', `sweep: ${reason}`, { stage: 'CleaningUp' });
    await store.transition(jobId, to, reason, { stage: to, error: { code, message: reason } });
  } catch (err) {
    // The run finished the row itself between our look and our write: nothing left to do.
    if (err instanceof IllegalTransitionError) return;
    throw err;
  }
}

async function note(store: JobStore, runId: string, a: SweepAction, detail: string): Promise<void> {
  // A purged job has no timeline left to write to; the run summary counts it.
  if (!a.jobId || a.kind === 'purgeJob') return;
  const resource = resourceOf(a);
  const eventId = `sweep-${runId}-${a.kind}-${resource}`.replace(/[^A-Za-z0-9._:@=+-]/g, '_').slice(0, 200);
  try {
    await store.appendEvent(a.jobId, {
      reason: `sweep ${a.rule}: ${detail} (${a.reason})`,
      eventId,
      data: { sweepRun: runId, rule: a.rule, action: a.kind, resource },
    });
  } catch (err) {
    // Resources of an unknown job have no row to write to; the run summary still counts them.
    if (!(err instanceof JobNotFoundError)) throw err;
  }
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function resourceOf(a: SweepAction): string {
  switch (a.kind) {
    case 'deletePool':
      return a.poolId;
    case 'terminateBatchJob':
    case 'deleteBatchJob':
      return a.batchJobId;
    case 'deleteStaging':
      return a.container;
    case 'cleanContainers':
      return `${a.cleanupJobId}-${a.tasks.map((t) => t.taskId).join('-')}`;
    default:
      return a.jobId ?? 'sweep';
  }
}

/** One housekeeping Batch job on the reused pool, and a cleanup task pinned to each node that may hold the containers. */
async function cleanContainers(batch: BatchContext, a: Extract<ContainerAction, { kind: 'cleanContainers' }>): Promise<string> {
  await createJob(batch, {
    batchJobId: a.cleanupJobId,
    jobId: a.jobId,
    poolId: a.poolId,
    purpose: CONTAINER_CLEANUP_PURPOSE,
    displayName: `container cleanup for job ${a.jobId}`,
  });
  const commandLine = buildContainerCleanupCommand(a.containers);
  for (const t of a.tasks) {
    await addNodeTask(batch, a.cleanupJobId, { id: t.taskId, affinityId: t.affinityId, commandLine, elevated: true, maxWallClockSeconds: 600 });
  }
  return `cleanup task(s) ${a.tasks.map((t) => `${t.taskId} on ${t.nodeId}`).join(', ')} added to ${a.cleanupJobId} on pool ${a.poolId}`;
}

/**
 * Finished jobs that ran docker containers on a pool we did not create, and were not yet found clean: what the
 * container rule needs about each (the Batch job's release outcomes, the pool's nodes, the cleanup job's tasks).
 */
async function observeContainerJobs(
  batch: BatchContext,
  rows: readonly JobRecord[],
  owned: readonly OwnedJob[],
  failed: (jobId: string, err: unknown) => void,
): Promise<ObservedContainerJob[]> {
  const candidates = rows.flatMap((r) => {
    const poolId = r.spec?.pool.poolId;
    return poolId !== undefined && isTerminal(r.state) && !r.containersCheckedAt && r.spec?.container.runtime === 'docker' ? [{ r, poolId }] : [];
  });
  const byBatchId = new Map(owned.filter((j) => j.purpose === undefined).map((j) => [j.batchJobId, j]));
  const cleanupJobs = new Map(owned.filter((j) => j.purpose === CONTAINER_CLEANUP_PURPOSE).map((j) => [j.jobId, j]));
  const poolNodes = new Map<string, ObservedContainerJob['poolNodes']>();
  const out: ObservedContainerJob[] = [];
  for (const { r, poolId } of candidates) {
    try {
      out.push(await observeContainerJob(batch, r, poolId, byBatchId, cleanupJobs, poolNodes));
    } catch (err) {
      failed(r.id, err);
    }
  }
  return out;
}

async function observeContainerJob(
  batch: BatchContext,
  r: JobRecord,
  poolId: string,
  byBatchId: ReadonlyMap<string, OwnedJob>,
  cleanupJobs: ReadonlyMap<string, OwnedJob>,
  poolNodes: Map<string, ObservedContainerJob['poolNodes']>,
): Promise<ObservedContainerJob> {
  if (!poolNodes.has(poolId)) poolNodes.set(poolId, await nodesOf(batch, poolId));
  const run = r.batchJobId ? byBatchId.get(r.batchJobId) : undefined;
  const cleanup = cleanupJobs.get(r.id);
  return {
    jobId: r.id,
    endedAt: r.updatedAt,
    poolId,
    containers: [containerNameFor(r.id)],
    batchJobId: r.batchJobId,
    batchJobState: run?.state,
    release:
      run?.state === 'completed'
        ? (await getNodeLifecycleStatus(batch, run.batchJobId)).map((n) => ({ nodeId: n.nodeId, state: n.release?.state, exitCode: n.release?.exitCode }))
        : undefined,
    ranOn: ranOn(r.result),
    poolNodes: poolNodes.get(poolId),
    cleanup: cleanup
      ? {
          batchJobId: cleanup.batchJobId,
          tasks: (await listTasks(batch, cleanup.batchJobId)).map((t) => ({ taskId: t.taskId, state: t.state, exitCode: t.exitCode, nodeId: t.nodeId })),
        }
      : undefined,
  };
}

async function nodesOf(batch: BatchContext, poolId: string): Promise<ObservedContainerJob['poolNodes']> {
  try {
    return (await listNodes(batch, poolId)).map((n) => ({ id: n.id, state: n.state, affinityId: n.affinityId }));
  } catch (err) {
    if (err instanceof BatchError && (err.code === 'PoolNotFound' || err.status === 404)) return undefined;
    throw err;
  }
}

/** The nodes the MPI task ran on, from the result the pipeline recorded (master and subtasks). */
function ranOn(result: JobRecord['result']): string[] | undefined {
  const mpi = result?.mpi;
  if (!mpi) return undefined;
  const nodes = [...mpi.logs.map((l) => l.node), ...mpi.subtasks.map((s) => s.nodeId)].filter((n): n is string => !!n && n !== 'master');
  return nodes.length ? [...new Set(nodes)] : undefined;
}

async function listAllJobs(store: JobStore): Promise<{ rows: JobRecord[]; unreadable: { id: string; error: string }[] }> {
  const rows: JobRecord[] = [];
  const unreadable: { id: string; error: string }[] = [];
  let token: string | undefined;
  do {
    const page = await store.list({ top: 1000, continuationToken: token });
    rows.push(...page.jobs);
    unreadable.push(...(page.unreadable ?? []));
    token = page.continuationToken;
  } while (token && rows.length < MAX_JOB_ROWS);
  return { rows, unreadable };
}

/**
 * A row as the rules see it. A row without a valid spec (a rejected submission, a damaged row) keeps nothing and
 * has no limit: it never ran a pipeline, or its pipeline's input no longer says what it kept.
 */
function observeRow(r: JobRecord, canRedrive: boolean): ObservedJobRow {
  let wallClockLimitMs: number | undefined;
  let keepsPool = false;
  if (r.spec) {
    const plan = planJob(r.id, r.spec);
    // Only jobs with an explicit maxWallClock have a limit worth enforcing from outside.
    wallClockLimitMs = r.spec.limits.maxWallClock ? plan.pipelineBudgetMs : undefined;
    keepsPool = plan.deletePool === 'never' || (plan.deletePool === 'onSuccess' && r.state !== 'Succeeded');
  }
  const keep = r.spec?.cleanup.keepStagedData;
  return {
    id: r.id,
    state: r.state,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    wallClockLimitMs,
    keepsPool,
    cancelRequestedAt: r.cancelRequestedAt,
    isArray: !!r.spec?.array,
    redrivable: canRedrive && r.spec !== undefined,
    keepStagedDataMs: typeof keep === 'string' ? (parseIsoDuration(keep) ?? undefined) : undefined,
  };
}

/** Staging containers per account; an account that cannot be listed is skipped this run (its containers wait). */
async function listStaging(
  accounts: readonly BlobAccount[],
  byContainer: ReadonlyMap<string, string>,
  skip: (step: string, err: unknown) => void,
): Promise<ObservedStagingContainer[]> {
  const out: ObservedStagingContainer[] = [];
  for (const account of accounts) {
    try {
      const found: ObservedStagingContainer[] = [];
      for await (const c of account.service.listContainers({ prefix: 'stg-' })) {
        found.push({ account: account.name, container: c.name, lastModified: c.properties.lastModified.toISOString(), jobId: byContainer.get(c.name) });
      }
      out.push(...found);
    } catch (err) {
      skip(`list staging containers of ${account.name}`, err);
    }
  }
  return out;
}
