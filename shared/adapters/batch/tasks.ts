/**
 * Tasks pinned to nodes (image pulls, shard downloads) and task observation: where a task really ran
 * (affinity is only a hint to Batch), its exit code and failure, and the subtasks of an MPI task.
 */
import type { BatchServiceModels } from '@azure/batch';
import type { BatchContext } from './client';
import {
  collectPages,
  iso,
  isGone,
  secondsToDuration,
  stripUndefined,
  toContainerSettings,
  toEnvironmentSettings,
  toOutputFiles,
  toResourceFiles,
  type ContainerSettingsSpec,
  type NameValue,
  type OutputFileSpec,
  type ResourceFileSpec,
} from './common';
import { BatchError } from './errors';
import { callWithRetry } from './retry';

export interface NodeTaskSpec {
  id: string;
  /** The node's affinityId (from the pool snapshot). */
  affinityId: string;
  /** Not run under a shell: wrap in `/bin/bash -c '…'` to expand variables. */
  commandLine: string;
  resourceFiles?: ResourceFileSpec[];
  /** Uploaded by Batch after the task ends (e.g. a node's outputs). */
  outputFiles?: OutputFileSpec[];
  environment?: NameValue[];
  containerSettings?: ContainerSettingsSpec;
  maxWallClockSeconds?: number;
  /** Retries Batch makes on a nonzero exit (default 0). */
  maxTaskRetryCount?: number;
  /** Run as the pool's admin auto-user (e.g. to drive the container runtime). */
  elevated?: boolean;
}

export interface AddTaskResult {
  taskId: string;
  /** False when a task with this id and the same command line already existed (a repeated add). */
  created: boolean;
}

export interface TaskFailure {
  category?: string;
  code: string;
  message: string;
}

export interface TaskSnapshot {
  taskId: string;
  state: 'active' | 'preparing' | 'running' | 'completed' | 'missing';
  exitCode?: number;
  result?: string;
  failure?: TaskFailure;
  /** Where it ran (for a multi-instance task: the primary's node). */
  nodeId?: string;
  nodeAffinityId?: string;
  poolId?: string;
  /** Relative to the node root; read node files under it. */
  taskRootDirectory?: string;
  startTime?: string;
  endTime?: string;
  retryCount?: number;
  requeueCount?: number;
}

export interface SubtaskSnapshot {
  /** 1..numberOfInstances-1 (the primary is the task itself). */
  id: number;
  state: string;
  exitCode?: number;
  result?: string;
  failure?: TaskFailure;
  nodeId?: string;
  nodeAffinityId?: string;
  taskRootDirectory?: string;
  startTime?: string;
  endTime?: string;
}

export const taskResource = (batchJobId: string, taskId: string) => `task ${batchJobId}/${taskId}`;

/** The TaskAddParameter for a node-pinned task. Pure; exported for tests. */
export function buildNodeTaskParameter(spec: NodeTaskSpec): BatchServiceModels.TaskAddParameter {
  return stripUndefined({
    id: spec.id,
    commandLine: spec.commandLine,
    affinityInfo: { affinityId: spec.affinityId },
    resourceFiles: toResourceFiles(spec.resourceFiles),
    outputFiles: toOutputFiles(spec.outputFiles),
    environmentSettings: toEnvironmentSettings(spec.environment),
    containerSettings: toContainerSettings(spec.containerSettings),
    constraints: stripUndefined({
      maxWallClockTime: secondsToDuration(spec.maxWallClockSeconds),
      maxTaskRetryCount: spec.maxTaskRetryCount ?? 0,
    }),
    userIdentity: spec.elevated ? { autoUser: { scope: 'pool' as const, elevationLevel: 'admin' as const } } : undefined,
  });
}

