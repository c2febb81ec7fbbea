/**
 * The attempt record of a node failure, replayed through the real mpiJob orchestrator: the MPI task was ended while
 * Batch held it requeued (a node was lost), so Batch reported no exit code. The record keeps the failure class and
 * no exit code; the old record said exitCode 0 for an attempt that failed.
 */
import type { ActivityInput, MpiResult, MpiTaskObservation } from '../../shared/core/contract';
import type { PoolObservation } from '../../shared/core/planning/provisionPolicy';
import { fakeNode, healthyJob, type FakeActivities } from './fakeActivities';
import { jobInput, replay, scheduledInputs } from './jobReplay';

function fakePool(states: string[]) {
  let nodes = states.map((s, i) => fakeNode(i, s));
  let next = states.length;
  let target = states.length;
  return {
    set(id: string, state: string) {
      nodes = nodes.map((n) => (n.id === id ? { ...n, state } : n));
    },
    fakes: {
      poolObserve: (): PoolObservation => ({
        state: 'active',
        allocationState: 'steady',
        currentDedicatedNodes: nodes.length,
        targetDedicatedNodes: target,
        resizeErrors: [],
        nodes: nodes.map((n) => ({ ...n })),
      }),
      poolRemoveNodes: ({ nodeIds }: ActivityInput<'poolRemoveNodes'>) => {
        nodes = nodes.filter((n) => !nodeIds.includes(n.id));
        target = nodes.length;
      },
      poolResize: ({ target: t }: ActivityInput<'poolResize'>) => {
        target = t;
        while (nodes.length < t) nodes.push(fakeNode(next++, 'idle'));
      },
    } satisfies FakeActivities,
  };
}

test('a node lost mid-run: attempt 1 is a nodeFailure with no exit code, attempt 2 records its real 0', async () => {
  const pool = fakePool(['idle', 'idle']);
  let looks = 0;
  const job = healthyJob({
    ...pool.fakes,
    mpiTaskObserve: ({ taskId }): MpiTaskObservation => {
      if (taskId !== 'mpi') return { state: 'completed' };
      if (++looks < 2) return { state: 'running' };
      pool.set('node-1', 'unusable');
      return { state: 'active', requeueCount: 1 };
    },
    // What collectMpiResult gives for a task terminated while requeued: Batch reported no exit code.
    mpiResultCollect: ({ taskId }): MpiResult =>
      taskId === 'mpi'
        ? { taskId, exitCode: -1, noExitCode: true, subtasks: [], logs: [], stdoutTail: '' }
        : { taskId, exitCode: 0, subtasks: [], logs: [], stdoutTail: '' },
  });
  const input = jobInput('attempt-exit', { nodes: 2, command: 'app', limits: { maxWallClock: 'PT10M' } });
  input.spec.retry = { ...input.spec.retry, maxAttempts: 2 };
  const r = await replay(input, job);
  const outcome = job.finished();
  expect(outcome.state).toBe('Succeeded');
  // The end is recorded as the job enters CleaningUp (a cancel then is answered 409 JobFinishing with it).
  expect(scheduledInputs(r.history, 'jobTransition').find((t) => t.to === 'CleaningUp')?.patch?.endingAs).toBe('Succeeded');
  const [first, second] = outcome.result.attempts!;
  expect(first).toMatchObject({ attempt: 1, outcome: 'failed', failureClass: 'nodeFailure', reason: 'node failure: node-1 unusable', mpiTaskId: 'mpi' });
  expect(first).not.toHaveProperty('exitCode');
  expect(second).toMatchObject({ attempt: 2, outcome: 'succeeded', exitCode: 0, mpiTaskId: 'mpi-a2' });
  expect(outcome.result.exitCode).toBe(0);
});

test('a run whose only MPI task has no exit code fails, and the job result has no exit code', async () => {
  const job = healthyJob({
    mpiResultCollect: ({ taskId }): MpiResult => ({
      taskId,
      exitCode: -1,
      noExitCode: true,
      failure: 'TaskEnded: Task Was Ended by User Request',
      subtasks: [],
      logs: [],
      stdoutTail: '',
    }),
  });
  const r = await replay(jobInput('no-exit', { nodes: 2, command: 'app', limits: { maxWallClock: 'PT10M' } }), job);
  const outcome = job.finished();
  expect(outcome.state).toBe('Failed');
  expect(scheduledInputs(r.history, 'jobTransition').find((t) => t.to === 'CleaningUp')?.patch?.endingAs).toBe('Failed');
  expect(outcome.reason).toBe('MPI task ended without an exit code: TaskEnded: Task Was Ended by User Request');
  expect(outcome.result).not.toHaveProperty('exitCode');
  expect(outcome.result.attempts![0]).not.toHaveProperty('exitCode');
});
