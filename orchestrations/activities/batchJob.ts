import type { BatchJobCreateInput } from '../../shared/core/contract';
import { batchContext } from '../../shared/services';
import { createJob, enableAutoTerminate, terminateJob } from '../../shared/adapters/batch';
import { registerActivity } from './registration';
import { refuseIfEnded } from './jobGuard';
import { jobPoolVerdict, PoolNotYours } from './pool';
import { batchJobSpec } from '../../shared/core/planning/batchRequests';

/**
 * Creates the Batch job (idempotent). The release task, which removes the job's containers from every node
 * when the job ends, needs a preparation task: Batch only runs release tasks on nodes that ran preparation.
 */
export async function batchJobCreate(input: BatchJobCreateInput): Promise<string> {
  const job = await refuseIfEnded(input.jobId, `Batch job ${input.batchJobId}`);
  // Pools have owners: the last look before the job is placed on a pool it did not create (the pool may have changed
  // hands while the job waited for its nodes, after Provisioning judged it).
  if (job?.spec?.pool.poolId !== undefined) {
    const verdict = await jobPoolVerdict(job, input.jobId, input.poolId);
    if (!verdict.allowed) throw new PoolNotYours(verdict.reason);
  }
  const result = await createJob(batchContext(), batchJobSpec(input));
  return result.batchJobId;
}

/** After the MPI task is added: the job terminates itself when its tasks are done (auto-complete). */
export async function batchJobAutoComplete(input: { batchJobId: string }): Promise<void> {
  await enableAutoTerminate(batchContext(), input.batchJobId);
}

/** Ends the job: kills what still runs and triggers the release tasks. Already ended or gone is fine. */
export async function batchJobTerminate(input: { batchJobId: string; reason?: string }): Promise<string> {
  return terminateJob(batchContext(), input.batchJobId, input.reason ? `ControlPlane:${input.reason}` : undefined);
}

registerActivity('batchJobCreate', batchJobCreate);
registerActivity('batchJobAutoComplete', batchJobAutoComplete);
registerActivity('batchJobTerminate', batchJobTerminate);
