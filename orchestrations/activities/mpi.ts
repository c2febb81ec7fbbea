import type { BatchTaskRef, MpiResult, MpiTaskObservation } from '../../shared/contract';
import { appConfig, batchContext } from '../../shared/services';
import { addMpiTask, getTask, listSubtasks, readTaskFile } from '../../shared/batch';
import type { MpiTaskRequestShape } from '../../shared/planning/mpiTaskRequest';
import { registerActivity } from '../runtime/activityCalls';

export async function mpiTaskAdd(input: MpiTaskRequestShape): Promise<void> {
  await addMpiTask(batchContext(), input.batchJobId, {
    id: input.taskId,
    numberOfInstances: input.numberOfInstances,
    coordinationCommandLine: input.coordinationCommandLine,
    applicationCommandLine: input.applicationCommandLine,
    commonResourceFiles: input.commonResourceFiles,
    environment: input.environment,
    maxWallClockSeconds: input.maxWallClockSeconds,
    maxTaskRetryCount: input.maxTaskRetryCount ?? 0,
  });
}

export async function mpiTaskObserve(input: BatchTaskRef): Promise<MpiTaskObservation> {
  const t = await getTask(batchContext(), input.batchJobId, input.taskId);
  return { state: t.state, startTime: t.startTime, endTime: t.endTime };
}

/** Exit codes of the master and every subtask, where their logs are, and the end of the master's output. */
export async function mpiResultCollect(input: BatchTaskRef): Promise<MpiResult> {
  const ctx = batchContext();
  const task = await getTask(ctx, input.batchJobId, input.taskId);
  // The pool is billed until cleanup, which waits for this activity: the reads go out together.
  const [subtasks, stdout, stderr] = await Promise.all([
    task.state === 'missing' ? [] : listSubtasks(ctx, input.batchJobId, input.taskId),
    readTaskFile(ctx, input.batchJobId, input.taskId, 'stdout.txt', { maxBytes: 16 * 1024 }).catch(() => undefined),
    readTaskFile(ctx, input.batchJobId, input.taskId, 'stderr.txt', { maxBytes: 8 * 1024 }).catch(() => undefined),
  ]);
  const { accountUrl } = appConfig().batch;
  const base = `${accountUrl}/jobs/${input.batchJobId}/tasks/${input.taskId}`;
  const logs = [
    { node: task.nodeId ?? 'master', stdout: `${base}/files/stdout.txt`, stderr: `${base}/files/stderr.txt` },
    ...subtasks
      .filter((s) => s.id !== 0 && s.nodeId && s.taskRootDirectory)
      .map((s) => ({
        node: s.nodeId as string,
        stdout: `${accountUrl}/pools/${task.poolId}/nodes/${s.nodeId}/files/${s.taskRootDirectory}/stdout.txt`,
        stderr: `${accountUrl}/pools/${task.poolId}/nodes/${s.nodeId}/files/${s.taskRootDirectory}/stderr.txt`,
      })),
  ];
  const failedSub = subtasks.find((s) => s.exitCode !== undefined && s.exitCode !== 0);
  const exitCode = task.state === 'missing' ? -1 : task.exitCode ?? (task.failure ? -1 : 0);
  return {
    taskId: input.taskId,
    exitCode: exitCode === 0 && failedSub ? failedSub.exitCode ?? -1 : exitCode,
    failure: task.state === 'missing'
      ? 'the MPI task disappeared (job deleted?)'
      : task.failure
        ? `${task.failure.code}: ${task.failure.message}`
        : failedSub
          ? `subtask ${failedSub.id} on ${failedSub.nodeId} exited ${failedSub.exitCode}`
          : undefined,
    subtasks: subtasks.map((s) => ({ id: s.id, nodeId: s.nodeId, exitCode: s.exitCode, state: s.state })),
    logs,
    stdoutTail: stdout?.content.split('\n').slice(-40).join('\n') ?? '',
    stderrTail: stderr?.content.split('\n').slice(-40).join('\n') || undefined,
    startTime: task.startTime,
    endTime: task.endTime,
  };
}

registerActivity('mpiTaskAdd', mpiTaskAdd);
registerActivity('mpiTaskObserve', mpiTaskObserve);
registerActivity('mpiResultCollect', mpiResultCollect);