/**
 * Adds a task. Task ids are unique in a job, so a repeated add (the activity ran twice, or a retried
 * call whose first try went through) finds the task: same command line = success, else a conflict.
 * A repeat can also find the job completed (JobCompleted): the first add went through and the job ended
 * with its tasks (onAllTasksComplete), as when the orchestration's history was rolled back past the add
 * by a storage loss while Batch kept going. The task, if it is there, is the answer; if not, the refusal is.
 */
export async function addTask(
  ctx: BatchContext,
  batchJobId: string,
  task: BatchServiceModels.TaskAddParameter,
  operation = 'tasks.add',
): Promise<AddTaskResult> {
  const resource = taskResource(batchJobId, task.id);
  let refused: BatchError;
  try {
    await callWithRetry(ctx.retry, { operation, resource }, () => ctx.client.task.add(batchJobId, task));
    return { taskId: task.id, created: true };
  } catch (err) {
    if (!(err instanceof BatchError) || (err.code !== 'TaskExists' && err.code !== 'JobCompleted')) throw err;
    refused = err;
  }
  const existing = await callWithRetry(ctx.retry, { operation: 'tasks.get', resource }, () =>
    ctx.client.task.get(batchJobId, task.id, { taskGetOptions: { select: 'id,commandLine,multiInstanceSettings' } }),
  ).catch((err: unknown) => {
    if (refused.code === 'JobCompleted' && isGone(err, ['TaskNotFound'])) throw refused;
    throw err;
  });
  const sameCommand = existing.commandLine === task.commandLine;
  const sameInstances = (existing.multiInstanceSettings?.numberOfInstances ?? 1) === (task.multiInstanceSettings?.numberOfInstances ?? 1);
  if (sameCommand && sameInstances) return { taskId: task.id, created: false };
  throw new BatchError({
    code: 'TaskExists',
    status: 409,
    operation,
    resource,
    message: 'a task with this id already exists with a different command line or instance count',
  });
}

/** Adds a task pinned (by affinity, a hint) to one node. */
export function addNodeTask(ctx: BatchContext, batchJobId: string, spec: NodeTaskSpec): Promise<AddTaskResult> {
  return addTask(ctx, batchJobId, buildNodeTaskParameter(spec), 'tasks.addNodeTask');
}

function failureOf(f: BatchServiceModels.TaskFailureInformation | undefined): TaskFailure | undefined {
  return f ? stripUndefined({ category: f.category, code: f.code ?? 'Failure', message: f.message ?? '' }) : undefined;
}

function toTaskSnapshot(taskId: string, t: BatchServiceModels.CloudTask): TaskSnapshot {
  const ex = t.executionInfo;
  return stripUndefined({
    taskId,
    state: t.state ?? 'active',
    exitCode: ex?.exitCode,
    result: ex?.result,
    failure: failureOf(ex?.failureInfo),
    nodeId: t.nodeInfo?.nodeId,
    nodeAffinityId: t.nodeInfo?.affinityId,
    poolId: t.nodeInfo?.poolId,
    taskRootDirectory: t.nodeInfo?.taskRootDirectory,
    startTime: iso(ex?.startTime),
    endTime: iso(ex?.endTime),
    retryCount: ex?.retryCount,
    requeueCount: ex?.requeueCount,
  });
}

/** One task's state; `missing` when it (or its job) does not exist. */
export async function getTask(ctx: BatchContext, batchJobId: string, taskId: string): Promise<TaskSnapshot> {
  try {
    const t = await callWithRetry(ctx.retry, { operation: 'tasks.get', resource: taskResource(batchJobId, taskId) }, () =>
      ctx.client.task.get(batchJobId, taskId),
    );
    return toTaskSnapshot(taskId, t);
  } catch (err) {
    if (isGone(err, ['TaskNotFound', 'JobNotFound'])) return { taskId, state: 'missing' };
    throw err;
  }
}

/** What a look at several tasks needs of each. */
const TASK_SELECT = 'id,state,executionInfo,nodeInfo';

