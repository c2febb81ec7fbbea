/**
 * pool.spot in the real mpiJob orchestrator, replayed against typed fakes over a fake pool that keeps dedicated and
 * Spot targets apart as Batch does: a preempted Spot node ends the attempt as a `preemption`, and after
 * maxPreemptions the fallback decides (dedicated: the pool's Spot target goes to 0 and its dedicated one up; fail: the
 * job ends, saying why). The cost record splits Spot and dedicated node-minutes.
 */
import type { ActivityInput, MpiResult, MpiTaskObservation } from '../../shared/core/contract';
import type { PoolObservation } from '../../shared/core/planning/provisionPolicy';
import { fakeNode, healthyJob } from './fakeActivities';
import { expectFinishedOnceAndLast, jobInput, replay, scheduled, scheduledInputs } from './jobReplay';

/** Fake nodes, each dedicated or Spot; removal lowers the target of its kind, a resize sets both targets. */
function spotPool(spot: number, dedicated: number) {
  let next = 0;
  const make = (low: boolean) => ({ ...fakeNode(next++, 'idle'), low });
  let nodes = [...Array.from({ length: dedicated }, () => make(false)), ...Array.from({ length: spot }, () => make(true))];
  let targetDedicated = dedicated;
  let targetLow = spot;
  return {
    preempt(id: string) {
      nodes = nodes.map((n) => (n.id === id ? { ...n, state: 'preempted' } : n));
    },
    nodes: () => nodes,
    fakes: {
      poolObserve: (): PoolObservation => ({
        state: 'active',
        allocationState: 'steady',
        currentDedicatedNodes: nodes.filter((n) => !n.low).length,
        targetDedicatedNodes: targetDedicated,
        targetLowPriorityNodes: targetLow,
        resizeErrors: [],
        nodes: nodes.map(({ low: _low, ...n }) => n),
      }),
      poolRemoveNodes: ({ nodeIds }: ActivityInput<'poolRemoveNodes'>) => {
        const gone = nodes.filter((n) => nodeIds.includes(n.id));
        nodes = nodes.filter((n) => !nodeIds.includes(n.id));
        targetLow -= gone.filter((n) => n.low).length;
        targetDedicated -= gone.filter((n) => !n.low).length;
      },
      poolResize: ({ target, lowPriority }: ActivityInput<'poolResize'>) => {
        targetDedicated = target;
        targetLow = lowPriority ?? 0;
        const low = nodes.filter((n) => n.low);
        nodes = [...nodes.filter((n) => !n.low), ...low.slice(0, targetLow)];
        while (nodes.filter((n) => !n.low).length < targetDedicated) nodes.push(make(false));
        while (nodes.filter((n) => n.low).length < targetLow) nodes.push(make(true));
      },
    },
  };
}

const mpiResult = (taskId: string, exitCode: number, failure?: string): MpiResult => ({
  taskId,
  exitCode,
  ...(failure ? { failure } : {}),
  subtasks: [],
  logs: [],
  stdoutTail: '',
});
const SPOT_PRICE = { pricePerNodeHour: 1, spotPricePerNodeHour: 0.2, currency: 'USD', source: 'test table' };

/** A job whose first MPI task loses its Spot node `victim` to a preemption; later tasks succeed. */
function preemptedJob(pool: ReturnType<typeof spotPool>, victim: string) {
  let looks = 0;
  return healthyJob({
    ...pool.fakes,
    costPrice: ({ vmSize }) => ({ vmSize, ...SPOT_PRICE }),
    mpiTaskObserve: ({ taskId }): MpiTaskObservation => {
      if (taskId !== 'mpi') return { state: 'completed' };
      if (++looks < 2) return { state: 'running' };
      pool.preempt(victim);
      return { state: 'active', requeueCount: 1 };
    },
    mpiResultCollect: ({ taskId }) => (taskId === 'mpi' ? mpiResult(taskId, -1, 'TaskEnded: the task was terminated') : mpiResult(taskId, 0)),
  });
}

