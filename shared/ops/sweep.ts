/**
 * One sweep run: take the singleton lease, observe (owned pools and Batch jobs, job rows, orchestration
 * status, staging containers), plan with the pure rules (./sweepRules), act idempotently, write every action
 * to the timeline of the job it concerns, and return one summary (counts per rule) for the structured log line.
 */
import type { BlobServiceClient } from '@azure/storage-blob';
import {
  BatchError, addNodeTask, createJob, deleteJob, deletePool, getNodeLifecycleStatus, listNodes, listOwnedJobs, listOwnedPools, listTasks, terminateJob,
  type BatchContext, type OwnedJob,
} from '../batch';
import { buildContainerCleanupCommand } from '../mpi/commands';
import { containerNameFor } from '../pipeline/mpiTaskRequest';
import { isPoolReuse } from '../spec/normalize';
import { CONTAINER_CLEANUP_PURPOSE, type ContainerAction, type ObservedContainerJob } from './leftoverContainers';
import { IllegalTransitionError, isTerminal, type JobRecord, type JobStore } from '../state';
import { planJob, stagingContainerFor } from '../pipeline/jobPlan';
import { parseIsoDuration } from '../spec/duration';
import type { BlobAccount } from '../storage/clients';
import { tryAcquireSweepLease } from './lease';
import {
  planSweep, summarise,
  type ObservedJobRow, type ObservedOrchestration, type ObservedStagingContainer, type SweepAction, type SweepSettings,
} from './sweepRules';

/** What the sweep needs from Durable (the function adapts the Durable client to it). */
export interface OrchestrationControl {
  status(instanceId: string): Promise<ObservedOrchestration | undefined>;
  terminate(instanceId: string, reason: string): Promise<void>;
  /** Deletes the instance's history (already gone is fine). */
  purge(instanceId: string): Promise<void>;
}

export interface SweepDeps {
  batch: BatchContext;
  store: JobStore;
  orchestrations: OrchestrationControl;
  stagingAccounts: readonly BlobAccount[];
  /** Host storage, where the lease blob lives. */
  hostBlobs: BlobServiceClient;
  settings: SweepSettings;
  now?: () => Date;
}

export interface SweepReport {
  runId: string;
  /** false when another run held the lease. */
  ran: boolean;
  startedAt: string;
  durationMs: number;
  observed: { jobs: number; pools: number; batchJobs: number; stagingContainers: number; containerJobs: number };
  counts: Record<string, number>;
  actions: (SweepAction & { ok: boolean; error?: string })[];
}

/** Guard against an unbounded scan: the sweep looks at this many job rows at most per run. */
const MAX_JOB_ROWS = 20_000;

export async function runSweep(deps: SweepDeps): Promise<SweepReport> {
  const now = deps.now ?? (() => new Date());
  const started = now();
  const runId = `${started.toISOString().replace(/[^0-9]/g, '').slice(0, 14)}-${Math.random().toString(36).slice(2, 8)}`;
  const report: SweepReport = {
    runId, ran: false, startedAt: started.toISOString(), durationMs: 0,
    observed: { jobs: 0, pools: 0, batchJobs: 0, stagingContainers: 0, containerJobs: 0 }, counts: {}, actions: [],
  };
  const lease = await tryAcquireSweepLease(deps.hostBlobs);
  if (!lease) {
    report.durationMs = now().getTime() - started.getTime();
    return report;
  }
  try {
    report.ran = true;
    const [rows, pools, batchJobs] = await Promise.all([listAllJobs(deps.store), listOwnedPools(deps.batch), listOwnedJobs(deps.batch)]);
    const jobs = new Map(rows.map((r) => [r.id, observeRow(r)]));
    const byContainer = new Map(rows.map((r) => [stagingContainerFor(r.id), r.id]));
    const staging = await listStaging(deps.stagingAccounts, byContainer);

    // Orchestration status for every unfinished job and for every job that still owns something.
    const retention = deps.settings.jobsRetentionMs;
    const due = (r: JobRecord) => retention !== undefined && isTerminal(r.state) && now().getTime() - Date.parse(r.updatedAt) > retention;
    const ids = new Set<string>([
      ...rows.filter((r) => !isTerminal(r.state) || due(r)).map((r) => r.id),
      ...pools.map((p) => p.jobId), ...batchJobs.map((b) => b.jobId),
    ]);
    const orchestrations = new Map<string, ObservedOrchestration>();
    for (const id of ids) {
      const s = await deps.orchestrations.status(id);
      if (s) orchestrations.set(id, s);
    }
    const containerJobs = await observeContainerJobs(deps.batch, rows, batchJobs);
    report.observed = { jobs: rows.length, pools: pools.length, batchJobs: batchJobs.length, stagingContainers: staging.length, containerJobs: containerJobs.length };

    const plan = planSweep({ now: now().toISOString(), jobs, orchestrations, pools, batchJobs, staging, containerJobs }, deps.settings);
    report.counts = summarise(plan);
    const failures = new Map<string, string[]>();
    for (const action of plan) {
      try {
        const detail = await act(deps, action, failures.get(action.jobId ?? '') ?? []);
        report.actions.push({ ...action, ok: true });
        await note(deps.store, runId, action, detail);
      } catch (err) {
        const message = `${action.kind} for job ${action.jobId ?? '?'}: ${(err as Error).message}`;
        if (action.jobId) failures.set(action.jobId, [...(failures.get(action.jobId) ?? []), message]);
        report.actions.push({ ...action, ok: false, error: message });
      }
    }
    return report;
  } finally {
    await lease.release();
    report.durationMs = now().getTime() - started.getTime();
  }
}

