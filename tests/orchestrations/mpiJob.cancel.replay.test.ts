/**
 * Cancelling the real mpiJob orchestrator in each stage, replayed in memory against typed fakes: the `cancel`
 * event is raised right after the orchestrator recorded that it entered the stage (its jobTransition ran), as a
 * user pressing cancel on what the dashboard just showed. Every case must end Cancelled with the user's reason,
 * clean up exactly what existed by then, record the outcome once, and schedule nothing after that record.
 */
import { healthyJob, poolObservation, type FakeJob } from './fakeActivities';
import {
  cancelOnEntering,
  cleanupSteps,
  expectFinishedOnceAndLast,
  pipelineJob,
  replay,
  scheduled,
  scheduledInputs,
  stagesEntered,
  threeShards,
} from './jobReplay';

const REASON = 'wrong input deck, resubmitting';

/** A pool still allocating at the first look (so Provisioning waits), then a healthy job whose MPI task keeps running. */
function busyJob(): FakeJob {
  let observed = 0;
  return healthyJob({
    poolObserve: () => poolObservation(++observed === 1 ? ['starting', 'starting'] : ['idle', 'idle']),
    inputsList: threeShards,
    mpiTaskObserve: () => ({ state: 'running', startTime: '2030-01-01T01:00:00.000Z' }),
  });
}

describe('mpiJob orchestrator cancelled in each stage, replayed', () => {
  it('Provisioning: cancelled with the reason; the pool it created is deleted; no Batch job, nothing staged', async () => {
    const job = busyJob();
    const r = await replay(pipelineJob('cancel-provisioning'), job, cancelOnEntering('Provisioning', REASON));
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: REASON });
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'CleaningUp']);
    expect(scheduled(r.history)).not.toContain('batchJobCreate');
    expect(cleanupSteps(r)).toEqual(['poolDelete']);
    expect(scheduledInputs(r.history, 'poolDelete')).toEqual([{ poolId: scheduledInputs(r.history, 'poolCreate')[0].poolId }]);
    expectFinishedOnceAndLast(r, job);
  });

  it('PullingImages: cancelled with the reason; the Batch job is terminated and the pool deleted; nothing staged', async () => {
    const job = busyJob();
    const r = await replay(pipelineJob('cancel-pulling'), job, cancelOnEntering('PullingImages', REASON));
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: REASON });
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'PullingImages', 'CleaningUp']);
    expect(scheduled(r.history)).not.toContain('inputsList');
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete']);
    const batchJobId = scheduledInputs(r.history, 'batchJobCreate')[0].batchJobId;
    expect(scheduledInputs(r.history, 'batchJobTerminate')).toEqual([{ batchJobId, reason: 'Cancelled' }]);
    expectFinishedOnceAndLast(r, job);
  });

  it('StagingData: cancelled with the reason once the copies in flight are done; the staged shards are deleted too', async () => {
    const job = busyJob();
    const r = await replay(pipelineJob('cancel-staging'), job, cancelOnEntering('StagingData', REASON));
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: REASON });
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'PullingImages', 'StagingData', 'CleaningUp']);
    const copied = scheduledInputs(r.history, 'shardCopy');
    expect(copied.length).toBeGreaterThan(0);
    expect(scheduled(r.history)).not.toContain('shardUrls');
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete', 'stagedDataDelete']);
    // Every container a shard was copied into is deleted, and nothing else.
    const written = [...new Set(copied.map((c) => `${c.shard.account}/${c.shard.container}`))].sort();
    const deleted = scheduledInputs(r.history, 'stagedDataDelete')
      .flatMap((d) => d.containers.map((c) => `${c.account}/${c.container}`))
      .sort();
    expect(deleted).toEqual(written);
    expectFinishedOnceAndLast(r, job);
  });

  it('Running: cancelled with the reason while the MPI task runs; job terminated, pool deleted, staged shards deleted', async () => {
    const job = busyJob();
    const r = await replay(pipelineJob('cancel-running'), job, cancelOnEntering('Running', REASON));
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: REASON });
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp']);
    expect(scheduled(r.history)).toContain('mpiTaskAdd');
    expect(scheduled(r.history)).not.toContain('mpiResultCollect');
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete', 'stagedDataDelete']);
    const written = [...new Set(scheduledInputs(r.history, 'shardCopy').map((c) => `${c.shard.account}/${c.shard.container}`))].sort();
    expect(
      scheduledInputs(r.history, 'stagedDataDelete')
        .flatMap((d) => d.containers.map((c) => `${c.account}/${c.container}`))
        .sort(),
    ).toEqual(written);
    expectFinishedOnceAndLast(r, job);
  });
});
