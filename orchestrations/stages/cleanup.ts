import * as df from 'durable-functions';
import { Activities, JobOutcome } from '../contracts';
import { Orchestration, PipelineRun } from '../pipeline/run';

export interface CleanupRequest {
  batchJobId?: string;
  pool?: { poolId: string; createdByUs: boolean };
  deletePool: 'always' | 'onSuccess' | 'never';
  staging: { containers: { account: string; container: string }[]; keep: boolean };
}

/** Cleanup steps are retried a few times: they are idempotent and a transient error must not leak a pool. */
const cleanupRetry = (() => {
  const r = new df.RetryOptions(2_000, 4);
  r.backoffCoefficient = 2;
  return r;
})();

/**
 * Cleanup always runs, after success, failure, timeout or cancel. Each step is independent: one failing
 * step does not stop the others, and what could not be cleaned is reported (the sweep retries it later).
 * Terminating the Batch job and deleting a pool we own are requested together: the pool's deletion is what
 * stops the billing, so it must not wait a round trip behind the job (idle time, docs/operations.md).
 */
export function* cleanup(run: PipelineRun, req: CleanupRequest, outcome: JobOutcome['state']): Orchestration<{ done: string[]; failed: string[] }> {
  const { ctx } = run;
  const done: string[] = [];
  const failed: string[] = [];
  const together = function* (steps: { name: string; activity: string; input: unknown }[]): Orchestration<void> {
    let pending = steps.map((s) => ({ name: s.name, task: ctx.df.callActivityWithRetry(s.activity, cleanupRetry, s.input) }));
    while (pending.length) {
      yield ctx.df.Task.any(pending.map((p) => p.task));
      for (const p of pending) {
        if (p.task.isCompleted) done.push(p.name);
        else if (p.task.isFaulted) failed.push(`${p.name}: ${describe(p.task.result)}`);
      }
      pending = pending.filter((p) => !p.task.isCompleted && !p.task.isFaulted);
      run.report({ progress: { cleanup: { done: [...done] } } });
    }
  };

  const deletePool = req.pool?.createdByUs && (req.deletePool === 'always' || (req.deletePool === 'onSuccess' && outcome === 'Succeeded'));
  // Terminating the job kills what still runs and runs the job release task (which removes containers); on a
  // pool being deleted the nodes go anyway.
  yield* together([
    ...(req.batchJobId ? [{ name: 'batch job terminated', activity: Activities.batchJobTerminate, input: { batchJobId: req.batchJobId, reason: outcome } }] : []),
    ...(req.pool && deletePool ? [{ name: 'pool deleted', activity: Activities.poolDelete, input: { poolId: req.pool.poolId } }] : []),
  ]);
  if (req.staging.containers.length && !req.staging.keep) {
    yield* together([{ name: 'staged data deleted', activity: Activities.stagedDataDelete, input: { containers: req.staging.containers } }]);
  }
  return { done, failed };
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
