import { nextETag, touch } from '../model/etag';
import { JOB_FILTERS, PREP_RELEASE_FILTERS } from '../model/filterable';
import { applySelect, pageOf } from '../model/odata';
import type { JobRecord, Json } from '../model/types';
import { clean, iso, jobView, nodeUrl } from '../model/views';
import { BatchHttpError, errors } from './errors';
import { checkConditions, jsonBody, versionHeaders, writeHeaders, type Handler, type RequestContext, type Services } from './http';
import { checkJobAdd, checkMetadata, notEmulated } from './rules';
import { metadataOf, optionalDuration, optionalEnum, optionalInt, requireId } from './validate';

export function jobOr404(s: Services, jobId: string): JobRecord {
  const j = s.engine.jobs.get(jobId.toLowerCase());
  if (!j) throw errors.notFound('JobNotFound', 'job');
  return j;
}

export function refuseWhileJobDeleting(j: JobRecord): void {
  if (j.state === 'deleting') throw errors.conflict('JobBeingDeleted', 'The specified job has been marked for deletion and is being garbage collected.');
}

/** A job that is terminating or completed takes no changes and no tasks (JobBeingTerminated, JobCompleted). */
export function refuseWhileJobEnding(j: JobRecord): void {
  if (j.state === 'terminating') throw errors.conflict('JobBeingTerminated', 'The specified job is being terminated.');
  if (j.state === 'completed') throw errors.conflict('JobCompleted', 'The specified job is already in a completed state.');
}

function checkedJobConstraints(b: Json, path: string): Json | undefined {
  const c = b.constraints as Json | undefined;
  if (c === undefined || c === null) return undefined;
  optionalDuration(c, 'maxWallClockTime', `${path}.maxWallClockTime`);
  optionalInt(c, 'maxTaskRetryCount', -1, 2 ** 31 - 1, `${path}.maxTaskRetryCount`);
  return c;
}

function poolIdOf(b: Json): string {
  const info = b.poolInfo as Json | undefined;
  if (!info) throw errors.missing('poolInfo');
  if (typeof info.poolId === 'string' && info.poolId) return info.poolId;
  if (info.autoPoolSpecification) throw notEmulated('poolInfo.autoPoolSpecification', 'auto pools (create the pool and give poolInfo.poolId)');
  throw errors.missing('poolInfo.poolId');
}

const addJob: Handler = (ctx, _p, s) => {
  const b = jsonBody(ctx);
  const id = requireId(b);
  checkJobAdd(b);
  const poolId = poolIdOf(b);
  const priority = optionalInt(b, 'priority', -1000, 1000) ?? 0;
  const maxParallelTasks = optionalInt(b, 'maxParallelTasks', -1, 2 ** 31 - 1) ?? -1;
  if (maxParallelTasks === 0) throw errors.invalid('maxParallelTasks', 0, 'must be -1 or greater than 0');
  const onAll = optionalEnum(b, 'onAllTasksComplete', ['noaction', 'terminatejob']) ?? 'noaction';
  const onFail = optionalEnum(b, 'onTaskFailure', ['noaction', 'performexitoptionsjobaction']) ?? 'noaction';
  const constraints = checkedJobConstraints(b, 'constraints');
  const prep = b.jobPreparationTask as Json | undefined;
  if (prep && !prep.commandLine) throw errors.missing('jobPreparationTask.commandLine');
  const rel = b.jobReleaseTask as Json | undefined;
  if (rel && !rel.commandLine) throw errors.missing('jobReleaseTask.commandLine');
  if (rel && !prep)
    throw new BatchHttpError(400, 'InvalidPropertyValue', 'A job release task requires a job preparation task.', [
      { key: 'PropertyName', value: 'jobReleaseTask' },
    ]);
  const existing = s.engine.jobs.get(id.toLowerCase());
  if (existing) {
    refuseWhileJobDeleting(existing);
    throw errors.exists('JobExists', 'job');
  }
  const now = new Date();
  const spec: Json = { ...b, poolInfo: { poolId } };
  if (prep) spec.jobPreparationTask = { id: 'jobpreparation', waitForSuccess: true, rerunOnNodeRebootAfterSuccess: true, ...prep };
  if (rel) spec.jobReleaseTask = { id: 'jobrelease', maxWallClockTime: 'PT15M', retentionTime: 'P7D', ...rel };
  const job: JobRecord = {
    id,
    spec,
    eTag: nextETag(),
    lastModified: now,
    creationTime: now,
    state: 'active',
    stateTransitionTime: now,
    priority,
    maxParallelTasks,
    allowTaskPreemption: b.allowTaskPreemption === true,
    onAllTasksComplete: onAll,
    onTaskFailure: onFail,
    constraints: constraints ? { maxTaskRetryCount: 0, ...constraints } : undefined,
    metadata: metadataOf(b.metadata),
    poolId,
    executionInfo: { startTime: now, poolId },
    tasks: new Map(),
    prepNodes: [],
  };
  s.engine.jobs.set(id.toLowerCase(), job);
  s.jobs.armWallClock(job);
  s.jobs.checkAllTasksComplete(job);
  const url = `${ctx.baseUrl}/jobs/${id}`;
  return { status: 201, headers: { ...writeHeaders(job, url), Location: url } };
};