describe('pool.spot, replayed', () => {
  it('fallback dedicated: the preemption is classed, the pool is moved to dedicated nodes, attempt 2 succeeds, the cost is split', async () => {
    const pool = spotPool(2, 0);
    const job = preemptedJob(pool, 'node-1');
    const input = jobInput('spot-dedicated', { nodes: 2, command: 'app', limits: { maxWallClock: 'PT10M' } });
    input.spec.pool.spot = { nodes: 2, fallback: 'dedicated', maxPreemptions: 0 };
    const r = await replay(input, job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Succeeded');
    const attempts = outcome.result.attempts!;
    expect(attempts.map((a) => [a.attempt, a.outcome, a.failureClass])).toEqual([
      [1, 'failed', 'preemption'],
      [2, 'succeeded', undefined],
    ]);
    expect(attempts[0]).toMatchObject({ retried: true, replacedNodes: ['node-1'], reason: 'preemption: Azure took back Spot node(s) node-1' });
    expect(attempts[0].retryReason).toContain('falling back to 2 dedicated node(s)');
    // The pool is created with 2 Spot nodes, then the preempted one removed and the pool resized to dedicated only.
    expect(scheduledInputs(r.history, 'poolRemoveNodes')).toEqual([{ poolId: 'hpc-spot-dedicated', nodeIds: ['node-1'] }]);
    expect(scheduledInputs(r.history, 'poolResize')).toEqual([{ poolId: 'hpc-spot-dedicated', target: 2, lowPriority: 0 }]);
    expect(pool.nodes().every((n) => !n.low)).toBe(true);
    expect(attempts[1].nodes).toEqual(['node-2', 'node-3']);
    expect(scheduledInputs(r.history, 'jobNote')).toEqual([
      expect.objectContaining({
        eventId: 'attempt-1',
        reason: expect.stringContaining('attempt 1 of 1 failed (preemption)'),
        data: expect.objectContaining({ failureClass: 'preemption', spot: 'dedicated' }),
      }),
    ]);
    // retry.maxAttempts is 1, and yet the preemption was retried: Spot attempts are counted apart. The Batch job
    // ends itself only after the dedicated attempt's task.
    expect(scheduled(r.history).filter((n) => n === 'batchJobAutoComplete')).toHaveLength(1);
    expect(scheduled(r.history).indexOf('batchJobAutoComplete')).toBeGreaterThan(scheduled(r.history).lastIndexOf('mpiTaskAdd'));
    const cost = outcome.result.cost!;
    expect(cost.nodeMinutes.lowPriority).toBeGreaterThan(0);
    expect(cost.nodeMinutes.dedicated).toBeGreaterThan(0);
    expect(cost).toMatchObject({ pricePerNodeHour: 1, spotPricePerNodeHour: 0.2 });
    expect(cost.estimatedCostSplit!.spot).toBeCloseTo((cost.nodeMinutes.lowPriority / 60) * 0.2, 3);
    expect(cost.estimatedCostSplit!.dedicated).toBeCloseTo((cost.nodeMinutes.dedicated / 60) * 1, 3);
    expectFinishedOnceAndLast(r, job);
  });

  it('within maxPreemptions: retried on Spot nodes (the split kept), and the Spot attempt does not use up retry.maxAttempts', async () => {
    const pool = spotPool(1, 1);
    const job = preemptedJob(pool, 'node-1');
    const input = jobInput('spot-again', { nodes: 2, command: 'app', limits: { maxWallClock: 'PT10M' } });
    input.spec.pool.spot = { nodes: 1, fallback: 'fail', maxPreemptions: 1 };
    const r = await replay(input, job);
    expect(job.finished().state).toBe('Succeeded');
    expect(scheduledInputs(r.history, 'poolResize')).toEqual([{ poolId: 'hpc-spot-again', target: 1, lowPriority: 1 }]);
    expect(pool.nodes().map((n) => n.low)).toEqual([false, true]);
    expect(job.finished().result.attempts![0].retryReason).toContain('retried on fresh Spot nodes');
  });

  it('fallback fail: the job ends with the preemption and the reason it was not retried', async () => {
    const pool = spotPool(2, 0);
    const job = preemptedJob(pool, 'node-0');
    const input = jobInput('spot-fail', { nodes: 2, command: 'app', limits: { maxWallClock: 'PT10M' } });
    input.spec.pool.spot = { nodes: 2, fallback: 'fail', maxPreemptions: 0 };
    const r = await replay(input, job);
    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason:
        'preemption: Azure took back Spot node(s) node-0; not retried: preemption 1 of Spot nodes, more than pool.spot.maxPreemptions (0); pool.spot.fallback is "fail": the job ends instead of running on dedicated nodes',
    });
    expect(scheduled(r.history)).not.toContain('poolResize');
    expect(job.finished().result.cost?.estimatedCostSplit).toBeDefined();
    expectFinishedOnceAndLast(r, job);
  });
});
