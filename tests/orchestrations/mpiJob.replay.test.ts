/**
 * The mpiJob orchestrator replayed in memory by the library's own executor (tests/durable/helpers/simulator):
 * activities are typed fakes answering like Batch would (fakeActivities.ts), the clock moves one minute per episode, and every
 * assertion reads the orchestration's history or the outcome it hands to jobFinish. No I/O, no stack: this is
 * where the budget guard during provisioning, the cleanup's parallel requests and the Running stage's polling
 * bound are pinned down.
 */
import { EventType } from '../../local/durable/history';
import { healthyJob, poolObservation } from './fakeActivities';
import { jobInput, replay, scheduled, STEP_MS } from './jobReplay';

describe('mpiJob orchestrator, replayed', () => {
  it('checks the budget while provisioning: nodes that never get ready are cancelled with reason budget, billed and deleted', async () => {
    // Two nodes allocated and never ready; 2 nodes x 1 min per poll = 1/30 node-hour per poll, limit 0.1.
    const a = healthyJob({ poolObserve: () => poolObservation(['starting', 'starting']) });
    const r = await replay(jobInput('replay-budget', { nodes: 2, command: 'true', limits: { maxNodeHours: 0.1 } }), a);
    const outcome = a.finished();
    expect(outcome.state).toBe('Cancelled');
    // Seen at the first poll past the limit (a poll here is two steps: observe, then the timer).
    const used = Number(/^budget: ([\d.]+) node-hours used, limit maxNodeHours 0\.1\b/.exec(outcome.reason ?? '')?.[1]);
    expect(used).toBeGreaterThan(0.1);
    expect(used).toBeLessThanOrEqual(0.1 + (2 * 2 * STEP_MS) / 3_600_000 + 0.0001);
    // Billed for both allocated nodes from the pool's creation to its deletion request.
    expect(outcome.result.cost).toMatchObject({ nodes: 2, pricePerNodeHour: 0.5 });
    expect(outcome.result.cost!.nodeMinutes.dedicated).toBe(2 * outcome.result.cost!.minutes);
    expect(outcome.result.cost!.nodeMinutes.dedicated).toBeGreaterThan(used * 60);
    // No Batch job existed yet: the pool we created is deleted, nothing else runs.
    expect(scheduled(r.history)).toEqual(expect.arrayContaining(['poolDelete']));
    expect(scheduled(r.history)).not.toContain('batchJobCreate');
    expect(scheduled(r.history)).not.toContain('batchJobTerminate');
  });

  it('does not bill a reused pool while waiting for its nodes, and bills the nodes it runs on once ready', async () => {
    let polls = 0;
    let readyAt = '';
    const a = healthyJob({
      poolInspect: () => ({ exists: true, state: 'active', vmSize: 'standard_d8s_v5', enableInterNodeCommunication: true, taskSlotsPerNode: 1 }),
      poolObserve: () => poolObservation(++polls < 6 ? ['running', 'running'] : ['idle', 'idle']),
    });
    // Five polls (10 min) waiting on someone else's busy nodes would take the job over its limit if they counted.
    const r = await replay(jobInput('replay-reuse', { command: 'true', pool: { poolId: 'shared', nodes: 2 }, limits: { maxNodeHours: 0.55 } }), a);
    // The orchestrator step that saw the nodes idle: the one that got the 6th poolObserve answer.
    const observes = r.history.filter((e) => e.EventType === EventType.TaskScheduled && e.Name === 'poolObserve').map((e) => e.EventId);
    const answer = r.history.findIndex((e) => e.EventType === EventType.TaskCompleted && e.TaskScheduledId === observes[5]);
    readyAt = [...r.history.slice(0, answer)].reverse().find((e) => e.EventType === EventType.OrchestratorStarted)!.Timestamp;
    const outcome = a.finished();
    expect(outcome).toMatchObject({ state: 'Succeeded' });
    // Billed from the poll that found the nodes idle: the waiting minutes are not this job's.
    expect(outcome.result.cost?.nodes).toBe(2);
    expect(outcome.result.cost!.allocatedAt).toBe(readyAt);
    expect(outcome.result.cost!.nodeMinutes.dedicated).toBe(2 * outcome.result.cost!.minutes);
  });

  it('requests the Batch job termination and the pool deletion together once the MPI task ends', async () => {
    const a = healthyJob();
    const r = await replay(jobInput('replay-cleanup', { nodes: 2, command: 'true' }), a);
    expect(a.finished()).toMatchObject({ state: 'Succeeded' });
    const at = (name: string) => r.history.findIndex((e) => e.EventType === EventType.TaskScheduled && e.Name === name);
    const answered = (name: string) => {
      const id = r.history[at(name)].EventId;
      return r.history.findIndex((e) => e.EventType === EventType.TaskCompleted && e.TaskScheduledId === id);
    };
    expect(at('poolDelete')).toBeGreaterThan(0);
    // Both scheduled before either was answered: one round trip, not two.
    expect(at('poolDelete')).toBeLessThan(answered('batchJobTerminate'));
    expect(at('batchJobTerminate')).toBeLessThan(answered('poolDelete'));
  });

  it('polls the running MPI task at most every half polling interval', async () => {
    let observed = 0;
    const a = healthyJob({ mpiTaskObserve: () => ({ state: ++observed < 8 ? 'running' : 'completed' }) });
    // The inline wait of runs started before the mpiWait sub-orchestration (its delays: mpiJob.historyBound.replay.test.ts).
    const base = jobInput('replay-poll', { nodes: 2, command: 'true' });
    const input = { ...base, settings: { ...base.settings, mpiWaitPollsPerGeneration: undefined } };
    const r = await replay(input, a);
    expect(a.finished()).toMatchObject({ state: 'Succeeded' });
    // Each timer's delay: its fire time minus the orchestrator step that created it.
    const delays: number[] = [];
    let stepAt = 0;
    const running = r.history.findIndex((e) => e.EventType === EventType.TaskScheduled && e.Name === 'mpiTaskAdd');
    for (const e of r.history.slice(running)) {
      if (e.EventType === EventType.OrchestratorStarted) stepAt = Date.parse(e.Timestamp);
      if (e.EventType === EventType.TimerCreated) delays.push(Date.parse(e.FireAt!) - stepAt);
    }
    expect(delays).toEqual([10_000, 20_000, 30_000, 30_000, 30_000, 30_000, 30_000]);
  });
});