async function act(deps: SweepDeps, a: SweepAction, earlierFailures: string[]): Promise<string> {
  switch (a.kind) {
    case 'terminateOrchestration':
      await deps.orchestrations.terminate(a.jobId, a.reason);
      return 'orchestration terminated';
    case 'terminateBatchJob':
      // Terminating runs the job release task on every node, which removes the job's containers.
      return `Batch job ${a.batchJobId}: ${await terminateJob(deps.batch, a.batchJobId, 'sweep')}`;
    case 'deletePool': {
      const r = await deletePool(deps.batch, a.poolId);
      return `pool ${a.poolId} ${r.deleted ? 'deletion requested' : 'already gone'}`;
    }
    case 'deleteStaging': {
      const account = deps.stagingAccounts.find((s) => s.name === a.account);
      if (!account) throw new Error(`staging account ${a.account} is not configured`);
      const r = await account.service.getContainerClient(a.container).deleteIfExists();
      return `staging container ${a.account}/${a.container} ${r.succeeded ? 'deleted' : 'already gone'}`;
    }
    case 'purgeJob': {
      await deps.orchestrations.purge(a.jobId);
      const r = await deps.store.purge(a.jobId);
      return `job row ${r.row ? 'and' : 'already gone;'} ${r.events} event(s) and orchestration history purged`;
    }
    case 'deleteBatchJob': {
      const r = await deleteJob(deps.batch, a.batchJobId);
      return `Batch job ${a.batchJobId} ${r.deleted ? 'deleted' : 'already gone'}`;
    }
    case 'cleanContainers':
      return cleanContainers(deps.batch, a);
    case 'finishContainerCleanup': {
      const deleted = a.cleanupJobId ? (await deleteJob(deps.batch, a.cleanupJobId)).deleted : false;
      await deps.store.update(a.jobId, { containersCheckedAt: (deps.now ?? (() => new Date()))().toISOString() });
      return `no container of the job is left on its nodes${deleted ? `; cleanup job ${a.cleanupJobId} deleted` : ''}`;
    }
    case 'failJob':
      await failJob(deps.store, a.jobId, a.rule === 'stalledRun' ? 'Stalled' : 'LostRun', earlierFailures.length ? `${a.reason}; cleanup incomplete: ${earlierFailures.join('; ')}` : a.reason);
      return 'job marked Failed';
  }
}

/** Moves the row through CleaningUp to Failed (the only legal way from a running stage). */
async function failJob(store: JobStore, jobId: string, code: string, reason: string): Promise<void> {
  try {
    const job = await store.get(jobId);
    if (!job || isTerminal(job.state)) return;
    if (job.state !== 'CleaningUp' && job.state !== 'Submitted') await store.transition(jobId, 'CleaningUp', `sweep: ${reason}`, { stage: 'CleaningUp' });
    await store.transition(jobId, 'Failed', reason, { stage: 'Failed', error: { code, message: reason } });
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
    await store.appendEvent(a.jobId, { reason: `sweep ${a.rule}: ${detail} (${a.reason})`, eventId, data: { sweepRun: runId, rule: a.rule, action: a.kind, resource } });
  } catch {
    // Resources of an unknown job have no row to write to; the run summary still counts them.
  }
}

function resourceOf(a: SweepAction): string {
  switch (a.kind) {
    case 'deletePool': return a.poolId;
    case 'terminateBatchJob': case 'deleteBatchJob': return a.batchJobId;
    case 'deleteStaging': return a.container;
    case 'cleanContainers': return `${a.cleanupJobId}-${a.tasks.map((t) => t.taskId).join('-')}`;
    default: return a.jobId ?? 'sweep';
  }
}

