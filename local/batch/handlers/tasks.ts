import { nextETag } from '../model/etag';
import { TASK_FILTERS } from '../model/filterable';
import { applySelect, pageOf } from '../model/odata';
import type { JobRecord, Json, TaskRecord } from '../model/types';
import { iso, subtaskView, taskView } from '../model/views';
import { BatchHttpError, batchErrorBody, errors } from './errors';
import { checkConditions, jsonBody, versionHeaders, writeHeaders, type Handler, type Services } from './http';
import { jobOr404, refuseWhileJobDeleting, refuseWhileJobEnding } from './jobs';
import { checkTaskAdd } from './rules';
import { optionalDuration, optionalInt, requireId, requireString } from './validate';

/** "The total serialized size of this collection must be less than 1MB" (read as 1 MiB). */
const TASK_COLLECTION_MAX_BYTES = 1024 * 1024;

let seq = 0;

/** After a restore, new tasks must sort after the restored ones. */
export function continueTaskSeqAfter(max: number): void {
  seq = Math.max(seq, max + 1);
}

export function taskOr404(s: Services, jobId: string, taskId: string): { job: JobRecord; task: TaskRecord } {
  const job = jobOr404(s, jobId);
  const task = job.tasks.get(taskId.toLowerCase());
  if (!task) throw errors.notFound('TaskNotFound', 'task');
  return { job, task };
}

/** Validates a TaskAddParameter and builds the record (not yet stored). */
function taskRecordFrom(s: Services, job: JobRecord, b: Json, path = ''): TaskRecord {
  const id = requireId(b, 'id');
  requireString(b, 'commandLine', `${path}commandLine`);
  const requiredSlots = optionalInt(b, 'requiredSlots', 1, 256, `${path}requiredSlots`) ?? 1;
  const c = (b.constraints ?? {}) as Json;
  optionalDuration(c, 'maxWallClockTime', `${path}constraints.maxWallClockTime`);
  optionalDuration(c, 'retentionTime', `${path}constraints.retentionTime`);
  const jobRetries = typeof job.constraints?.maxTaskRetryCount === 'number' ? job.constraints.maxTaskRetryCount : 0;
  const maxTaskRetryCount = optionalInt(c, 'maxTaskRetryCount', -1, 2 ** 31 - 1, `${path}constraints.maxTaskRetryCount`) ?? jobRetries;
  const mi = b.multiInstanceSettings as Json | undefined;
  if (mi) {
    optionalInt(mi, 'numberOfInstances', 1, 100, `${path}multiInstanceSettings.numberOfInstances`);
    if (requiredSlots !== 1) throw errors.invalid(`${path}requiredSlots`, requiredSlots, 'multi-instance tasks must have requiredSlots 1');
  }
  for (const [key, code] of [
    ['jobPreparationTask', 'TaskIdSameAsJobPreparationTask'],
    ['jobReleaseTask', 'TaskIdSameAsJobReleaseTask'],
  ] as const) {
    const special = job.spec[key] as Json | undefined;
    if (special && typeof special.id === 'string' && special.id.toLowerCase() === id.toLowerCase()) {
      throw errors.conflict(code, `The task id ${id} is the id of the job's ${key}.`);
    }
  }
  // A username must be one of the job's pool's userAccounts (known when the pool exists).
  const pool = s.engine.pools.get(job.poolId.toLowerCase());
  checkTaskAdd(
    b,
    {
      onTaskFailure: job.onTaskFailure,
      usesTaskDependencies: job.spec.usesTaskDependencies === true,
      userAccounts: pool ? (pool.spec.userAccounts ?? []) : undefined,
    },
    path,
  );
  const containerSettings = b.containerSettings as Json | undefined;
  if (containerSettings && !containerSettings.imageName) throw errors.missing(`${path}containerSettings.imageName`);
  const now = new Date();
  const spec: Json = { ...b };
  delete spec.constraints;
  delete spec.requiredSlots;
  return {
    id,
    jobId: job.id,
    spec,
    eTag: nextETag(),
    lastModified: now,
    creationTime: now,
    state: 'active',
    stateTransitionTime: now,
    constraints: {
      maxWallClockTime: typeof c.maxWallClockTime === 'string' ? c.maxWallClockTime : undefined,
      retentionTime: typeof c.retentionTime === 'string' ? c.retentionTime : undefined,
      maxTaskRetryCount,
    },
    requiredSlots,
    subtasks: [],
    attempt: 0,
    pgids: new Set(),
    seq: seq++,
  };
}

