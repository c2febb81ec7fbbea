/**
 * The real mpiJob orchestrator replayed against typed fakes where Batch does not cooperate: an image pull that
 * fails on one node every time, a pool that never reaches its node count (with and without partial allocation),
 * a failed shard download, and a pool whose deletion keeps failing. Each case pins the outcome jobFinish records
 * and what cleanup did.
 */
import { healthyJob, nodeTasksFailingOn, poolObservation } from './fakeActivities';
import { EventType } from '../../local/durable/history';
import { BatchError } from '../../shared/adapters/batch';
import { activityFailureMessage } from '../../orchestrations/runtime/activityCalls';
import {
  cleanupSteps,
  expectFinishedOnceAndLast,
  jobInput,
  pipelineJob,
  replay,
  scheduled,
  scheduledInputs,
  stagesEntered,
  STEP_MS,
  threeShards,
} from './jobReplay';

const EXIT_FAILURE = 'FailureExitCode: The task exited with an exit code representing a failure';

describe('mpiJob orchestrator when Batch fails it, replayed', () => {
  it('an image pull that exits non-zero on one node every attempt: Failed naming the node and the message, after 3 attempts; cleanup runs', async () => {
    const job = healthyJob({ inputsList: threeShards });
    job.fakes.nodeTasksObserve = nodeTasksFailingOn(job, 'pull-', 'node-1', {
      exitCode: 1,
      failure: EXIT_FAILURE,
      outputTail: 'Error response from daemon: layer sha256:9f2c checksum mismatch',
    });
    const r = await replay(pipelineJob('pull-fails'), job);

    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason: `PullingImages: node node-1 failed after 3 attempt(s): ${EXIT_FAILURE}; output: Error response from daemon: layer sha256:9f2c checksum mismatch`,
    });
    // Each attempt is its own Batch task on the same node; the healthy node pulled once.
    const pulls = scheduledInputs(r.history, 'nodeTasksAdd').flatMap((a) => a.tasks.map((t) => `${t.id}@${t.affinityId}`));
    expect(pulls.sort()).toEqual(['pull-0-a1@aff-0', 'pull-1-a1@aff-1', 'pull-1-a2@aff-1', 'pull-1-a3@aff-1']);
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'PullingImages', 'CleaningUp']);
    expect(scheduled(r.history)).not.toContain('inputsList');
    expect(scheduled(r.history)).not.toContain('mpiTaskAdd');
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete']);
    expectFinishedOnceAndLast(r, job);
  });

  describe('partial allocation: 3 nodes asked, 2 idle and one stuck starting past the 5 min resize timeout', () => {
    const threeAsked = (id: string, partialAllocation: Record<string, unknown>) =>
      jobInput(id, { command: 'app', pool: { vmSize: 'Standard_D8s_v5', nodes: 3, resizeTimeout: 'PT5M', partialAllocation } });
    const stuck = () => healthyJob({ poolObserve: () => poolObservation(['idle', 'starting', 'idle']) });

    it('policy continue, minNodes 2: runs on the two idle nodes and succeeds', async () => {
      const job = stuck();
      const r = await replay(threeAsked('partial-continue', { policy: 'continue', minNodes: 2 }), job);
      expect(job.finished()).toMatchObject({ state: 'Succeeded' });
      expect(job.finished().reason).toBeUndefined();
      // It waited for the timeout (from its first look at the pool) before settling for fewer nodes.
      const at = (name: string) => Date.parse(r.history.find((e) => e.EventType === EventType.TaskScheduled && e.Name === name)!.Timestamp);
      expect(at('batchJobCreate') - at('poolObserve')).toBeGreaterThanOrEqual(5 * 60_000);
      expect(at('batchJobCreate') - at('poolObserve')).toBeLessThan(5 * 60_000 + 3 * STEP_MS);
      // Every per-node task and the MPI task use exactly the idle nodes.
      expect(
        scheduledInputs(r.history, 'nodeTasksAdd')
          .flatMap((a) => a.tasks.map((t) => t.affinityId))
          .sort(),
      ).toEqual(['aff-0', 'aff-2']);
      expect(scheduledInputs(r.history, 'mpiTaskAdd').map((m) => m.numberOfInstances)).toEqual([2]);
      expect(scheduled(r.history)).not.toContain('poolResize');
      expectFinishedOnceAndLast(r, job);
    });

    it('policy continue with minNodes 3 (more than are idle): Failed in Provisioning, the pool deleted', async () => {
      const job = stuck();
      const r = await replay(threeAsked('partial-too-few', { policy: 'continue', minNodes: 3 }), job);
      const poolId = scheduledInputs(r.history, 'poolCreate')[0].poolId;
      expect(job.finished()).toMatchObject({ state: 'Failed', reason: `Provisioning: pool ${poolId}: only 2/3 nodes ready after 300 s` });
      expect(scheduled(r.history)).not.toContain('batchJobCreate');
      expect(cleanupSteps(r)).toEqual(['poolDelete']);
      expectFinishedOnceAndLast(r, job);
    });

    it('policy fail: Failed in Provisioning naming the shortfall; the pool is deleted, no Batch job was made', async () => {
      const job = stuck();
      const r = await replay(threeAsked('partial-fail', { policy: 'fail' }), job);
      const poolId = scheduledInputs(r.history, 'poolCreate')[0].poolId;
      expect(job.finished()).toMatchObject({ state: 'Failed', reason: `Provisioning: pool ${poolId}: only 2/3 nodes ready after 300 s` });
      expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'CleaningUp']);
      expect(scheduled(r.history)).not.toContain('batchJobCreate');
      expect(cleanupSteps(r)).toEqual(['poolDelete']);
      expect(scheduledInputs(r.history, 'poolDelete')).toEqual([{ poolId }]);
      expectFinishedOnceAndLast(r, job);
    });
  });

  it('a shard download that fails on a node: Failed in StagingData, and the shards already copied are deleted', async () => {
    const job = healthyJob({ inputsList: threeShards });
    job.fakes.nodeTasksObserve = nodeTasksFailingOn(job, 'dl-', 'node-0', {
      exitCode: 1,
      failure: 'BlobDownloadMiscError: Resource file download failed: 403 AuthorizationFailure',
    });
    const r = await replay(pipelineJob('download-fails'), job);
    expect(job.finished().state).toBe('Failed');
    expect(job.finished().reason).toMatch(/^StagingData: node node-0 failed after 1 attempt\(s\): BlobDownloadMiscError: .*403 AuthorizationFailure$/);
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete', 'stagedDataDelete']);
    const written = [...new Set(scheduledInputs(r.history, 'shardCopy').map((c) => `${c.shard.account}/${c.shard.container}`))];
    expect(written.length).toBeGreaterThan(0);
    expect(
      scheduledInputs(r.history, 'stagedDataDelete')
        .flatMap((d) => d.containers.map((c) => `${c.account}/${c.container}`))
        .sort(),
    ).toEqual(written.sort());
    expectFinishedOnceAndLast(r, job);
  });

  it('a pool deletion that keeps failing: "cleanup incomplete: pool deleted: …" in the reason, the other cleanup steps still ran, the job still finished', async () => {
    const poolDeleteAttempts: number[] = [];
    const job = healthyJob({
      inputsList: threeShards,
      poolDelete: (_input, attempt) => {
        poolDeleteAttempts.push(attempt);
        throw new Error('OperationTimedOut: the pool deletion request did not complete');
      },
    });
    const r = await replay(pipelineJob('cleanup-partial'), job);
    const outcome = job.finished();
    // The MPI task succeeded: the job keeps its state, and the reason says what was left behind (the sweep deletes it later).
    expect(outcome.state).toBe('Succeeded');
    // One line naming the step and the activity's message (not the stack trace the failure carries), and only the failed step.
    expect(outcome.reason).toBe(
      "cleanup incomplete: pool deleted: Activity function 'poolDelete' failed: OperationTimedOut: the pool deletion request did not complete",
    );
    // Retried as cleanup steps are (4 tries, each scheduled anew by the engine), then given up on.
    expect(poolDeleteAttempts).toEqual([1, 2, 3, 4]);
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete', 'poolDelete', 'poolDelete', 'poolDelete', 'stagedDataDelete']);
    expect(scheduledInputs(r.history, 'stagedDataDelete')[0].containers.length).toBeGreaterThan(0);
    expectFinishedOnceAndLast(r, job);
  });

  it('a Batch call that keeps failing: one sentence with the operation and the Batch request id, never the stack trace', async () => {
    const job = healthyJob({
      poolCreate: () => {
        throw new BatchError({
          code: 'ServerBusy',
          status: 503,
          operation: 'pools.create',
          resource: 'pool hpc-batch-down',
          requestId: '9f1c2a3b-aaaa-4bbb-8ccc-0123456789ab',
          message: 'The server is currently unable to receive requests.',
          attempts: 6,
        });
      },
    });
    await replay(pipelineJob('batch-down'), job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Failed');
    expect(outcome.reason).toMatch(
      /^unexpected: Activity function 'poolCreate' failed: pools\.create on pool hpc-batch-down failed after 6 attempts: HTTP 503 ServerBusy: The server is currently unable to receive requests\. \[request-id 9f1c2a3b-aaaa-4bbb-8ccc-0123456789ab\]/,
    );
    expect(outcome.reason).not.toMatch(/\n|\bat .+\(.+:\d+:\d+\)/);
  });

  it('an Azure Storage failure keeps its request id (on a later line of the message) in the one-line reason', () => {
    const storage = new Error(
      "Activity function 'stagedDataDelete' failed: The specified container is being deleted. Try operation later.\nRequestId:0a1b2c3d-0000-4111-8222-333344445555\nTime:2030-01-01T00:00:00.0000000Z\n    at handleErrorResponse (deserializationPolicy.js:1:1)",
    );
    expect(activityFailureMessage(storage)).toBe(
      "Activity function 'stagedDataDelete' failed: The specified container is being deleted. Try operation later. [request-id 0a1b2c3d-0000-4111-8222-333344445555]",
    );
  });
});
