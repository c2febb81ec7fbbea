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
 */
export function* cleanup(run: PipelineRun, req: CleanupRequest, outcome: JobOutcome['state']): Orchestration<{ done: string[]; failed: string[] }> {
  const { ctx } = run;
  const done: string[] = [];
  const failed: string[] = [];
  const step = function* (name: string, activity: string, input: unknown): Orchestration<void> {
    try {
      yield ctx.df.callActivityWithRetry(activity, cleanupRetry, input);
      done.push(name);
    } catch (err) {
      failed.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
    }
    run.report({ progress: { cleanup: { done: [...done] } } });
  };

  // Terminating the job kills what still runs and runs the job release task (which removes containers).
  if (req.batchJobId) yield* step('batch job terminated', Activities.batchJobTerminate, { batchJobId: req.batchJobId, reason: outcome });
  const deletePool = req.pool?.createdByUs && (req.deletePool === 'always' || (req.deletePool === 'onSuccess' && outcome === 'Succeeded'));
  if (req.pool && deletePool) yield* step('pool deleted', Activities.poolDelete, { poolId: req.pool.poolId });
  if (req.staging.containers.length && !req.staging.keep) {
    yield* step('staged data deleted', Activities.stagedDataDelete, { containers: req.staging.containers });
  }
  return { done, failed };
}
