/**
 * Batch jobs for one control-plane job: create (idempotently, with preparation/release tasks),
 * switch on auto-termination once the MPI task is in, terminate, delete, observe.
 *
 * The job is created with onAllTasksComplete = noaction and patched to terminatejob after the tasks
 * are added: a job with no tasks counts as "all tasks complete" and would end at once otherwise.
 */
import type { BatchServiceModels } from '@azure/batch';
import type { BatchContext } from './client';
import {
  collectPages,
  iso,
  isGone,
  ownerJobOf,
  purposeOf,
  ownershipMetadata,
  secondsToDuration,
  stripUndefined,
  toContainerSettings,
  toEnvironmentSettings,
  toResourceFiles,
  type ContainerSettingsSpec,
  type NameValue,
  type ResourceFileSpec,
} from './common';
import { BatchError } from './errors';
import { callWithRetry } from './retry';

export interface NodeLifecycleTaskSpec {
  commandLine: string;
  environment?: NameValue[];
  resourceFiles?: ResourceFileSpec[];
  containerSettings?: ContainerSettingsSpec;
  /** Run as the pool's admin auto-user (e.g. to remove containers). */
  elevated?: boolean;
}

export interface BatchJobSpec {
  /** The Batch job id. */
  batchJobId: string;
  /** The control-plane job that owns it (written to metadata). */
  jobId: string;
  poolId: string;
  displayName?: string;
  environment?: NameValue[];
  /** Runs on each node before its first task of the job; tasks wait for it to succeed. */
  preparationTask?: NodeLifecycleTaskSpec;
  /** Runs on each node that ran the preparation task when the job ends (requires preparationTask). */
  releaseTask?: NodeLifecycleTaskSpec & { maxWallClockSeconds?: number };
  /** Whole-job limit, measured from creation. */
  maxWallClockSeconds?: number;
  priority?: number;
  /** Housekeeping purpose (metadata hpc-cp-purpose), for Batch jobs that do not run the job itself. */
  purpose?: string;
}

export interface CreateJobResult {
  batchJobId: string;
  created: boolean;
}

export interface JobSnapshot {
  batchJobId: string;
  state: string;
  poolId?: string;
  onAllTasksComplete?: string;
  /** Set by Batch when the job ended: AllTasksComplete, MaxWallClockTimeExpiry, UserTerminate, ... */
  terminateReason?: string;
  schedulingError?: string;
  creationTime?: string;
  startTime?: string;
  endTime?: string;
  ownedByJob?: string;
}

export interface NodeLifecycleStatus {
  nodeId: string;
  preparation?: { state: string; exitCode?: number; failure?: string; retryCount?: number };
  release?: { state: string; exitCode?: number; failure?: string };
}

const jobResource = (batchJobId: string) => `job ${batchJobId}`;

const PREP_ID = 'jobpreparation';
const RELEASE_ID = 'jobrelease';

/** The JobAddParameter for a control-plane job. Pure; exported for tests and review. */
export function buildJobAddParameter(spec: BatchJobSpec): BatchServiceModels.JobAddParameter {
  if (spec.releaseTask && !spec.preparationTask) {
    throw new BatchError({
      code: 'ReleaseTaskWithoutPreparationTask',
      operation: 'jobs.create',
      resource: jobResource(spec.batchJobId),
      message: 'Batch runs a job release task only on nodes that ran a job preparation task; give both',
    });
  }
  const autoUser = (elevated?: boolean) => (elevated ? { autoUser: { scope: 'pool' as const, elevationLevel: 'admin' as const } } : undefined);
  return stripUndefined({
    id: spec.batchJobId,
    displayName: spec.displayName,
    priority: spec.priority,
    poolInfo: { poolId: spec.poolId },
    onAllTasksComplete: 'noaction' as const,
    onTaskFailure: 'noaction' as const,
    constraints: spec.maxWallClockSeconds ? { maxWallClockTime: secondsToDuration(spec.maxWallClockSeconds), maxTaskRetryCount: 0 } : undefined,
    commonEnvironmentSettings: toEnvironmentSettings(spec.environment),
    jobPreparationTask: spec.preparationTask
      ? stripUndefined({
          id: PREP_ID,
          commandLine: spec.preparationTask.commandLine,
          environmentSettings: toEnvironmentSettings(spec.preparationTask.environment),
          resourceFiles: toResourceFiles(spec.preparationTask.resourceFiles),
          containerSettings: toContainerSettings(spec.preparationTask.containerSettings),
          userIdentity: autoUser(spec.preparationTask.elevated),
          waitForSuccess: true,
          rerunOnNodeRebootAfterSuccess: true,
        })
      : undefined,
    jobReleaseTask: spec.releaseTask
      ? stripUndefined({
          id: RELEASE_ID,
          commandLine: spec.releaseTask.commandLine,
          environmentSettings: toEnvironmentSettings(spec.releaseTask.environment),
          resourceFiles: toResourceFiles(spec.releaseTask.resourceFiles),
          containerSettings: toContainerSettings(spec.releaseTask.containerSettings),
          userIdentity: autoUser(spec.releaseTask.elevated),
          maxWallClockTime: secondsToDuration(spec.releaseTask.maxWallClockSeconds),
        })
      : undefined,
    metadata: ownershipMetadata(spec.jobId, spec.purpose),
  });
}

