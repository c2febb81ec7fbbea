import fc from 'fast-check';
import { classifyAttempt, lostNodes, type AttemptEnd } from '../../shared/core/planning/failureClass';
import { decideRetry, retryDelayMs, retryPolicyFor, type RetryPolicy } from '../../shared/core/planning/retryPolicy';
import { parseJobSpec } from '../../shared/core/spec';
import { smallSpec } from '../ops/helpers';

const NODES = ['n0', 'n1', 'n2'];
const healthy = NODES.map((id) => ({ id, state: 'idle' }));
const mpi = (exitCode: number, extra: Partial<Extract<AttemptEnd, { kind: 'mpi' }>> = {}): AttemptEnd => ({
  kind: 'mpi',
  exitCode,
  requeued: false,
  subtasks: [],
  ...extra,
});

describe('classifyAttempt', () => {
  it('exit 0 without a requeue is success, whatever else', () => {
    expect(classifyAttempt(mpi(0), NODES, undefined, [])).toEqual({ outcome: 'succeeded' });
    expect(classifyAttempt(mpi(0), NODES, [{ id: 'n1', state: 'unusable' }, ...healthy], [])).toEqual({ outcome: 'succeeded' });
  });

  it('a node Batch gave up on (or that left the pool) explains any symptom: node failure naming the nodes', () => {
    const health = [
      { id: 'n0', state: 'idle' },
      { id: 'n1', state: 'unusable' },
    ];
    expect(classifyAttempt(mpi(137, { failure: 'FailureExitCode: …' }), NODES, health, [137])).toEqual({
      outcome: 'failed',
      failureClass: 'nodeFailure',
      reason: 'node failure: n1 unusable, n2 gone',
      nodes: ['n1', 'n2'],
      exitCode: 137,
    });
    const pull: AttemptEnd = { kind: 'stage', stage: 'PullingImages', reason: 'node n2 failed after 3 attempt(s): …' };
    expect(classifyAttempt(pull, NODES, [...healthy.slice(0, 2), { id: 'n2', state: 'starttaskfailed' }], [])).toMatchObject({
      failureClass: 'nodeFailure',
      nodes: ['n2'],
    });
  });

  it('a requeued MPI task whose nodes all look healthy again (a reboot) is still a node failure, with no node to replace', () => {
    expect(classifyAttempt(mpi(-1, { requeued: true }), NODES, healthy, [])).toEqual({
      outcome: 'failed',
      failureClass: 'nodeFailure',
      reason: expect.stringContaining('requeued'),
      nodes: [],
      exitCode: -1,
    });
  });

  it('allocation and preflight failures of a stage', () => {
    expect(
      classifyAttempt({ kind: 'stage', stage: 'Provisioning', reason: 'pool p: only 1/2 nodes ready after 300 s', allocation: true }, [], undefined, []),
    ).toEqual({ outcome: 'failed', failureClass: 'allocationFailure', reason: 'allocation failure: pool p: only 1/2 nodes ready after 300 s', nodes: [] });
    expect(classifyAttempt({ kind: 'stage', stage: 'StagingData', reason: 'preflight: n1 (…)', preflightNodes: ['n1'] }, NODES, healthy, [])).toMatchObject({
      failureClass: 'preflightFailure',
      nodes: ['n1'],
    });
    // A preflight failure nobody can be blamed for still is one (with no node to replace).
    expect(
      classifyAttempt({ kind: 'stage', stage: 'StagingData', reason: 'preflight: every pair slow', preflightNodes: [] }, NODES, healthy, []),
    ).toMatchObject({ failureClass: 'preflightFailure', nodes: [] });
  });

  it('any other stage failure (a missing image, a 403 on the data) is the stage class, never retried', () => {
    expect(classifyAttempt({ kind: 'stage', stage: 'PullingImages', reason: 'manifest unknown' }, NODES, healthy, [])).toEqual({
      outcome: 'failed',
      failureClass: 'stage',
      reason: 'PullingImages: manifest unknown',
      nodes: [],
    });
  });

  it("a coordination command failing on some nodes only is those nodes' failure; on every node it is the application's", () => {
    const some = mpi(1, {
      subtasks: [
        { nodeId: 'n1', exitCode: 125 },
        { nodeId: 'n2', exitCode: 0 },
      ],
    });
    expect(classifyAttempt(some, NODES, healthy, [])).toMatchObject({ failureClass: 'nodeFailure', nodes: ['n1'] });
    const all = mpi(1, {
      subtasks: [
        { nodeId: 'n1', exitCode: 125 },
        { nodeId: 'n2', exitCode: 125 },
      ],
    });
    expect(classifyAttempt(all, NODES, healthy, [])).toMatchObject({ failureClass: 'application' });
  });

  it("exit codes: listed is the exitCode class, anything else the application's own failure", () => {
    expect(classifyAttempt(mpi(75, { failure: 'FailureExitCode: x' }), NODES, healthy, [75, 76])).toEqual({
      outcome: 'failed',
      failureClass: 'exitCode',
      reason: 'exit code 75 (listed in retry.exitCodes): FailureExitCode: x',
      nodes: [],
      exitCode: 75,
    });
    expect(classifyAttempt(mpi(3), NODES, healthy, [75])).toEqual({
      outcome: 'failed',
      failureClass: 'application',
      reason: 'MPI task exited with code 3',
      nodes: [],
      exitCode: 3,
    });
  });

  it('lostNodes: unknown health means nothing is known lost', () => {
    expect(lostNodes(NODES, undefined)).toEqual([]);
    expect(
      lostNodes(NODES, [
        { id: 'n0', state: 'running' },
        { id: 'n1', state: 'leavingpool' },
        { id: 'n2', state: 'offline' },
      ]),
    ).toEqual([
      { id: 'n1', state: 'leavingpool' },
      { id: 'n2', state: 'offline' },
    ]);
  });

  it('property: success exactly when exit 0 and no requeue; a listed code is never "application"; lost nodes are always named', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: -1, max: 255 }),
        fc.boolean(),
        fc.subarray(NODES),
        fc.uniqueArray(fc.integer({ min: 1, max: 255 }), { maxLength: 4 }),
        (exitCode, requeued, lost, listed) => {
          const health = NODES.map((id) => ({ id, state: lost.includes(id) ? 'unusable' : 'idle' }));
          const v = classifyAttempt(mpi(exitCode, { requeued }), NODES, health, listed);
          if (exitCode === 0 && !requeued) return v.outcome === 'succeeded';
          if (v.outcome !== 'failed') return false;
          if (lost.length) return v.failureClass === 'nodeFailure' && [...v.nodes].sort().join() === [...lost].sort().join();
          if (requeued) return v.failureClass === 'nodeFailure';
          return listed.includes(exitCode) ? v.failureClass === 'exitCode' : v.failureClass === 'application';
        },
      ),
    );
  });
});

