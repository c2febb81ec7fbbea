/**
 * pool.spot's pure parts: the spec (defaults, refusals with their field paths), the pool split, the decision after a
 * preemption, the preemption failure class, provisioning with a Spot split, and the cost record's split. Property
 * tests use a fixed seed, so a failure replays.
 */
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { parseJobSpec } from '../../shared/core/spec';
import { smallSpec } from '../ops/helpers';
import { decideAfterPreemption, poolSplit, type SpotPolicy } from '../../shared/core/planning/spotPolicy';
import { classifyAttempt } from '../../shared/core/planning/failureClass';
import { decideRetry, retryPolicyFor } from '../../shared/core/planning/retryPolicy';
import { decideProvisionStep, type PoolObservation } from '../../shared/core/planning/provisionPolicy';
import { jobCost, splitNodeMinutes } from '../../shared/core/ops/cost';
import { retailQuote } from '../../shared/core/ops/priceQuote';
import { explainCost } from '../../shared/adapters/intake/explain';
import { planJob } from '../../shared/core/planning/jobPlan';
import { jobPoolSpec } from '../../shared/core/planning/batchRequests';
import { buildPoolAddParameter } from '../../shared/adapters/batch';

const SEED = 20261127;

function withPool(pool: Record<string, unknown>) {
  const base = parse(smallSpec('s', { command: 'x' })) as Record<string, unknown>;
  return parseJobSpec(stringify({ ...base, pool: { vmSize: 'Standard_D8s_v5', nodes: 4, ...pool } }), 'application/yaml');
}
const errorsOf = (pool: Record<string, unknown>) => {
  const r = withPool(pool);
  if (r.ok) throw new Error('expected the spec to be refused');
  return r.errors.map((e) => `${e.path}: ${e.message}`);
};

