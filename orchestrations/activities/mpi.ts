import type { BatchTaskRef, MpiResult, MpiTaskObservation, MpiTaskRequest } from '../../shared/core/contract';
import { appConfig, batchContext } from '../../shared/services';
import {
  addMpiTask,
  getTask,
  listSubtasks,
  readNodeFile,
  readTaskFile,
  terminateTask,
  type BatchContext,
  type SubtaskSnapshot,
} from '../../shared/adapters/batch';
import { STDERR_TAIL_LINES } from '../../shared/core/planning/failureExplain';
import { registerActivity } from './registration';

export async function mpiTaskAdd(input: MpiTaskRequest): Promise<void> {
  const config = appConfig();
  await addMpiTask(batchContext(), input, { clientId: config.poolIdentity?.clientId, urlTemplate: config.keyVaultUrlTemplate });
}

export async function mpiTaskObserve(input: BatchTaskRef): Promise<MpiTaskObservation> {
  const t = await getTask(batchContext(), input.batchJobId, input.taskId);
  return { state: t.state, startTime: t.startTime, endTime: t.endTime, ...(t.requeueCount ? { requeueCount: t.requeueCount } : {}) };
}

export async function mpiTaskTerminate(input: BatchTaskRef): Promise<void> {
  await terminateTask(batchContext(), input.batchJobId, input.taskId);
}

export interface MpiResultDeps {
  batch: BatchContext;
  /** The Batch account URL the log locations are built on (the logs endpoint reads them back through it). */
  accountUrl: string;
}

/** The end of a task's output kept in the job result. */
const TAIL_LINES = 40;

/** At most this many failed subtasks' stderr are read (the job's error names the first; a 100-node failure stays cheap). */
export const FAILED_SUBTASK_READS = 4;

/**
 * The last lines of the stderr of the subtasks on other nodes than the master that ended non-zero (their coordination
 * command's), by subtask id, read through Batch's node file API (`<taskRootDirectory>/stderr.txt` on the subtask's
 * node) before the pool goes. A read that fails gives nothing (never the job's failure).
 */
export async function failedSubtaskStderr(ctx: BatchContext, poolId: string | undefined, subtasks: readonly SubtaskSnapshot[]): Promise<Map<number, string>> {
  const failed = subtasks
    .filter((s) => s.id !== 0 && s.exitCode !== undefined && s.exitCode !== 0 && s.nodeId && s.taskRootDirectory)
    .slice(0, FAILED_SUBTASK_READS);
  const tails = new Map<number, string>();
  if (!poolId) return tails;
  await Promise.all(
    failed.map(async (s) => {
      const file = await readNodeFile(ctx, poolId, s.nodeId as string, `${s.taskRootDirectory}/stderr.txt`, { maxBytes: 4 * 1024 }).catch(() => undefined);
      const tail = lastLines(file?.content ?? '', STDERR_TAIL_LINES);
      if (tail.trim()) tails.set(s.id, tail);
    }),
  );
  return tails;
}

/**
 * Exit codes of the master and every subtask, where their logs are, and the last lines of the master's output.
 * When a subtask fails (its coordination command exited non-zero), Batch fails the whole task and the result's
 * exit code is the subtask's, even where Batch reports the primary's 0.
 * A task that no longer exists (its job was deleted) gives exit code -1, the failure "the MPI task disappeared
 * (job deleted?)", no subtasks, an empty stdout tail and only the master's (now empty) log location, node "master".
 * A task Batch reports no exit code for (ended before its program exited: terminated while requeued after a node
 * was lost, or gone) is `noExitCode` with the placeholder -1: never 0, which read as a success.
 */
export async function collectMpiResult({ batch: ctx, accountUrl }: MpiResultDeps, input: BatchTaskRef): Promise<MpiResult> {
  const task = await getTask(ctx, input.batchJobId, input.taskId);
  // The pool is billed until cleanup, which waits for this activity: the reads go out together.
  const [subtasks, stdout, stderr] = await Promise.all([
    task.state === 'missing' ? [] : listSubtasks(ctx, input.batchJobId, input.taskId),
    readTaskFile(ctx, input.batchJobId, input.taskId, 'stdout.txt', { maxBytes: 16 * 1024 }).catch(() => undefined),
    readTaskFile(ctx, input.batchJobId, input.taskId, 'stderr.txt', { maxBytes: 8 * 1024 }).catch(() => undefined),
  ]);
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
  const subtaskStderr = await failedSubtaskStderr(ctx, task.poolId, subtasks);
  const reported = task.state === 'missing' ? undefined : task.exitCode;
  // A failed subtask's code stands for the task when the primary reported 0 or nothing.
  const exitCode = (reported === undefined || reported === 0) && failedSub ? (failedSub.exitCode ?? -1) : reported;
  // Batch reports output files it could not upload as the task's failure; the program's exit code stands.
  const uploadFailed = task.failure?.code.startsWith('FileUpload') ? task.failure : undefined;
  return {
    taskId: input.taskId,
    exitCode: exitCode ?? -1,
    ...(exitCode === undefined ? { noExitCode: true as const } : {}),
    failure:
      task.state === 'missing'
        ? 'the MPI task disappeared (job deleted?)'
        : task.failure && !uploadFailed
          ? `${task.failure.code}: ${task.failure.message}`
          : failedSub
            ? `subtask ${failedSub.id} on ${failedSub.nodeId} exited ${failedSub.exitCode}`
            : undefined,
    subtasks: subtasks.map((s) => ({
      id: s.id,
      nodeId: s.nodeId,
      exitCode: s.exitCode,
      state: s.state,
      taskRootDirectory: s.taskRootDirectory,
      ...(subtaskStderr.has(s.id) ? { stderrTail: subtaskStderr.get(s.id) } : {}),
    })),
    logs,
    stdoutTail: lastLines(stdout?.content ?? '', TAIL_LINES),
    stderrTail: lastLines(stderr?.content ?? '', TAIL_LINES) || undefined,
    startTime: task.startTime,
    endTime: task.endTime,
    taskRootDirectory: task.taskRootDirectory,
    fileUploadFailure: uploadFailed ? `${uploadFailed.code}: ${uploadFailed.message}` : undefined,
  };
}

/** The last `n` lines of a text (a final newline does not count as an empty last line). */
function lastLines(text: string, n: number): string {
  return text.replace(/\n$/, '').split('\n').slice(-n).join('\n');
}

export function mpiResultCollect(input: BatchTaskRef): Promise<MpiResult> {
  return collectMpiResult({ batch: batchContext(), accountUrl: appConfig().batch.accountUrl }, input);
}

registerActivity('mpiTaskAdd', mpiTaskAdd);
registerActivity('mpiTaskObserve', mpiTaskObserve);
registerActivity('mpiResultCollect', mpiResultCollect);
registerActivity('mpiTaskTerminate', mpiTaskTerminate);
