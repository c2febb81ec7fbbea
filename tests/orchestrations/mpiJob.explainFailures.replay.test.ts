/**
 * Issue 28 item 4 in the real mpiJob orchestrator, replayed against typed fakes: a start task that fails on every node
 * the pool gets. With `explainFailures` the pipeline reads the failed start task (stderr, exit code) before the node
 * is removed, notes the replacement on the timeline, and hands the evidence to jobFinish; runs started without the
 * setting replay as before (no such reads).
 */
import { healthyJob, poolObservation } from './fakeActivities';
import { jobInput, replay, scheduled, scheduledInputs, SETTINGS } from './jobReplay';
import { jobError } from '../../shared/core/planning/failureExplain';

const failingStartTask = () => {
  let looks = 0;
  const job = healthyJob({
    // Every look: the node's start task has failed (a replaced node fails the same way).
    poolObserve: () => {
      looks += 1;
      return { ...poolObservation(['starttaskfailed']), nodes: [{ id: `node-${looks}`, state: 'starttaskfailed', ipAddress: '10.0.0.1', affinityId: 'aff' }] };
    },
    startTaskFailures: ({ nodeIds }) => nodeIds.map((nodeId) => ({ nodeId, exitCode: 127, stderr: 'line 1\nbash: mpicc: command not found\n' })),
  });
  return job;
};

describe('a failed start task, explained', () => {
  it('reads the start task, notes the replacement and fails with the evidence', async () => {
    const job = failingStartTask();
    const input = jobInput('st-explained', { command: 'app', pool: { vmSize: 'Standard_D8s_v5', nodes: 1 } });
    const r = await replay({ ...input, settings: { ...SETTINGS, explainFailures: true } }, job);
    expect(scheduled(r.history)).toContain('startTaskFailures');
    const notes = scheduledInputs(r.history, 'jobNote').map((n) => n.reason);
    expect(notes).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^replacing 1 failed node\(s\): node node-\d+: the start task ended with exit code 127 \(command not found[^)]*\); last lines of stderr:\nline 1\nbash: mpicc: command not found$/,
        ),
      ]),
    );
    const outcome = job.finished();
    expect(outcome).toMatchObject({ state: 'Failed', evidence: { stage: 'Provisioning', task: 'start task', exitCode: 127 } });
    const error = jobError(outcome);
    expect(error?.message).toMatch(/the start task on node node-\d+ ended with exit code 127 \(command not found/);
    expect(error?.message).toMatch(/Last lines of stderr:\nline 1\nbash: mpicc: command not found$/);
  });

  it('a run started without the setting replays without the reads', async () => {
    const job = failingStartTask();
    const r = await replay(jobInput('st-old', { command: 'app', pool: { vmSize: 'Standard_D8s_v5', nodes: 1 } }), job);
    expect(scheduled(r.history)).not.toContain('startTaskFailures');
    expect(job.finished().state).toBe('Failed');
    expect(job.finished().evidence).toBeUndefined();
  });
});