/** Creates the job; an existing job that is ours for the same control-plane job and pool counts as created. */
export async function createJob(ctx: BatchContext, spec: BatchJobSpec): Promise<CreateJobResult> {
  const resource = jobResource(spec.batchJobId);
  const body = buildJobAddParameter(spec);
  try {
    await callWithRetry(ctx.retry, { operation: 'jobs.create', resource }, () => ctx.client.job.add(body));
    return { batchJobId: spec.batchJobId, created: true };
  } catch (err) {
    if (!(err instanceof BatchError) || err.code !== 'JobExists') throw err;
  }
  const existing = await getJob(ctx, spec.batchJobId);
  if (existing && existing.ownedByJob === spec.jobId && existing.poolId === spec.poolId) {
    return { batchJobId: spec.batchJobId, created: false };
  }
  throw new BatchError({
    code: 'JobExists',
    status: 409,
    operation: 'jobs.create',
    resource,
    message: existing
      ? `job already exists and is not ours for job ${spec.jobId} on pool ${spec.poolId} (owner job: ${existing.ownedByJob ?? 'none'}, pool: ${existing.poolId ?? '?'})`
      : 'job was reported as existing but is gone',
  });
}

/** The patch that makes a job terminate itself when all its tasks are complete. */
export const AUTO_TERMINATE_PATCH: BatchServiceModels.JobPatchParameter = { onAllTasksComplete: 'terminatejob' };

/**
 * Switch on "terminate the job when all tasks complete"; call after the tasks are added. Idempotent.
 * A job that already ended (its tasks finished first, or it was terminated) needs nothing more.
 */
export async function enableAutoTerminate(ctx: BatchContext, batchJobId: string): Promise<'enabled' | 'alreadyEnded'> {
  try {
    await callWithRetry(ctx.retry, { operation: 'jobs.enableAutoTerminate', resource: jobResource(batchJobId) }, () =>
      ctx.client.job.patch(batchJobId, AUTO_TERMINATE_PATCH),
    );
    return 'enabled';
  } catch (err) {
    if (err instanceof BatchError && ENDED_CODES.includes(err.code)) return 'alreadyEnded';
    throw err;
  }
}

/** Batch's 409 codes for a job that has ended or is ending (JobBeingTerminated while release tasks run). */
const ENDED_CODES = ['JobCompleted', 'JobBeingTerminated', 'JobBeingDeleted'];

export type TerminateOutcome = 'terminated' | 'alreadyEnded' | 'notFound';

/** Terminates the job (running tasks stop, release tasks run). An ended or missing job is not an error. */
export async function terminateJob(ctx: BatchContext, batchJobId: string, reason = 'UserTerminate'): Promise<TerminateOutcome> {
  try {
    await callWithRetry(ctx.retry, { operation: 'jobs.terminate', resource: jobResource(batchJobId) }, () =>
      ctx.client.job.terminate(batchJobId, { terminateReason: reason }),
    );
    return 'terminated';
  } catch (err) {
    if (isGone(err, ['JobNotFound'])) return 'notFound';
    if (err instanceof BatchError && ENDED_CODES.includes(err.code)) return 'alreadyEnded';
    throw err;
  }
}