const listJobs: Handler = (ctx, _p, s) => {
  const all = [...s.engine.jobs.values()].map((j) => jobView(j, ctx.baseUrl));
  return { status: 200, body: pageOf(all, ctx.query, ctx.baseUrl, '/jobs', JOB_FILTERS) };
};

const getJob: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  checkConditions(ctx, job);
  return { status: 200, body: applySelect(jobView(job, ctx.baseUrl), ctx.query['$select']), headers: versionHeaders(job) };
};

function applyJobChanges(ctx: RequestContext, s: Services, job: JobRecord, replace: boolean): void {
  const b = jsonBody(ctx);
  refuseWhileJobEnding(job);
  checkMetadata(b.metadata);
  const priority = optionalInt(b, 'priority', -1000, 1000);
  const maxParallel = optionalInt(b, 'maxParallelTasks', -1, 2 ** 31 - 1);
  const onAll = optionalEnum(b, 'onAllTasksComplete', ['noaction', 'terminatejob']);
  const constraints = checkedJobConstraints(b, 'constraints');
  if (replace && !b.poolInfo) throw errors.missing('poolInfo');
  if (onAll === 'noaction' && job.onAllTasksComplete === 'terminatejob') {
    throw errors.invalid('onAllTasksComplete', onAll, 'cannot change from terminatejob back to noaction');
  }
  if (b.poolInfo) {
    const poolId = poolIdOf(b);
    if (poolId.toLowerCase() !== job.poolId.toLowerCase() && job.state === 'active') {
      throw errors.conflict('JobNotDisabled', 'The pool of an active job can only be changed while the job is disabled.');
    }
  }
  if (priority !== undefined || replace) job.priority = priority ?? 0;
  if (maxParallel !== undefined) job.maxParallelTasks = maxParallel;
  if (b.allowTaskPreemption !== undefined) job.allowTaskPreemption = b.allowTaskPreemption === true;
  if (constraints !== undefined || replace) job.constraints = constraints ? { maxTaskRetryCount: 0, ...constraints } : undefined;
  if (b.metadata !== undefined || replace) job.metadata = metadataOf(b.metadata);
  if (onAll !== undefined || replace) job.onAllTasksComplete = onAll ?? 'noaction';
  touch(job);
  s.jobs.armWallClock(job);
  s.jobs.checkAllTasksComplete(job);
  s.scheduler.kick();
}

const patchJob: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  checkConditions(ctx, job);
  refuseWhileJobDeleting(job);
  applyJobChanges(ctx, s, job, false);
  return { status: 200, headers: writeHeaders(job, `${ctx.baseUrl}/jobs/${job.id}`) };
};

const updateJob: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  checkConditions(ctx, job);
  refuseWhileJobDeleting(job);
  applyJobChanges(ctx, s, job, true);
  return { status: 200, headers: writeHeaders(job, `${ctx.baseUrl}/jobs/${job.id}`) };
};

const terminateJob: Handler = async (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  checkConditions(ctx, job);
  refuseWhileJobDeleting(job);
  refuseWhileJobEnding(job);
  const b = jsonBody(ctx);
  const reason = typeof b.terminateReason === 'string' && b.terminateReason ? b.terminateReason : 'UserTerminate';
  void s.jobs.terminate(job, reason);
  return { status: 202, headers: writeHeaders(job, `${ctx.baseUrl}/jobs/${job.id}`) };
};