describe('retry policy', () => {
  const policy: RetryPolicy = { maxAttempts: 4, on: ['nodeFailure', 'allocationFailure'], exitCodes: [75], backoff: { initialMs: 10_000, maxMs: 25_000 } };
  const failed = (failureClass: 'nodeFailure' | 'allocationFailure' | 'preflightFailure' | 'exitCode' | 'application' | 'stage', exitCode?: number) => ({
    outcome: 'failed' as const,
    failureClass,
    reason: 'r',
    nodes: [],
    ...(exitCode !== undefined ? { exitCode } : {}),
  });

  it('the spec section with its defaults: one attempt, the three infrastructure classes, no exit codes, 30 s doubling to 10 min', () => {
    const parsed = parseJobSpec(smallSpec('p', { command: 'x' }), 'application/yaml');
    if (!parsed.ok) throw new Error('spec');
    expect(retryPolicyFor(parsed.spec)).toEqual({
      maxAttempts: 1,
      on: ['nodeFailure', 'allocationFailure', 'preflightFailure'],
      exitCodes: [],
      backoff: { initialMs: 30_000, maxMs: 600_000 },
    });
  });

  it('retries a listed class within the attempts, after initial, doubling, capped', () => {
    expect(decideRetry(policy, 1, failed('nodeFailure'))).toEqual({ retry: true, delayMs: 10_000, reason: 'nodeFailure is retried: attempt 2 of 4 in 10 s' });
    expect(decideRetry(policy, 2, failed('allocationFailure'))).toMatchObject({ retry: true, delayMs: 20_000 });
    expect(decideRetry(policy, 3, failed('exitCode', 75))).toMatchObject({ retry: true, delayMs: 25_000 });
    expect(decideRetry(policy, 4, failed('nodeFailure'))).toEqual({ retry: false, reason: 'no attempts left (4 of 4)' });
  });

  it("never retries the application's own failure, another stage's, or a class not in retry.on", () => {
    expect(decideRetry(policy, 1, failed('application', 3))).toEqual({ retry: false, reason: "the application's exit code 3 is not in retry.exitCodes" });
    expect(decideRetry(policy, 1, failed('stage'))).toMatchObject({ retry: false });
    expect(decideRetry(policy, 1, failed('preflightFailure'))).toEqual({ retry: false, reason: 'preflightFailure is not in retry.on' });
    expect(decideRetry({ ...policy, maxAttempts: 1 }, 1, failed('nodeFailure'))).toEqual({ retry: false, reason: 'retry.maxAttempts is 1 (no retry)' });
  });

  it('property: delays never shrink and stay within [initial, max]; at most maxAttempts attempts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 3_600_000 }), fc.integer({ min: 0, max: 3_600_000 }), (maxAttempts, a, b) => {
        const p: RetryPolicy = { maxAttempts, on: ['nodeFailure'], exitCodes: [], backoff: { initialMs: Math.min(a, b), maxMs: Math.max(a, b) } };
        let last = 0;
        let attempts = 1;
        for (let n = 1; ; n++) {
          const d = decideRetry(p, n, failed('nodeFailure'));
          if (!d.retry) break;
          attempts++;
          if (d.delayMs < last || d.delayMs < p.backoff.initialMs || d.delayMs > p.backoff.maxMs) return false;
          expect(d.delayMs).toBe(retryDelayMs(p, n + 1));
          last = d.delayMs;
        }
        return attempts === maxAttempts;
      }),
    );
  });
});