/** Deletes the job and its tasks. Returns false when it was already gone or being deleted. */
export async function deleteJob(ctx: BatchContext, batchJobId: string): Promise<{ deleted: boolean }> {
  try {
    await callWithRetry(ctx.retry, { operation: 'jobs.delete', resource: jobResource(batchJobId) }, () => ctx.client.job.deleteMethod(batchJobId));
    return { deleted: true };
  } catch (err) {
    if (isGone(err, ['JobNotFound', 'JobBeingDeleted'])) return { deleted: false };
    throw err;
  }
}

/** The job's state, or undefined when it does not exist. */
export async function getJob(ctx: BatchContext, batchJobId: string): Promise<JobSnapshot | undefined> {
  let job: BatchServiceModels.CloudJob;
  try {
    job = await callWithRetry(ctx.retry, { operation: 'jobs.get', resource: jobResource(batchJobId) }, () => ctx.client.job.get(batchJobId));
  } catch (err) {
    if (isGone(err, ['JobNotFound'])) return undefined;
    throw err;
  }
  const se = job.executionInfo?.schedulingError;
  return stripUndefined({
    batchJobId,
    state: job.state ?? 'unknown',
    poolId: job.poolInfo?.poolId ?? job.executionInfo?.poolId,
    onAllTasksComplete: job.onAllTasksComplete,
    terminateReason: job.executionInfo?.terminateReason,
    schedulingError: se ? `${se.code ?? 'SchedulingError'}: ${se.message ?? ''}` : undefined,
    creationTime: iso(job.creationTime),
    startTime: iso(job.executionInfo?.startTime),
    endTime: iso(job.executionInfo?.endTime),
    ownedByJob: ownerJobOf(job.metadata),
  });
}

/** Per node: how the job preparation and release tasks went (empty when the job has none yet). */
export async function getNodeLifecycleStatus(ctx: BatchContext, batchJobId: string): Promise<NodeLifecycleStatus[]> {
  const what = { operation: 'jobs.preparationAndReleaseStatus', resource: jobResource(batchJobId) };
  let items: BatchServiceModels.JobPreparationAndReleaseTaskExecutionInformation[];
  try {
    items = await collectPages(
      ctx.retry,
      what,
      () => ctx.client.job.listPreparationAndReleaseTaskStatus(batchJobId),
      (link) => ctx.client.job.listPreparationAndReleaseTaskStatusNext(link),
    );
  } catch (err) {
    if (err instanceof BatchError && err.code === 'JobPreparationTaskNotSpecified') return [];
    throw err;
  }
  const failureText = (f?: BatchServiceModels.TaskFailureInformation) => (f ? `${f.code ?? 'Failure'}: ${f.message ?? ''}`.trim() : undefined);
  return items.map((i) =>
    stripUndefined({
      nodeId: i.nodeId ?? '',
      preparation: i.jobPreparationTaskExecutionInfo
        ? stripUndefined({
            state: i.jobPreparationTaskExecutionInfo.state,
            exitCode: i.jobPreparationTaskExecutionInfo.exitCode,
            failure: failureText(i.jobPreparationTaskExecutionInfo.failureInfo),
            retryCount: i.jobPreparationTaskExecutionInfo.retryCount,
          })
        : undefined,
      release: i.jobReleaseTaskExecutionInfo
        ? stripUndefined({
            state: i.jobReleaseTaskExecutionInfo.state,
            exitCode: i.jobReleaseTaskExecutionInfo.exitCode,
            failure: failureText(i.jobReleaseTaskExecutionInfo.failureInfo),
          })
        : undefined,
    }),
  );
}

export interface OwnedJob {
  batchJobId: string;
  jobId: string;
  state: string;
  creationTime?: string;
  /** Set for housekeeping jobs (see BatchJobSpec.purpose). */
  purpose?: string;
}

/** Jobs this control plane created (for the sweep). */
export async function listOwnedJobs(ctx: BatchContext): Promise<OwnedJob[]> {
  const what = { operation: 'jobs.list', resource: 'account jobs' };
  const options = { jobListOptions: { select: 'id,state,creationTime,metadata' } };
  const jobs = await collectPages(
    ctx.retry,
    what,
    () => ctx.client.job.list(options),
    (link) => ctx.client.job.listNext(link),
  );
  const owned: OwnedJob[] = [];
  for (const j of jobs) {
    const jobId = ownerJobOf(j.metadata);
    if (jobId && j.id)
      owned.push(stripUndefined({ batchJobId: j.id, jobId, state: j.state ?? 'unknown', creationTime: iso(j.creationTime), purpose: purposeOf(j.metadata) }));
  }
  return owned;
}
