/**
 * Pools have owners, in the orchestrator: the real mpiJob orchestrator replayed against typed fakes. A reused pool is
 * judged again when the job is placed on it (poolInspect with the job id); a refusal fails the job in Provisioning with
 * the door's sentence, and nothing of the job is ever created on the pool: no Batch job, no task, no pool deletion.
 */
import { healthyJob, poolObservation } from './fakeActivities';
import { jobInput, replay, scheduled, scheduledInputs, stagesEntered } from './jobReplay';
import { notYours } from '../../shared/core/intake/poolAccess';

const reusable = { exists: true, state: 'active', vmSize: 'standard_d8s_v5', enableInterNodeCommunication: true, taskSlotsPerNode: 1 };

describe('mpiJob on a reused pool, replayed', () => {
  it("asks for the verdict with its job id, and a pool that is no longer the owner's fails the job before anything is placed on it", async () => {
    const job = healthyJob({ poolInspect: () => ({ ...reusable, access: { allowed: false, reason: notYours('kept-pool') } }) });
    const r = await replay(jobInput('reuse-refused', { command: 'true', pool: { poolId: 'kept-pool', nodes: 2 } }), job);
    expect(scheduledInputs(r.history, 'poolInspect')).toEqual([{ poolId: 'kept-pool', jobId: 'reuse-refused' }]);
    expect(job.finished()).toMatchObject({ state: 'Failed', reason: `Provisioning: ${notYours('kept-pool')}` });
    for (const name of ['poolObserve', 'batchJobCreate', 'nodeTasksAdd', 'mpiTaskAdd', 'poolDelete', 'poolCreate'])
      expect(scheduled(r.history)).not.toContain(name);
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'CleaningUp']);
  });

  it('an allowed verdict, or none (a history from before the check), runs as before', async () => {
    for (const access of [{ allowed: true as const }, undefined]) {
      const job = healthyJob({ poolInspect: () => ({ ...reusable, ...(access ? { access } : {}) }), poolObserve: () => poolObservation(['idle', 'idle']) });
      await replay(jobInput(`reuse-ok-${access ? 'a' : 'n'}`, { command: 'true', pool: { poolId: 'kept-pool', nodes: 2 } }), job);
      expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    }
  });
});