describe('the spec', () => {
  test('defaults: fallback dedicated after 1 preemption; absent without pool.spot', () => {
    const r = withPool({ spot: { nodes: 3 } });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    expect(r.spec.pool.spot).toEqual({ nodes: 3, fallback: 'dedicated', maxPreemptions: 1 });
    const plain = withPool({});
    if (!plain.ok) throw new Error(JSON.stringify(plain.errors));
    expect(plain.spec.pool.spot).toBeUndefined();
  });

  test('refusals name the field', () => {
    expect(errorsOf({ spot: { nodes: 5 } })).toEqual(["pool.spot.nodes: must not exceed pool.nodes (4): pool.spot.nodes of the pool's nodes are Spot nodes"]);
    expect(errorsOf({ spot: { nodes: 0 } })).toEqual(['pool.spot.nodes: must be at least 1 (leave pool.spot out for dedicated nodes only)']);
    expect(errorsOf({ spot: {} })).toEqual([expect.stringMatching(/^pool\.spot\.nodes: /)]);
    expect(errorsOf({ spot: { nodes: 1, fallback: 'later' } })).toEqual(['pool.spot.fallback: must be one of "dedicated", "wait", "fail"']);
    expect(errorsOf({ spot: { nodes: 1, maxPreemptions: 11 } })).toEqual(['pool.spot.maxPreemptions: must be at most 10']);
    expect(errorsOf({ spot: { nodes: 1, maxPreemptions: -1 } })).toEqual(['pool.spot.maxPreemptions: must be at least 0']);
    expect(errorsOf({ spot: { nodes: 1, price: 0.1 } })).toEqual([expect.stringMatching(/^pool\.spot(\.price)?: .*price/)]);
    expect(errorsOf({ lowPriorityNodes: 2 })).toEqual([
      'pool.lowPriorityNodes: must be 0: ask for Spot/low-priority nodes with pool.spot (it says what happens when Azure takes one back)',
    ]);
  });

  test('not with a reused pool', () => {
    const base = parse(smallSpec('s', { command: 'x' })) as Record<string, unknown>;
    const r = parseJobSpec(stringify({ ...base, pool: { poolId: 'shared-pool', nodes: 2, spot: { nodes: 1 } } }), 'application/yaml');
    expect(r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`)).toContain(
      'pool.spot: not allowed together with pool.poolId: a reused pool keeps its own nodes',
    );
  });

  test('the pool request: Spot nodes as targetLowPriorityNodes, the rest dedicated, inter-node communication on', () => {
    const r = withPool({ spot: { nodes: 3 } });
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    const plan = planJob('j1', r.spec);
    expect(plan.spot).toEqual({ nodes: 3, fallback: 'dedicated', maxPreemptions: 1 });
    const add = buildPoolAddParameter(jobPoolSpec(plan.poolCreate));
    expect(add).toMatchObject({ targetDedicatedNodes: 1, targetLowPriorityNodes: 3, enableInterNodeCommunication: true });
    const plain = withPool({});
    if (!plain.ok) throw new Error('refused');
    expect(buildPoolAddParameter(jobPoolSpec(planJob('j2', plain.spec).poolCreate))).toMatchObject({ targetDedicatedNodes: 4, targetLowPriorityNodes: 0 });
  });
});

describe('the split and the decision after a preemption', () => {
  test('poolSplit keeps the total and never goes negative', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 100 }), fc.option(fc.integer({ min: 0, max: 200 }), { nil: undefined }), (total, spot) => {
        const s = poolSplit(total, spot);
        expect(s.dedicated + s.lowPriority).toBe(total);
        expect(s.dedicated).toBeGreaterThanOrEqual(0);
        expect(s.lowPriority).toBe(Math.min(total, spot ?? 0));
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  test('maxPreemptions on Spot, then the fallback; "wait" never ends, "fail" ends with the reason', () => {
    const spot = (fallback: SpotPolicy['fallback']): SpotPolicy => ({ nodes: 2, fallback, maxPreemptions: 2 });
    expect(decideAfterPreemption(spot('dedicated'), 1).action).toBe('retrySpot');
    expect(decideAfterPreemption(spot('dedicated'), 2).action).toBe('retrySpot');
    expect(decideAfterPreemption(spot('dedicated'), 3)).toEqual({
      action: 'dedicated',
      reason: 'preemption 3 of Spot nodes, more than pool.spot.maxPreemptions (2): falling back to 2 dedicated node(s) (pool.spot.fallback "dedicated")',
    });
    expect(decideAfterPreemption(spot('wait'), 3).action).toBe('retrySpot');
    expect(decideAfterPreemption(spot('fail'), 3)).toEqual({
      action: 'fail',
      reason:
        'preemption 3 of Spot nodes, more than pool.spot.maxPreemptions (2); pool.spot.fallback is "fail": the job ends instead of running on dedicated nodes',
    });
  });

  test('property: Spot is kept exactly while preemptions ≤ maxPreemptions; after that the fallback decides, always', () => {
    fc.assert(
      fc.property(
        fc.record({
          nodes: fc.integer({ min: 1, max: 100 }),
          fallback: fc.constantFrom('dedicated' as const, 'wait' as const, 'fail' as const),
          maxPreemptions: fc.integer({ min: 0, max: 10 }),
        }),
        fc.integer({ min: 1, max: 30 }),
        (spot, n) => {
          const d = decideAfterPreemption(spot, n);
          const expected = n <= spot.maxPreemptions ? 'retrySpot' : spot.fallback === 'wait' ? 'retrySpot' : spot.fallback;
          expect(d.action).toBe(expected);
          expect(d.reason).toContain(`preemption ${n}`);
        },
      ),
      { seed: SEED, numRuns: 500 },
    );
  });
});

describe('classification', () => {
  const mpiRequeued = { kind: 'mpi' as const, exitCode: -1, requeued: true, subtasks: [] };
  test('a preempted node of the attempt is a preemption (not a node failure), and the node is replaced', () => {
    const v = classifyAttempt(
      mpiRequeued,
      ['a', 'b'],
      [
        { id: 'a', state: 'idle' },
        { id: 'b', state: 'preempted' },
      ],
      [],
    );
    expect(v).toMatchObject({ outcome: 'failed', failureClass: 'preemption', nodes: ['b'] });
    // An unusable node without preemption stays a node failure.
    expect(
      classifyAttempt(
        mpiRequeued,
        ['a', 'b'],
        [
          { id: 'a', state: 'idle' },
          { id: 'b', state: 'unusable' },
        ],
        [],
      ),
    ).toMatchObject({ failureClass: 'nodeFailure' });
  });

  test('without pool.spot a preemption is retried as a node failure is', () => {
    const base = parse(smallSpec('s', { command: 'x' })) as Record<string, unknown>;
    const r = parseJobSpec(stringify({ ...base, retry: { maxAttempts: 2, on: ['nodeFailure'] } }), 'application/yaml');
    if (!r.ok) throw new Error('refused');
    const verdict = { outcome: 'failed' as const, failureClass: 'preemption' as const, reason: 'x', nodes: ['b'] };
    expect(decideRetry(retryPolicyFor(r.spec), 1, verdict).retry).toBe(true);
    expect(decideRetry({ ...retryPolicyFor(r.spec), on: ['allocationFailure'] }, 1, verdict).retry).toBe(false);
  });
});

describe('provisioning with a Spot split', () => {
  const node = (id: string, state: string) => ({ id, state, ipAddress: '10.0.0.1', affinityId: id });
  const obs = (over: Partial<PoolObservation>): PoolObservation => ({
    state: 'active',
    allocationState: 'steady',
    currentDedicatedNodes: 0,
    targetDedicatedNodes: 0,
    resizeErrors: [],
    nodes: [],
    ...over,
  });
  const policy = { target: 2, minNodes: 2, timeoutMs: 600_000, maxReplacements: 2, owned: true };
  const progress = { startedAtMs: 0, nowMs: 1000, replacements: 0 };

  test('a preempted node is replaced like a broken one', () => {
    const step = decideProvisionStep(
      obs({ targetLowPriorityNodes: 2, nodes: [node('a', 'idle'), node('b', 'preempted')] }),
      { ...policy, lowPriority: 2 },
      progress,
    );
    expect(step).toMatchObject({ kind: 'removeNodes', nodeIds: ['b'] });
  });

  test('the targets count together, and a removal is asked back with the split', () => {
    // 1 Spot node removed: targets 0 + 1 < 2.
    expect(decideProvisionStep(obs({ targetLowPriorityNodes: 1, nodes: [node('a', 'idle')] }), { ...policy, lowPriority: 2 }, progress)).toEqual({
      kind: 'resize',
      target: 2,
      lowPriority: 2,
    });
    // Both Spot targets there: wait.
    expect(
      decideProvisionStep(obs({ targetLowPriorityNodes: 2, nodes: [node('a', 'idle'), node('b', 'creating')] }), { ...policy, lowPriority: 2 }, progress),
    ).toMatchObject({ kind: 'wait' });
    // After the fallback (lowPriority 0) Spot targets left are moved to dedicated.
    expect(
      decideProvisionStep(obs({ targetLowPriorityNodes: 1, targetDedicatedNodes: 1, nodes: [node('a', 'idle')] }), { ...policy, lowPriority: 0 }, progress),
    ).toEqual({ kind: 'resize', target: 2, lowPriority: 0 });
    // A job without pool.spot resizes as before.
    expect(decideProvisionStep(obs({ targetDedicatedNodes: 1, nodes: [node('a', 'idle')] }), policy, progress)).toEqual({ kind: 'resize', target: 2 });
  });
});

describe('the cost split', () => {
  const t0 = '2026-11-27T10:00:00.000Z';
  const t60 = '2026-11-27T11:00:00.000Z';
  const t30 = '2026-11-27T10:30:00.000Z';

  test('Spot minutes at the Spot price, dedicated at the dedicated one; a fallback moves Spot nodes to dedicated', () => {
    const price = { pricePerNodeHour: 1, spotPricePerNodeHour: 0.2, currency: 'USD', source: 'test' };
    const all = jobCost({ dedicatedNodes: 1, lowPriorityNodes: 3, allocatedAt: t0, releasedAt: t60 }, {}, price);
    expect(all.nodeMinutes).toEqual({ dedicated: 60, lowPriority: 180, total: 240 });
    expect(all).toMatchObject({ estimatedCost: 1.6, estimatedCostSplit: { dedicated: 1, spot: 0.6 }, spotPricePerNodeHour: 0.2 });
    const fell = jobCost({ dedicatedNodes: 1, lowPriorityNodes: 3, lowPriorityUntil: t30, allocatedAt: t0, releasedAt: t60 }, {}, price);
    expect(fell.nodeMinutes).toEqual({ dedicated: 150, lowPriority: 90, total: 240 });
    expect(fell).toMatchObject({ estimatedCost: 2.8, estimatedCostSplit: { dedicated: 2.5, spot: 0.3 } });
    // No Spot price known: Spot minutes at the dedicated price (never less than it may cost), no Spot price claimed.
    const noSpot = jobCost(
      { dedicatedNodes: 0, lowPriorityNodes: 2, allocatedAt: t0, releasedAt: t60 },
      {},
      { pricePerNodeHour: 1, currency: 'USD', source: 'test' },
    );
    expect(noSpot).toMatchObject({ estimatedCost: 2, estimatedCostSplit: { dedicated: 0, spot: 2 } });
    expect(noSpot.spotPricePerNodeHour).toBeUndefined();
    // Without Spot nodes the record is as before.
    expect(jobCost({ dedicatedNodes: 2, lowPriorityNodes: 0, allocatedAt: t0, releasedAt: t60 }, {}, price).estimatedCostSplit).toBeUndefined();
  });

  test('property: the split always adds up to nodes × minutes, whenever the fallback came', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 0, max: 50 }),
        fc.integer({ min: 1, max: 600 }),
        fc.option(fc.integer({ min: -60, max: 700 }), { nil: undefined }),
        (ded, low, minutes, fallAt) => {
          const releasedAt = new Date(Date.parse(t0) + minutes * 60_000).toISOString();
          const until = fallAt === undefined ? undefined : new Date(Date.parse(t0) + fallAt * 60_000).toISOString();
          const s = splitNodeMinutes({
            dedicatedNodes: ded,
            lowPriorityNodes: low,
            allocatedAt: t0,
            releasedAt,
            ...(until ? { lowPriorityUntil: until } : {}),
          });
          expect(s.dedicated + s.lowPriority).toBeCloseTo((ded + low) * minutes, 6);
          expect(s.lowPriority).toBeGreaterThanOrEqual(0);
          expect(s.lowPriority).toBeLessThanOrEqual(low * minutes + 1e-9);
        },
      ),
      { seed: SEED, numRuns: 400 },
    );
  });

  test('the Retail Prices quote carries the Spot meter (else the Low Priority one)', () => {
    const cached = {
      region: 'eastus',
      currency: 'USD',
      meterName: 'D8s v5',
      effectiveStartDate: '2026-01-01',
      fetchedAt: '2026-11-27T00:00:00Z',
      dedicated: 0.4,
    };
    expect(retailQuote('Standard_D8s_v5', { ...cached, spot: 0.05, lowPriority: 0.08 } as never, false).spotPricePerNodeHour).toBe(0.05);
    expect(retailQuote('Standard_D8s_v5', { ...cached, lowPriority: 0.08 } as never, false).spotPricePerNodeHour).toBe(0.08);
    expect(retailQuote('Standard_D8s_v5', cached as never, false).spotPricePerNodeHour).toBeUndefined();
  });
});

describe('the dry run shows both estimates', () => {
  const quote = { vmSize: 'Standard_D8s_v5', pricePerNodeHour: 0.4, spotPricePerNodeHour: 0.08, currency: 'USD', source: 'test' };
  test('Spot rate and all-dedicated rate; the worst case at the dedicated price', () => {
    const r = withPool({ spot: { nodes: 3 } });
    if (!r.ok) throw new Error('refused');
    const cost = explainCost(r.spec, 4, false, 1, 3600, quote);
    expect(cost.spot).toEqual({ nodes: 3, spotPricePerNodeHour: 0.08, perHour: 0.64, perHourAllDedicated: 1.6 });
    expect(cost.perHour).toBe(1.6);
    // No Spot price: priced as dedicated, and said so.
    const noSpot = explainCost(r.spec, 4, false, 1, 3600, { ...quote, spotPricePerNodeHour: undefined });
    expect(noSpot.spot).toEqual({ nodes: 3, spotPricePerNodeHour: null, perHour: 1.6, perHourAllDedicated: 1.6 });
    expect(noSpot.notes).toContain('no Spot price known for the size: its Spot nodes are priced as dedicated ones');
    // Without pool.spot: no spot section.
    const plain = withPool({});
    if (!plain.ok) throw new Error('refused');
    expect(explainCost(plain.spec, 4, false, 1, 3600, quote).spot).toBeUndefined();
  });
});
