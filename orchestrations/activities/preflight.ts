import type { BatchTaskRef } from '../../shared/contract';
import { batchContext } from '../../shared/services';
import { getTask, readTaskFile, type BatchContext } from '../../shared/batch';
import { mpiTaskAdd, mpiTaskObserve } from './mpi';
import { parsePreflightOutput, type PreflightRun } from '../../shared/planning/preflight';
import type { MpiTaskRequestShape } from '../../shared/planning/mpiTaskRequest';
import { registerActivity } from './registration';

/** Adds the preflight check: a multi-instance task added like the MPI task (a repeated add finds it), never retried by Batch. */
export function preflightTaskAdd(input: MpiTaskRequestShape): Promise<void> {
  return mpiTaskAdd({ ...input, maxTaskRetryCount: 0 });
}

/** Enough for a hundred nodes' probe lines and pairs. */
const STDOUT_BYTES = 128 * 1024;

/**
 * The check's exit code and failure, and its master's stdout parsed (shared/planning/preflight.ts). The output is read
 * whatever the exit code: a check that failed half-way still names the nodes it reached.
 */
export async function collectPreflight(ctx: BatchContext, input: BatchTaskRef): Promise<PreflightRun> {
  const task = await getTask(ctx, input.batchJobId, input.taskId);
  const stdout = task.state === 'missing' ? undefined : await readTaskFile(ctx, input.batchJobId, input.taskId, 'stdout.txt', { maxBytes: STDOUT_BYTES }).catch(() => undefined);
  return {
    ...(task.exitCode !== undefined ? { exitCode: task.exitCode } : {}),
    ...(task.state === 'missing' ? { failure: 'the preflight task disappeared (job deleted?)' } : task.failure ? { failure: `${task.failure.code}: ${task.failure.message}` } : {}),
    report: parsePreflightOutput(stdout?.content ?? ''),
  };
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