const deleteJob: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  checkConditions(ctx, job);
  refuseWhileJobDeleting(job);
  void s.jobs.delete(job);
  return { status: 202 };
};

const disableJob: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  checkConditions(ctx, job);
  refuseWhileJobDeleting(job);
  if (job.state !== 'active') throw errors.conflict('JobNotActive', `The specified job is not in active state (it is ${job.state}).`);
  // The spec requires disableTasks (checked at the door).
  const option = optionalEnum(jsonBody(ctx), 'disableTasks', ['requeue', 'terminate', 'wait']) as 'requeue' | 'terminate' | 'wait';
  s.jobs.disable(job, option);
  return { status: 202, headers: writeHeaders(job, `${ctx.baseUrl}/jobs/${job.id}`) };
};

const enableJob: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  checkConditions(ctx, job);
  refuseWhileJobDeleting(job);
  refuseWhileJobEnding(job);
  s.jobs.enable(job);
  s.scheduler.kick();
  return { status: 202, headers: writeHeaders(job, `${ctx.baseUrl}/jobs/${job.id}`) };
};

const listPrepReleaseStatus: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  if (!job.spec.jobPreparationTask) {
    throw errors.conflict('JobPreparationTaskNotSpecified', 'The specified job does not have a job preparation or job release task.');
  }
  const rows: Json[] = [];
  for (const ref of job.prepNodes) {
    const [poolId, nodeId] = ref.split('/');
    const node = s.engine.findNode(poolId, nodeId);
    const entry = node?.jobTasks.get(job.id.toLowerCase());
    if (!node || !entry) continue;
    const url = nodeUrl(ctx.baseUrl, poolId, nodeId);
    const view = (e: NonNullable<typeof entry.prep>, withRetry: boolean) =>
      clean({
        startTime: iso(e.startTime),
        endTime: iso(e.endTime),
        state: e.state,
        taskRootDirectory: e.taskRootDirectory,
        taskRootDirectoryUrl: `${url}/files/${e.taskRootDirectory}`,
        exitCode: e.exitCode,
        failureInfo: e.failureInfo,
        retryCount: withRetry ? e.retryCount : undefined,
        lastRetryTime: withRetry ? iso(e.lastRetryTime) : undefined,
        result: e.result,
      });
    rows.push(
      clean({
        poolId,
        nodeId,
        nodeUrl: url,
        jobPreparationTaskExecutionInfo: entry.prep ? view(entry.prep, true) : undefined,
        jobReleaseTaskExecutionInfo: entry.release ? view(entry.release, false) : undefined,
      }),
    );
  }
  return { status: 200, body: pageOf(rows, ctx.query, ctx.baseUrl, `/jobs/${job.id}/jobpreparationandreleasetaskstatus`, PREP_RELEASE_FILTERS) };
};

const getTaskCounts: Handler = (_ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  const counts = { active: 0, running: 0, completed: 0, succeeded: 0, failed: 0 };
  const slots = { active: 0, running: 0, completed: 0, succeeded: 0, failed: 0 };
  for (const t of job.tasks.values()) {
    const k = t.state === 'preparing' ? 'running' : t.state;
    counts[k]++;
    slots[k] += t.requiredSlots;
    if (t.state === 'completed') {
      const ok = t.executionInfo?.result === 'success';
      counts[ok ? 'succeeded' : 'failed']++;
      slots[ok ? 'succeeded' : 'failed'] += t.requiredSlots;
    }
  }
  return { status: 200, body: { taskCounts: counts, taskSlotCounts: slots } };
};

export const jobRoutes: [string, string, Handler][] = [
  ['POST', 'jobs', addJob],
  ['GET', 'jobs', listJobs],
  ['GET', 'jobs/{jobId}', getJob],
  ['PATCH', 'jobs/{jobId}', patchJob],
  ['PUT', 'jobs/{jobId}', updateJob],
  ['POST', 'jobs/{jobId}/terminate', terminateJob],
  ['DELETE', 'jobs/{jobId}', deleteJob],
  ['POST', 'jobs/{jobId}/disable', disableJob],
  ['POST', 'jobs/{jobId}/enable', enableJob],
  ['GET', 'jobs/{jobId}/jobpreparationandreleasetaskstatus', listPrepReleaseStatus],
  ['GET', 'jobs/{jobId}/taskcounts', getTaskCounts],
];