/**
 * Several tasks' states: one GET for a single task, else one list of the job's tasks (pages of 1000, only the fields
 * a snapshot reads) instead of a GET per task, so a look at N nodes' tasks costs the same at 4 and at 100 nodes
 * (docs/call-budgets.md). A task not listed, or a job that is gone, is `missing`.
 */
export async function getTasks(ctx: BatchContext, batchJobId: string, taskIds: readonly string[]): Promise<Map<string, TaskSnapshot>> {
  const missing = (id: string): TaskSnapshot => ({ taskId: id, state: 'missing' });
  if (taskIds.length === 0) return new Map();
  if (taskIds.length === 1) return new Map([[taskIds[0], await getTask(ctx, batchJobId, taskIds[0])]]);
  let listed: TaskSnapshot[];
  try {
    listed = await listTasks(ctx, batchJobId, { select: TASK_SELECT });
  } catch (err) {
    if (isGone(err, ['JobNotFound'])) listed = [];
    else throw err;
  }
  const byId = new Map(listed.map((t) => [t.taskId, t]));
  return new Map(taskIds.map((id) => [id, byId.get(id) ?? missing(id)]));
}

/** All tasks of a job in one call (cheaper than one get per task when observing many node tasks). */
export async function listTasks(ctx: BatchContext, batchJobId: string, opts: { select?: string } = {}): Promise<TaskSnapshot[]> {
  const what = { operation: 'tasks.list', resource: `job ${batchJobId}` };
  const options = opts.select ? { taskListOptions: { select: opts.select } } : undefined;
  const tasks = await collectPages(
    ctx.retry,
    what,
    () => ctx.client.task.list(batchJobId, options),
    (link) => ctx.client.task.listNext(link),
  );
  return tasks.map((t) => toTaskSnapshot(t.id ?? '', t));
}

/**
 * The subtasks of a multi-instance task (ids 1..N-1): which node ran each and how its coordination
 * command ended. The primary is the task itself: see getTask (nodeId, exitCode).
 */
export async function listSubtasks(ctx: BatchContext, batchJobId: string, taskId: string): Promise<SubtaskSnapshot[]> {
  const result = await callWithRetry(ctx.retry, { operation: 'tasks.listSubtasks', resource: taskResource(batchJobId, taskId) }, () =>
    ctx.client.task.listSubtasks(batchJobId, taskId),
  );
  return (result.value ?? [])
    .map((s) =>
      stripUndefined({
        id: s.id ?? 0,
        state: s.state ?? 'unknown',
        exitCode: s.exitCode,
        result: s.result,
        failure: failureOf(s.failureInfo),
        nodeId: s.nodeInfo?.nodeId,
        nodeAffinityId: s.nodeInfo?.affinityId,
        taskRootDirectory: s.nodeInfo?.taskRootDirectory,
        startTime: iso(s.startTime),
        endTime: iso(s.endTime),
      }),
    )
    .sort((a, b) => a.id - b.id);
}

/** Ends a task (e.g. a pull stuck on a bad node). A completed or missing task is not an error. */
export async function terminateTask(ctx: BatchContext, batchJobId: string, taskId: string): Promise<void> {
  try {
    await callWithRetry(ctx.retry, { operation: 'tasks.terminate', resource: taskResource(batchJobId, taskId) }, () =>
      ctx.client.task.terminate(batchJobId, taskId),
    );
  } catch (err) {
    if (isGone(err, ['TaskNotFound', 'JobNotFound', 'TaskCompleted'])) return;
    throw err;
  }
}

/** Deletes a task and its files (e.g. to re-add a failed pull under the same id). Gone = done. */
export async function deleteTask(ctx: BatchContext, batchJobId: string, taskId: string): Promise<void> {
  try {
    await callWithRetry(ctx.retry, { operation: 'tasks.delete', resource: taskResource(batchJobId, taskId) }, () =>
      ctx.client.task.deleteMethod(batchJobId, taskId),
    );
  } catch (err) {
    if (isGone(err, ['TaskNotFound', 'JobNotFound'])) return;
    throw err;
  }
}
