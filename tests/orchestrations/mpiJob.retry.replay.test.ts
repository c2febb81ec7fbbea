/**
 * The attempt loop of the real mpiJob orchestrator (retry by failure class, preflight replacements), replayed against
 * typed fakes over a small fake pool that removes and adds nodes as Batch would. Each case pins the attempts the job
 * result lists, what was replaced, which tasks each attempt added, the timeline notes and the backoff timer.
 */
import { EventType } from '../../local/durable/history';
import type { ActivityInput, MpiResult, MpiTaskObservation, PreflightResult } from '../../shared/core/contract';
import type { PoolObservation } from '../../shared/core/planning/provisionPolicy';
import { fakeNode, healthyJob, preflightReport, type FakeActivities, type FakeJob } from './fakeActivities';
import { cleanupSteps, expectFinishedOnceAndLast, jobInput, replay, scheduled, scheduledInputs, stagesEntered, STEP_MS } from './jobReplay';
import type { SimResult } from '../durable/helpers/simulator';

/** A pool of fake nodes (node-i at 10.0.0.i) that Batch-like calls change: removal lowers the target, a resize adds idle nodes. */
function fakePool(states: string[], opts: { resizeErrors?: () => { code: string; message: string }[] } = {}) {
  let nodes = states.map((s, i) => fakeNode(i, s));
  let next = states.length;
  let target = states.length;
  return {
    /** The addresses of the pool's idle nodes, in order (what a preflight check over them would probe). */
    ips: () => nodes.filter((n) => n.state === 'idle').map((n) => n.ipAddress),
    set(id: string, state: string) {
      nodes = nodes.map((n) => (n.id === id ? { ...n, state } : n));
    },
    fakes: {
      poolObserve: (): PoolObservation => {
        const errors = opts.resizeErrors?.() ?? [];
        return {
          state: 'active',
          allocationState: 'steady',
          currentDedicatedNodes: nodes.length,
          targetDedicatedNodes: target,
          resizeErrors: errors,
          nodes: nodes.map((n) => ({ ...n })),
        };
      },
      poolRemoveNodes: ({ nodeIds }: ActivityInput<'poolRemoveNodes'>) => {
        nodes = nodes.filter((n) => !nodeIds.includes(n.id));
        target = nodes.length;
      },
      poolResize: ({ target: t }: ActivityInput<'poolResize'>) => {
        target = t;
        if (!opts.resizeErrors?.().length) while (nodes.length < t) nodes.push(fakeNode(next++, 'idle'));
      },
    } satisfies FakeActivities,
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
const EXIT_FAILURE = 'FailureExitCode: The task exited with an exit code representing a failure';

/** The fire time of the first timer created after activity `name`'s n-th scheduling, minus that step's time. */
function timerAfter(r: SimResult, name: string, n = 0): number {
  const at = r.history.map((e, i) => (e.EventType === EventType.TaskScheduled && e.Name === name ? i : -1)).filter((i) => i >= 0)[n];
  const timer = r.history.slice(at).find((e) => e.EventType === EventType.TimerCreated)!;
  const step = [...r.history.slice(0, r.history.indexOf(timer))].reverse().find((e) => e.EventType === EventType.OrchestratorStarted)!;
  return Date.parse(timer.FireAt!) - Date.parse(step.Timestamp);
}

const taskIds = (r: SimResult, name: 'mpiTaskAdd' | 'preflightTaskAdd') => scheduledInputs(r.history, name).map((t) => t.taskId);
const nodeTaskIds = (r: SimResult) =>
  scheduledInputs(r.history, 'nodeTasksAdd')
    .flatMap((a) => a.tasks.map((t) => `${t.id}@${t.affinityId}`))
    .sort();

describe('mpiJob retries by failure class, replayed', () => {
  it('a node lost while the MPI task runs: Batch requeues it, the task is ended, the node replaced in the pool, attempt 2 succeeds', async () => {
    const pool = fakePool(['idle', 'idle']);
    let mpiLooks = 0;
    const job = healthyJob({
      ...pool.fakes,
      mpiTaskObserve: ({ taskId }): MpiTaskObservation => {
        if (taskId !== 'mpi') return { state: 'completed' };
        if (++mpiLooks < 3) return { state: 'running' };
        pool.set('node-1', 'unusable');
        return { state: 'active', requeueCount: 1 };
      },
      mpiResultCollect: ({ taskId }) => (taskId === 'mpi' ? mpiResult(taskId, -1, 'TaskEnded: the task was terminated') : mpiResult(taskId, 0)),
    });
    const input = jobInput('retry-node-lost', { nodes: 2, command: 'app', limits: { maxWallClock: 'PT10M' } });
    input.spec.retry = { ...input.spec.retry, maxAttempts: 2 };
    const r = await replay(input, job);
    const outcome = job.finished();
    expect(outcome.reason).toBeUndefined();
    expect(outcome.state).toBe('Succeeded');
    const attempts = outcome.result.attempts!;
    expect(attempts.map((a) => [a.attempt, a.outcome, a.failureClass, a.nodes])).toEqual([
      [1, 'failed', 'nodeFailure', ['node-0', 'node-1']],
      [2, 'succeeded', undefined, ['node-0', 'node-2']],
    ]);
    expect(attempts[0]).toMatchObject({
      reason: 'node failure: node-1 unusable',
      retried: true,
      replacedNodes: ['node-1'],
      retryAfterMs: 30_000,
      mpiTaskId: 'mpi',
    });
    // The requeued task was ended (not left to wait for a node), the node removed and the pool resized back.
    expect(scheduledInputs(r.history, 'mpiTaskTerminate')).toEqual([{ batchJobId: 'hpc-retry-node-lost', taskId: 'mpi' }]);
    expect(scheduledInputs(r.history, 'poolRemoveNodes')).toEqual([{ poolId: 'hpc-retry-node-lost', nodeIds: ['node-1'] }]);
    expect(scheduledInputs(r.history, 'poolResize')).toEqual([{ poolId: 'hpc-retry-node-lost', target: 2 }]);
    expect(taskIds(r, 'mpiTaskAdd')).toEqual(['mpi', 'mpi-a2']);
    expect(scheduledInputs(r.history, 'mpiTaskAdd').map((t) => t.numberOfInstances)).toEqual([2, 2]);
    expect(taskIds(r, 'preflightTaskAdd')).toEqual(['preflight-1-1', 'preflight-2-1']);
    // Only the new node downloads (its own task ids); the kept node keeps its shards.
    expect(nodeTaskIds(r)).toEqual(['dl-0-a1@aff-0', 'dl-1-a1@aff-1', 'dl-a2-0-a1@aff-2']);
    // The Batch job may end itself only after the last attempt's task: attempt 2's.
    expect(scheduled(r.history).filter((n) => n === 'batchJobAutoComplete')).toHaveLength(1);
    expect(scheduled(r.history).indexOf('batchJobAutoComplete')).toBeGreaterThan(scheduled(r.history).lastIndexOf('mpiTaskAdd'));
    // The backoff: 30 s (retry.backoff.initial) after the failed attempt was recorded.
    expect(timerAfter(r, 'jobNote')).toBe(30_000);
    expect(scheduledInputs(r.history, 'jobNote')).toEqual([
      expect.objectContaining({
        eventId: 'attempt-1',
        reason: 'attempt 1 of 2 failed (nodeFailure): node failure: node-1 unusable; retry in 30 s, replacing node-1',
      }),
    ]);
    // The job row only moved forward: each stage once.
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp']);
    expect(outcome.result.mpi?.taskId).toBe('mpi-a2');
    expectFinishedOnceAndLast(r, job);
  });

  it('the same node loss without retry: Failed as a node failure at once (no waiting for a node that will not come)', async () => {
    const pool = fakePool(['idle', 'idle']);
    const job = healthyJob({
      ...pool.fakes,
      mpiTaskObserve: () => {
        pool.set('node-0', 'unusable');
        return { state: 'active', requeueCount: 1 };
      },
      mpiResultCollect: ({ taskId }) => mpiResult(taskId, -1, 'TaskEnded: the task was terminated'),
    });
    const r = await replay(jobInput('retry-none', { nodes: 2, command: 'app' }), job);
    expect(job.finished()).toMatchObject({ state: 'Failed', reason: 'node failure: node-0 unusable' });
    expect(job.finished().result.attempts?.map((a) => [a.failureClass, a.retried, a.retryReason])).toEqual([
      ['nodeFailure', false, 'retry.maxAttempts is 1 (no retry)'],
    ]);
    expect(scheduled(r.history)).toContain('mpiTaskTerminate');
    expect(scheduled(r.history)).not.toContain('jobNote');
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete']);
    expectFinishedOnceAndLast(r, job);
  });

  it('a node that reboots while the MPI task runs: Batch runs the task again, no attempt is spent', async () => {
    const pool = fakePool(['idle', 'idle']);
    let looks = 0;
    const job = healthyJob({
      ...pool.fakes,
      // Requeued once while the node reboots; it comes back and the task completes.
      mpiTaskObserve: () => (++looks === 1 ? { state: 'active', requeueCount: 1 } : { state: 'completed', requeueCount: 1 }),
    });
    pool.set('node-1', 'idle');
    const input = jobInput('retry-reboot', { nodes: 2, command: 'app' });
    input.spec.retry = { ...input.spec.retry, maxAttempts: 3 };
    const r = await replay(input, job);
    expect(job.finished().state).toBe('Succeeded');
    expect(job.finished().result.attempts).toHaveLength(1);
    expect(scheduled(r.history)).not.toContain('mpiTaskTerminate');
    expect(taskIds(r, 'mpiTaskAdd')).toEqual(['mpi']);
  });

  it('an application exit code not in retry.exitCodes: one attempt, Failed with the exit code and why it was not retried', async () => {
    const job = healthyJob({ mpiResultCollect: ({ taskId }) => mpiResult(taskId, 3, EXIT_FAILURE) });
    const input = jobInput('retry-app', { nodes: 2, command: 'app' });
    input.spec.retry = { ...input.spec.retry, maxAttempts: 3, exitCodes: [75] };
    const r = await replay(input, job);
    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason: `MPI task exited with code 3: ${EXIT_FAILURE}; not retried: the application's exit code 3 is not in retry.exitCodes`,
    });
    expect(job.finished().result.attempts?.map((a) => [a.failureClass, a.exitCode, a.retried])).toEqual([['application', 3, false]]);
    expect(taskIds(r, 'mpiTaskAdd')).toEqual(['mpi']);
    // No backoff timer after the MPI result: straight to cleanup, which terminates the Batch job still open for a retry.
    const collected = r.history.findIndex((e) => e.EventType === EventType.TaskScheduled && e.Name === 'mpiResultCollect');
    expect(r.history.slice(collected).filter((e) => e.EventType === EventType.TimerCreated)).toEqual([]);
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete']);
    expectFinishedOnceAndLast(r, job);
  });

  it('a listed exit code: retried after the backoff on the same nodes, doubling; Failed once the attempts are used up', async () => {
    const job = healthyJob({ mpiResultCollect: ({ taskId }) => mpiResult(taskId, 75, EXIT_FAILURE) });
    const input = jobInput('retry-listed', { nodes: 2, command: 'app' });
    input.spec.retry = { maxAttempts: 3, on: [], exitCodes: [75], backoff: { initial: 'PT2M', max: 'PT10M' } };
    const r = await replay(input, job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Failed');
    expect(outcome.reason).toBe(`exit code 75 (listed in retry.exitCodes): ${EXIT_FAILURE}; not retried: no attempts left (3 of 3)`);
    expect(outcome.result.attempts?.map((a) => [a.failureClass, a.nodes, a.retryAfterMs])).toEqual([
      ['exitCode', ['node-0', 'node-1'], 120_000],
      ['exitCode', ['node-0', 'node-1'], 240_000],
      ['exitCode', ['node-0', 'node-1'], undefined],
    ]);
    expect(taskIds(r, 'mpiTaskAdd')).toEqual(['mpi', 'mpi-a2', 'mpi-a3']);
    expect(timerAfter(r, 'jobNote', 0)).toBe(120_000);
    expect(timerAfter(r, 'jobNote', 1)).toBe(240_000);
    expect(scheduled(r.history)).not.toContain('poolRemoveNodes');
    expect(scheduled(r.history)).not.toContain('poolResize');
    // Nothing new to pull or download: the nodes are the same.
    expect(nodeTaskIds(r)).toEqual(['dl-0-a1@aff-0', 'dl-1-a1@aff-1']);
    expect(scheduledInputs(r.history, 'jobNote').map((n) => n.eventId)).toEqual(['attempt-1', 'attempt-2', 'attempt-3']);
    expectFinishedOnceAndLast(r, job);
  });

  it('an allocation failure: after the backoff Batch is asked again (a resize), attempt 2 gets the nodes and succeeds', async () => {
    let failing = true;
    const pool = fakePool(['idle'], { resizeErrors: () => (failing ? [{ code: 'AllocationFailed', message: 'no capacity' }] : []) });
    const job = healthyJob({
      ...pool.fakes,
      poolResize: (input) => {
        failing = false;
        pool.fakes.poolResize(input);
      },
    });
    const input = jobInput('retry-alloc', { nodes: 2, command: 'app' });
    input.spec.retry = { ...input.spec.retry, maxAttempts: 2 };
    const r = await replay(input, job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Succeeded');
    expect(outcome.result.attempts?.map((a) => [a.failureClass, a.nodes])).toEqual([
      ['allocationFailure', []],
      [undefined, ['node-0', 'node-1']],
    ]);
    expect(outcome.result.attempts?.[0].reason).toBe('allocation failure: pool hpc-retry-alloc: allocation failed: AllocationFailed: no capacity');
    expect(scheduledInputs(r.history, 'poolResize')).toEqual([{ poolId: 'hpc-retry-alloc', target: 2 }]);
    expect(scheduled(r.history).filter((n) => n === 'poolCreate')).toHaveLength(1);
    expect(scheduled(r.history).filter((n) => n === 'batchJobCreate')).toHaveLength(1);
    expectFinishedOnceAndLast(r, job);
  });

  it('a reused pool: the lost node is left out and another idle node of the pool taken; nothing removed or resized', async () => {
    const pool = fakePool(['idle', 'idle', 'idle']);
    const job = healthyJob({
      ...pool.fakes,
      mpiTaskObserve: ({ taskId }) => {
        if (taskId !== 'mpi') return { state: 'completed' };
        pool.set('node-1', 'unusable');
        return { state: 'active', requeueCount: 1 };
      },
      mpiResultCollect: ({ taskId }) => mpiResult(taskId, taskId === 'mpi' ? -1 : 0),
    });
    const input = jobInput('retry-reuse', { nodes: 2, command: 'app', pool: { poolId: 'shared-pool', nodes: 2 } });
    input.spec.retry = { ...input.spec.retry, maxAttempts: 2 };
    const r = await replay(input, job);
    expect(job.finished().state).toBe('Succeeded');
    expect(job.finished().result.attempts?.map((a) => a.nodes)).toEqual([
      ['node-0', 'node-1'],
      ['node-0', 'node-2'],
    ]);
    expect(scheduled(r.history)).not.toContain('poolRemoveNodes');
    expect(scheduled(r.history)).not.toContain('poolResize');
    expect(scheduled(r.history)).not.toContain('poolDelete');
  });

  it('a cancel during the backoff: Cancelled with the user reason, the failed attempt recorded, no second attempt', async () => {
    const job = healthyJob({ mpiResultCollect: ({ taskId }) => mpiResult(taskId, 75) });
    const input = jobInput('retry-cancel', { nodes: 2, command: 'app' });
    input.spec.retry = { ...input.spec.retry, maxAttempts: 2, exitCodes: [75] };
    const r = await replay(input, job, { raiseAfterActivity: [{ activity: 'jobNote', name: 'cancel', input: { reason: 'enough' } }] });
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: 'enough' });
    expect(job.finished().result.attempts?.map((a) => [a.outcome, a.failureClass])).toEqual([['failed', 'exitCode']]);
    expect(taskIds(r, 'mpiTaskAdd')).toEqual(['mpi']);
    expectFinishedOnceAndLast(r, job);
  });

  it('the budget guard counts every attempt and the waits between them: a retry that would go over the budget is cancelled', async () => {
    const failing = () => healthyJob({ mpiResultCollect: ({ taskId }) => mpiResult(taskId, 75) });
    const retry = { maxAttempts: 3, on: [], exitCodes: [75], backoff: { initial: 'PT30M', max: 'PT30M' } };
    // First without a budget, to read how many node-hours attempt 1 used (the simulated clock is deterministic).
    const free = jobInput('retry-budget', { nodes: 2, command: 'app' });
    free.spec.retry = retry;
    const probe = failing();
    await replay(free, probe);
    const a1 = probe.finished().result.attempts![0];
    const provisioningAt = Date.parse(probe.finished().result.timings.Provisioning.startedAt);
    const usedByAttempt1 = (2 * (Date.parse(a1.endedAt) - provisioningAt)) / 3_600_000;

    const limited = jobInput('retry-budget', {
      nodes: 2,
      command: 'app',
      limits: { maxWallClock: 'PT10M', maxNodeHours: Math.round((usedByAttempt1 + 0.1) * 1000) / 1000 },
    });
    limited.spec.retry = retry;
    const job = failing();
    const r = await replay(limited, job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Cancelled');
    expect(outcome.reason).toMatch(/^budget: [\d.]+ node-hours used, limit maxNodeHours [\d.]+$/);
    // Attempt 1 ran; the 30-minute backoff took the pool over the budget before attempt 2 started.
    expect(outcome.result.attempts?.map((a) => a.outcome)).toEqual(['failed']);
    expect(taskIds(r, 'mpiTaskAdd')).toEqual(['mpi']);
    expect(outcome.result.cost!.nodeMinutes.total).toBeGreaterThan(2 * 30);
    expectFinishedOnceAndLast(r, job);
  });
});

describe('mpiJob preflight, replayed', () => {
  it('a node the check cannot reach is replaced through the provisioning path and readied, and the check repeated before MPI', async () => {
    const pool = fakePool(['idle', 'idle']);
    let checks = 0;
    const job: FakeJob = healthyJob({
      ...pool.fakes,
      preflightCollect: () => preflightReport(pool.ips(), ++checks === 1 ? { unreachable: [fakeNode(1, 'idle').ipAddress] } : {}),
    });
    const r = await replay(
      jobInput('preflight-replay', { nodes: 2, command: 'app', container: { runtime: 'docker', images: ['registry.example.com/hpc/app:1.0'] } }),
      job,
    );
    const outcome = job.finished();
    expect(outcome.state).toBe('Succeeded');
    expect(taskIds(r, 'preflightTaskAdd')).toEqual(['preflight-1-1', 'preflight-1-2']);
    expect(scheduledInputs(r.history, 'poolRemoveNodes')).toEqual([{ poolId: 'hpc-preflight-replay', nodeIds: ['node-1'] }]);
    // The newcomer pulls the image and downloads its shards (under the check's own task ids) before the check runs again.
    expect(nodeTaskIds(r)).toEqual(['dl-0-a1@aff-0', 'dl-1-a1@aff-1', 'dl-p1-0-a1@aff-2', 'pull-0-a1@aff-0', 'pull-1-a1@aff-1', 'pull-p1-0-a1@aff-2']);
    const pf = outcome.result.preflight as PreflightResult;
    // A TCP job without thresholds: the figures are recorded, not judged.
    expect(pf).toMatchObject({ rounds: 2, passed: true, replaced: ['node-1'], pingPong: 'measured over 1 pair(s) (no thresholds: recorded, not judged)' });
    expect(Object.keys(pf.nodes)).toEqual(['node-0', 'node-2']);
    expect(pf.nodes['node-2']).toEqual({ ok: true, ip: '10.0.0.2', sshMs: 40, freeGB: 100, latencyUs: 2, bandwidthMBps: 10_000, problems: [] });
    expect(outcome.result.attempts?.[0].nodes).toEqual(['node-0', 'node-2']);
    expect(scheduledInputs(r.history, 'jobNote')).toEqual([
      expect.objectContaining({
        eventId: 'preflight-1-1',
        reason:
          "preflight check 1 of attempt 1: replacing node-1 (unreachable on the launcher's ssh port (exit 255: ssh: connect to host 10.0.0.1 port 22: Connection refused))",
      }),
    ]);
    // The MPI task comes after the last check.
    expect(scheduled(r.history).indexOf('mpiTaskAdd')).toBeGreaterThan(scheduled(r.history).lastIndexOf('preflightCollect'));
    expectFinishedOnceAndLast(r, job);
  });

  it('a node slot that stays bad through every check: Failed as a preflight failure naming the node, no MPI task', async () => {
    const pool = fakePool(['idle', 'idle', 'idle']);
    const job = healthyJob({
      ...pool.fakes,
      // Whichever node is second in the pool cannot be reached, check after check.
      preflightCollect: () => preflightReport(pool.ips(), { unreachable: [pool.ips()[1]] }),
    });
    const input = jobInput('preflight-bad', { nodes: 3, command: 'app' });
    input.spec.preflight = { ...input.spec.preflight, rounds: 1 };
    const r = await replay(input, job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Failed');
    // Check 1 replaced node-1; check 2 found node-2 unreachable and was the last one allowed.
    expect(outcome.reason).toMatch(/^StagingData: preflight: node-2 \(unreachable on the launcher's ssh port .*\) \(still after 2 checks\)$/);
    expect(outcome.result.attempts?.map((a) => [a.failureClass, a.retried])).toEqual([['preflightFailure', false]]);
    expect(outcome.result.preflight).toMatchObject({ rounds: 2, passed: false, replaced: ['node-1'] });
    // The result carries every node's figures once: in the last check; the attempt keeps the failing node's only.
    expect(Object.keys(outcome.result.preflight?.nodes ?? {}).sort()).toEqual(['node-0', 'node-2', 'node-3']);
    expect(Object.keys(outcome.result.attempts?.[0].preflight?.nodes ?? {})).toEqual(['node-2']);
    expect(scheduledInputs(r.history, 'poolRemoveNodes')).toEqual([{ poolId: 'hpc-preflight-bad', nodeIds: ['node-1'] }]);
    expect(scheduled(r.history)).not.toContain('mpiTaskAdd');
    expectFinishedOnceAndLast(r, job);
  });

  it('every pair slow on three nodes: a fabric-wide problem, no node replaced, Failed at the first check', async () => {
    const pool = fakePool(['idle', 'idle', 'idle']);
    const job = healthyJob({ ...pool.fakes, preflightCollect: () => preflightReport(pool.ips(), { slow: pool.ips() }) });
    const input = jobInput('preflight-fabric', { nodes: 3, command: 'app' });
    input.spec.preflight = { ...input.spec.preflight, pingPong: { enabled: true, maxLatencyUs: 100, minBandwidthMBps: 1000 } };
    const r = await replay(input, job);
    expect(job.finished().state).toBe('Failed');
    expect(job.finished().reason).toBe(
      'StagingData: preflight: every ping-pong pair is over the thresholds (latency 100 µs, bandwidth 1000 MB/s): a fabric-wide problem, not one node',
    );
    expect(taskIds(r, 'preflightTaskAdd')).toEqual(['preflight-1-1']);
    expect(scheduled(r.history)).not.toContain('poolRemoveNodes');
    expect(scheduled(r.history)).not.toContain('mpiTaskAdd');
  });

  it('one slow node of three is told from its partners and replaced', async () => {
    const pool = fakePool(['idle', 'idle', 'idle']);
    let checks = 0;
    const job = healthyJob({ ...pool.fakes, preflightCollect: () => preflightReport(pool.ips(), ++checks === 1 ? { slow: [pool.ips()[2]] } : {}) });
    const input = jobInput('preflight-slow', { nodes: 3, command: 'app' });
    input.spec.preflight = { ...input.spec.preflight, pingPong: { enabled: true, maxLatencyUs: 100 } };
    const r = await replay(input, job);
    expect(job.finished().state).toBe('Succeeded');
    expect(scheduledInputs(r.history, 'poolRemoveNodes')).toEqual([{ poolId: 'hpc-preflight-slow', nodeIds: ['node-2'] }]);
    expect(job.finished().result.attempts?.[0].nodes).toEqual(['node-0', 'node-1', 'node-3']);
    expect(job.finished().result.preflight?.nodes['node-0'].latencyUs).toBe(2);
  });

  it('an RDMA job without thresholds is judged by the built-in ones, unless the deployment turned them off', async () => {
    const slowFirst = () => {
      const pool = fakePool(['idle', 'idle', 'idle']);
      let checks = 0;
      return healthyJob({ ...pool.fakes, preflightCollect: () => preflightReport(pool.ips(), ++checks === 1 ? { slow: [pool.ips()[2]] } : {}) });
    };
    const rdma = (id: string) => {
      const input = jobInput(id, { nodes: 3, command: 'app', pool: { vmSize: 'Standard_HB120rs_v3', nodes: 3 } });
      input.spec.mpi = { ...input.spec.mpi, fabric: 'auto' };
      return input;
    };
    const judged = slowFirst();
    await replay(rdma('preflight-rdma'), judged);
    expect(judged.finished().result.preflight).toMatchObject({ rounds: 2, replaced: ['node-2'] });
    const off = slowFirst();
    const input = rdma('preflight-rdma-off');
    input.settings = { ...input.settings, preflightFabricDefaults: false };
    await replay(input, off);
    expect(off.finished().result.preflight).toMatchObject({
      rounds: 1,
      replaced: [],
      pingPong: 'measured over 3 pair(s) (no thresholds: recorded, not judged)',
    });
  });

  it('preflight.enabled false: no check at all', async () => {
    const job = healthyJob();
    const input = jobInput('preflight-off', { nodes: 2, command: 'app' });
    input.spec.preflight = { ...input.spec.preflight, enabled: false };
    const r = await replay(input, job);
    expect(job.finished().state).toBe('Succeeded');
    expect(scheduled(r.history).filter((n) => n.startsWith('preflight'))).toEqual([]);
    expect(job.finished().result.preflight).toBeUndefined();
  });
});

// The clock the simulator advances per episode, for the reader of the timer assertions above.
void STEP_MS;