/** One housekeeping Batch job on the reused pool, and a cleanup task pinned to each node that may hold the containers. */
async function cleanContainers(batch: BatchContext, a: Extract<ContainerAction, { kind: 'cleanContainers' }>): Promise<string> {
  await createJob(batch, { batchJobId: a.cleanupJobId, jobId: a.jobId, poolId: a.poolId, purpose: CONTAINER_CLEANUP_PURPOSE, displayName: `container cleanup for job ${a.jobId}` });
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
async function observeContainerJobs(batch: BatchContext, rows: readonly JobRecord[], owned: readonly OwnedJob[]): Promise<ObservedContainerJob[]> {
  const candidates = rows.filter((r) => isTerminal(r.state) && !r.containersCheckedAt && isPoolReuse(r.spec) && r.spec.container?.runtime === 'docker');
  const byBatchId = new Map(owned.filter((j) => j.purpose === undefined).map((j) => [j.batchJobId, j]));
  const cleanupJobs = new Map(owned.filter((j) => j.purpose === CONTAINER_CLEANUP_PURPOSE).map((j) => [j.jobId, j]));
  const poolNodes = new Map<string, ObservedContainerJob['poolNodes']>();
  const out: ObservedContainerJob[] = [];
  for (const r of candidates) {
    const poolId = r.spec.pool.poolId as string;
    if (!poolNodes.has(poolId)) poolNodes.set(poolId, await nodesOf(batch, poolId));
    const run = r.batchJobId ? byBatchId.get(r.batchJobId) : undefined;
    const cleanup = cleanupJobs.get(r.id);
    out.push({
      jobId: r.id,
      endedAt: r.updatedAt,
      poolId,
      containers: [containerNameFor(r.id)],
      batchJobId: r.batchJobId,
      batchJobState: run?.state,
      release: run?.state === 'completed'
        ? (await getNodeLifecycleStatus(batch, run.batchJobId)).map((n) => ({ nodeId: n.nodeId, state: n.release?.state, exitCode: n.release?.exitCode }))
        : undefined,
      ranOn: ranOn(r.result),
      poolNodes: poolNodes.get(poolId),
      cleanup: cleanup
        ? { batchJobId: cleanup.batchJobId, tasks: (await listTasks(batch, cleanup.batchJobId)).map((t) => ({ taskId: t.taskId, state: t.state, exitCode: t.exitCode, nodeId: t.nodeId })) }
        : undefined,
    });
  }
  return out;
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
  const mpi = (result as { mpi?: { logs?: { node?: string }[]; subtasks?: { nodeId?: string }[] } } | undefined)?.mpi;
  if (!mpi) return undefined;
  const nodes = [...(mpi.logs ?? []).map((l) => l.node), ...(mpi.subtasks ?? []).map((s) => s.nodeId)].filter((n): n is string => !!n && n !== 'master');
  return nodes.length ? [...new Set(nodes)] : undefined;
}

async function listAllJobs(store: JobStore): Promise<JobRecord[]> {
  const out: JobRecord[] = [];
  let token: string | undefined;
  do {
    const page = await store.list({ top: 1000, continuationToken: token });
    out.push(...page.jobs);
    token = page.continuationToken;
  } while (token && out.length < MAX_JOB_ROWS);
  return out;
}

function observeRow(r: JobRecord): ObservedJobRow {
  let wallClockLimitMs: number | undefined;
  let keepsPool = false;
  try {
    const plan = planJob(r.id, r.spec);
    // Only jobs with an explicit maxWallClock have a limit worth enforcing from outside.
    wallClockLimitMs = r.spec.limits.maxWallClock ? plan.pipelineBudgetMs : undefined;
    keepsPool = plan.deletePool === 'never' || (plan.deletePool === 'onSuccess' && r.state !== 'Succeeded');
  } catch {
    // A row whose spec no longer plans (older schema): treat it as keeping nothing and having no limit.
  }
  const keep = r.spec.cleanup?.keepStagedData;
  return {
    id: r.id, state: r.state, createdAt: r.createdAt, updatedAt: r.updatedAt, wallClockLimitMs, keepsPool,
    keepStagedDataMs: typeof keep === 'string' ? parseIsoDuration(keep) ?? undefined : undefined,
  };
}

async function listStaging(accounts: readonly BlobAccount[], byContainer: ReadonlyMap<string, string>): Promise<ObservedStagingContainer[]> {
  const out: ObservedStagingContainer[] = [];
  for (const account of accounts) {
    for await (const c of account.service.listContainers({ prefix: 'stg-' })) {
      out.push({ account: account.name, container: c.name, lastModified: c.properties.lastModified.toISOString(), jobId: byContainer.get(c.name) });
    }
  }
  return out;
}