function refuseUnlessJobAcceptsTasks(job: JobRecord): void {
  refuseWhileJobDeleting(job);
  refuseWhileJobEnding(job);
}

function refuseIfTaskCompleted(task: TaskRecord): void {
  if (task.state === 'completed') throw errors.conflict('TaskCompleted', 'The specified task is already in a completed state.');
}

const addTask: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  refuseUnlessJobAcceptsTasks(job);
  const task = taskRecordFrom(s, job, jsonBody(ctx));
  if (job.tasks.has(task.id.toLowerCase())) throw errors.exists('TaskExists', 'task');
  job.tasks.set(task.id.toLowerCase(), task);
  s.scheduler.kick();
  const url = `${ctx.baseUrl}/jobs/${job.id}/tasks/${task.id}`;
  return { status: 201, headers: { ...writeHeaders(task, url), Location: url } };
};

const addTaskCollection: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  refuseUnlessJobAcceptsTasks(job);
  const b = jsonBody(ctx);
  if (!Array.isArray(b.value)) throw errors.missing('value');
  if (b.value.length > 100) {
    throw new BatchHttpError(413, 'RequestBodyTooLarge', 'The request body is too large: a task collection holds at most 100 tasks.', [
      { key: 'MaxTasksInCollection', value: '100' },
    ]);
  }
  if (ctx.bodyBytes >= TASK_COLLECTION_MAX_BYTES) {
    throw new BatchHttpError(413, 'RequestBodyTooLarge', 'The request body is too large: the serialized task collection must be less than 1 MB.', [
      { key: 'MaxRequestBodySizeInBytes', value: String(TASK_COLLECTION_MAX_BYTES) },
    ]);
  }
  const results = (b.value as Json[]).map((tb, i) => {
    const taskId = typeof tb?.id === 'string' ? tb.id : '';
    try {
      const task = taskRecordFrom(s, job, tb ?? {}, `value[${i}].`);
      if (job.tasks.has(task.id.toLowerCase())) throw errors.exists('TaskExists', 'task');
      job.tasks.set(task.id.toLowerCase(), task);
      return {
        status: 'success',
        taskId: task.id,
        eTag: task.eTag,
        lastModified: iso(task.lastModified),
        location: `${ctx.baseUrl}/jobs/${job.id}/tasks/${task.id}`,
      };
    } catch (e) {
      if (!(e instanceof BatchHttpError)) throw e;
      const err = batchErrorBody(ctx.baseUrl, e);
      delete err['odata.metadata'];
      return { status: e.status >= 500 ? 'servererror' : 'clienterror', taskId, error: err };
    }
  });
  s.scheduler.kick();
  return { status: 200, body: { value: results } };
};

const listTasks: Handler = (ctx, p, s) => {
  const job = jobOr404(s, p.jobId);
  const all = [...job.tasks.values()].sort((a, b) => a.seq - b.seq).map((t) => taskView(t, ctx.baseUrl, (pid, nid) => s.engine.findNode(pid, nid)));
  return { status: 200, body: pageOf(all, ctx.query, ctx.baseUrl, `/jobs/${job.id}/tasks`, TASK_FILTERS) };
};

const getTask: Handler = (ctx, p, s) => {
  const { task } = taskOr404(s, p.jobId, p.taskId);
  checkConditions(ctx, task);
  const view = taskView(task, ctx.baseUrl, (pid, nid) => s.engine.findNode(pid, nid));
  return { status: 200, body: applySelect(view, ctx.query['$select']), headers: versionHeaders(task) };
};

