import type { BatchTaskRef, StagingContainerRef } from '../../shared/core/contract';
import type { TerminalState } from '../../shared/core/state/states';
import { activityFailureMessage, retryOptions, type ActivityTask } from '../runtime/activityCalls';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';
import { awaitTaskCompleted } from './workloadData';

export interface CleanupRequest {
  batchJobId?: string;
  pool?: { poolId: string; createdByUs: boolean };
  deletePool: 'always' | 'onSuccess' | 'never';
  /** `settle`: waits for shard copies still running (an overlapped staging), so none writes after the deletion. */
  staging: { containers: StagingContainerRef[]; keep: boolean; settle?: () => Orchestration<void> };
  /**
   * The MPI task whose output files Batch still has to upload (a cancel or failure while it may run, on a job with
   * outputs): the pool waits until the task completed after the job's termination.
   */
  awaitOutputs?: BatchTaskRef;
}

/** Polls of the MPI task, after terminating its job, before the pool is deleted anyway. */
const AWAIT_OUTPUT_POLLS = 30;

/** Cleanup steps are retried a few times more than others: they are idempotent and a transient error must not leak a pool. */
const CLEANUP_RETRY = retryOptions(2_000, 4);

type CleanupActivity = 'batchJobTerminate' | 'poolDelete' | 'stagedDataDelete';

/**
 * Cleanup always runs, after success, failure, timeout or cancel. Each step is independent: one failing
 * step does not stop the others, and what could not be cleaned is reported (the sweep retries it later).
 * Terminating the Batch job and deleting a pool we own are requested together: the pool's deletion is what
 * stops the billing, so it must not wait a round trip behind the job (idle time, docs/operations.md).
 */
export function* cleanup(run: PipelineRun, req: CleanupRequest, outcome: TerminalState): Orchestration<{ done: string[]; failed: string[] }> {
  const { ctx } = run;
  const done: string[] = [];
  const failed: string[] = [];
  const together = function* (steps: { name: string; task: ActivityTask<CleanupActivity> }[]): Orchestration<void> {
    let pending = steps;
    while (pending.length) {
      yield ctx.df.Task.any(pending.map((p) => p.task.task));
      for (const p of pending) {
        if (p.task.task.isCompleted) done.push(p.name);
        else if (p.task.task.isFaulted) failed.push(`${p.name}: ${activityFailureMessage(p.task.task.result)}`);
      }
      pending = pending.filter((p) => !p.task.task.isCompleted && !p.task.task.isFaulted);
      run.report({ progress: { cleanup: { done: [...done] } } });
    }
  };

  const deletePool = req.pool?.createdByUs && (req.deletePool === 'always' || (req.deletePool === 'onSuccess' && outcome === 'Succeeded'));
  const terminate = () => ({
    name: 'batch job terminated',
    task: run.start('batchJobTerminate', { batchJobId: req.batchJobId as string, reason: outcome }, CLEANUP_RETRY),
  });
  const removePool = () => ({ name: 'pool deleted', task: run.start('poolDelete', { poolId: (req.pool as { poolId: string }).poolId }, CLEANUP_RETRY) });
  if (req.awaitOutputs && req.batchJobId) {
    // Outputs first: terminating the job ends the MPI task and Batch then uploads its output files; only after that
    // may the pool go (its deletion would end the uploads).
    yield* together([terminate()]);
    if (yield* awaitTaskCompleted(run, req.awaitOutputs, AWAIT_OUTPUT_POLLS)) done.push('outputs uploaded');
    else failed.push('outputs: the MPI task had not finished uploading when the pool was deleted');
    if (req.pool && deletePool) yield* together([removePool()]);
  } else {
    // Terminating the job kills what still runs and runs the job release task (which removes containers); on a
    // pool being deleted the nodes go anyway.
    yield* together([...(req.batchJobId ? [terminate()] : []), ...(req.pool && deletePool ? [removePool()] : [])]);
  }
  // After the pool's deletion was requested: a copy still running must not hold up the end of the billing.
  if (req.staging.settle) yield* req.staging.settle();
  if (req.staging.containers.length && !req.staging.keep) {
    yield* together([{ name: 'staged data deleted', task: run.start('stagedDataDelete', { containers: req.staging.containers }, CLEANUP_RETRY) }]);
  }
  return { done, failed };
}

/** How long the pipeline waits for a deleted pool to be gone before it gives its admission back anyway. */
export const POOL_GONE_WAIT_MS = 15 * 60_000;

/**
 * After cleanup deleted the job's pool: wait until Batch no longer lists it. Its nodes count against the account's
 * core quota until they are deallocated, so admission gets the capacity back only then (a pool created earlier would
 * meet AccountCoreQuotaReached). Gives up after POOL_GONE_WAIT_MS, or when the pool cannot be observed: the job must
 * still finish, and a quota error is retried by the next job's provisioning.
 */
export function* waitForPoolGone(run: PipelineRun, poolId: string): Orchestration<boolean> {
  const until = run.now().getTime() + POOL_GONE_WAIT_MS;
  for (let attempt = 0; run.now().getTime() < until; attempt++) {
    let state: string;
    try {
      state = (yield* run.call('poolObserve', { poolId })).state;
    } catch {
      return false;
    }
    if (state === 'missing') return true;
    yield* run.pause(run.pollDelayMs(attempt));
  }
  return false;
}
