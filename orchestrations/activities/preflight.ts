import type { BatchTaskRef, MpiTaskRequest } from '../../shared/core/contract';
import { batchContext } from '../../shared/services';
import { getTask, listSubtasks, readTaskFile, type BatchContext } from '../../shared/adapters/batch';
import { failedSubtaskStderr, mpiTaskAdd, mpiTaskObserve } from './mpi';
import { STDERR_TAIL_LINES, tailLines } from '../../shared/core/planning/failureExplain';
import { parsePreflightOutput, type PreflightRun } from '../../shared/core/planning/preflight';
import { registerActivity } from './registration';

/** Adds the preflight check: a multi-instance task added like the MPI task (a repeated add finds it), never retried by Batch. */
export function preflightTaskAdd(input: MpiTaskRequest): Promise<void> {
  return mpiTaskAdd({ ...input, maxTaskRetryCount: 0 });
}

/** Enough for a hundred nodes' probe lines and pairs. */
const STDOUT_BYTES = 128 * 1024;

/**
 * The check's exit code and failure, and its master's stdout parsed (shared/core/planning/preflight.ts). The output is read
 * whatever the exit code: a check that failed half-way still names the nodes it reached. A check that did not end 0
 * also keeps, to explain the failure, its master's node and stderr tail and the failed subtasks with their stderr tails.
 */
export async function collectPreflight(ctx: BatchContext, input: BatchTaskRef): Promise<PreflightRun> {
  const task = await getTask(ctx, input.batchJobId, input.taskId);
  const stdout =
    task.state === 'missing'
      ? undefined
      : await readTaskFile(ctx, input.batchJobId, input.taskId, 'stdout.txt', { maxBytes: STDOUT_BYTES }).catch(() => undefined);
  const failed = task.state !== 'missing' && ((task.exitCode ?? 0) !== 0 || !!task.failure);
  const evidence = failed ? await failureEvidence(ctx, input, task.poolId) : {};
  return {
    ...(task.exitCode !== undefined ? { exitCode: task.exitCode } : {}),
    ...(failed && task.nodeId ? { masterNode: task.nodeId } : {}),
    ...evidence,
    ...(task.state === 'missing'
      ? { failure: 'the preflight task disappeared (job deleted?)' }
      : task.failure
        ? { failure: `${task.failure.code}: ${task.failure.message}` }
        : {}),
    report: parsePreflightOutput(stdout?.content ?? ''),
  };
}

/** The master's stderr tail and the failed subtasks (with their own stderr tails) of a check that failed. */
async function failureEvidence(
  ctx: BatchContext,
  input: BatchTaskRef,
  poolId: string | undefined,
): Promise<Pick<PreflightRun, 'stderrTail' | 'failedSubtasks'>> {
  const [stderr, subtasks] = await Promise.all([
    readTaskFile(ctx, input.batchJobId, input.taskId, 'stderr.txt', { maxBytes: 4 * 1024 }).catch(() => undefined),
    listSubtasks(ctx, input.batchJobId, input.taskId).catch(() => []),
  ]);
  const tails = await failedSubtaskStderr(ctx, poolId, subtasks);
  const failedSubtasks = subtasks
    .filter((s) => s.id !== 0 && s.exitCode !== undefined && s.exitCode !== 0)
    .map((s) => ({ id: s.id, nodeId: s.nodeId, exitCode: s.exitCode, ...(tails.has(s.id) ? { stderrTail: tails.get(s.id) } : {}) }));
  const tail = stderr?.content?.trim() ? tailLines(stderr.content, STDERR_TAIL_LINES) : undefined;
  return { ...(tail ? { stderrTail: tail } : {}), ...(failedSubtasks.length ? { failedSubtasks } : {}) };
}

export function preflightCollect(input: BatchTaskRef): Promise<PreflightRun> {
  return collectPreflight(batchContext(), input);
}

/** The check's state, observed like the MPI task's. */
export function preflightObserve(input: BatchTaskRef): ReturnType<typeof mpiTaskObserve> {
  return mpiTaskObserve(input);
}

registerActivity('preflightTaskAdd', preflightTaskAdd);
registerActivity('preflightObserve', preflightObserve);
registerActivity('preflightCollect', preflightCollect);