const updateTask: Handler = (ctx, p, s) => {
  const { job, task } = taskOr404(s, p.jobId, p.taskId);
  checkConditions(ctx, task);
  refuseWhileJobDeleting(job);
  refuseIfTaskCompleted(task);
  const c = (jsonBody(ctx).constraints ?? {}) as Json;
  optionalDuration(c, 'maxWallClockTime', 'constraints.maxWallClockTime');
  optionalDuration(c, 'retentionTime', 'constraints.retentionTime');
  const retries = optionalInt(c, 'maxTaskRetryCount', -1, 2 ** 31 - 1, 'constraints.maxTaskRetryCount');
  task.constraints = {
    maxWallClockTime: typeof c.maxWallClockTime === 'string' ? c.maxWallClockTime : undefined,
    retentionTime: typeof c.retentionTime === 'string' ? c.retentionTime : undefined,
    maxTaskRetryCount: retries ?? 0,
  };
  task.eTag = nextETag();
  task.lastModified = new Date();
  return { status: 200, headers: writeHeaders(task, `${ctx.baseUrl}/jobs/${job.id}/tasks/${task.id}`) };
};

const terminateTask: Handler = (ctx, p, s) => {
  const { job, task } = taskOr404(s, p.jobId, p.taskId);
  checkConditions(ctx, task);
  refuseWhileJobDeleting(job);
  refuseIfTaskCompleted(task);
  s.executor.terminate(job, task, 'Task Was Ended by User Request');
  return { status: 204, headers: writeHeaders(task, `${ctx.baseUrl}/jobs/${job.id}/tasks/${task.id}`) };
};

const reactivateTask: Handler = (ctx, p, s) => {
  const { job, task } = taskOr404(s, p.jobId, p.taskId);
  checkConditions(ctx, task);
  refuseUnlessJobAcceptsTasks(job);
  if (task.state !== 'completed')
    throw errors.conflict(
      'TaskNotCompleted',
      'The specified task is not in a completed state, and the requested operation can be performed only on completed tasks.',
    );
  if (task.executionInfo?.result !== 'failure')
    throw errors.conflict(
      'TaskSucceeded',
      'The specified task has already completed successfully, and the requested operation cannot be performed on successful tasks.',
    );
  task.executionInfo = { retryCount: 0, requeueCount: task.executionInfo.requeueCount };
  delete task.nodeInfo;
  task.subtasks = [];
  task.state = 'active';
  task.stateTransitionTime = new Date();
  task.eTag = nextETag();
  s.scheduler.kick();
  return { status: 204, headers: writeHeaders(task, `${ctx.baseUrl}/jobs/${job.id}/tasks/${task.id}`) };
};

const deleteTask: Handler = (ctx, p, s) => {
  const { job, task } = taskOr404(s, p.jobId, p.taskId);
  checkConditions(ctx, task);
  refuseWhileJobDeleting(job);
  if (task.state !== 'completed' && task.state !== 'active') s.executor.terminate(job, task, 'Task was deleted');
  s.executor.removeTaskFiles(task);
  job.tasks.delete(task.id.toLowerCase());
  s.jobs.checkAllTasksComplete(job);
  return { status: 200 };
};

const listSubtasks: Handler = (ctx, p, s) => {
  const { task } = taskOr404(s, p.jobId, p.taskId);
  // The primary (instance 0) is the task itself; subtasks are instances 1..N-1.
  const value = task.subtasks
    .filter((st) => st.id !== 0)
    .map((st) => applySelect(subtaskView(st, ctx.baseUrl, s.engine.findNode(st.poolId, st.nodeId)), ctx.query['$select']));
  return { status: 200, body: { value } };
};

export const taskRoutes: [string, string, Handler][] = [
  ['POST', 'jobs/{jobId}/tasks', addTask],
  ['POST', 'jobs/{jobId}/addtaskcollection', addTaskCollection],
  ['GET', 'jobs/{jobId}/tasks', listTasks],
  ['GET', 'jobs/{jobId}/tasks/{taskId}', getTask],
  ['PUT', 'jobs/{jobId}/tasks/{taskId}', updateTask],
  ['DELETE', 'jobs/{jobId}/tasks/{taskId}', deleteTask],
  ['POST', 'jobs/{jobId}/tasks/{taskId}/terminate', terminateTask],
  ['POST', 'jobs/{jobId}/tasks/{taskId}/reactivate', reactivateTask],
  ['GET', 'jobs/{jobId}/tasks/{taskId}/subtasksinfo', listSubtasks],
];
