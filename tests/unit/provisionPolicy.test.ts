import fc from 'fast-check';
import { decideProvisionStep, checkReusablePool, ObservedNode, PoolObservation, ProvisionPolicy } from '../../shared/core/planning/provisionPolicy';

const node = (i: number, state: string): ObservedNode => ({ id: `tvm-${String(i).padStart(3, '0')}`, state, ipAddress: `10.0.0.${i}`, affinityId: `aff-${i}` });
const pool = (states: string[], extra: Partial<PoolObservation> = {}): PoolObservation => ({
  state: 'active',
  allocationState: 'steady',
  currentDedicatedNodes: states.length,
  targetDedicatedNodes: states.length,
  resizeErrors: [],
  nodes: states.map((s, i) => node(i, s)),
  ...extra,
});
const policy: ProvisionPolicy = { target: 4, minNodes: 4, timeoutMs: 60_000, maxReplacements: 4, owned: true };
const t0 = { startedAtMs: 0, nowMs: 1_000, replacements: 0 };

describe('decideProvisionStep', () => {
  it('is ready once the target number of nodes is idle, taking exactly target nodes', () => {
    const step = decideProvisionStep(pool(['idle', 'idle', 'idle', 'idle', 'idle']), policy, t0);
    expect(step).toMatchObject({ kind: 'ready', partial: false });
    expect(step.kind === 'ready' && step.nodes.map((n) => n.id)).toEqual(['tvm-000', 'tvm-001', 'tvm-002', 'tvm-003']);
  });

  it('waits while nodes are still starting', () => {
    expect(decideProvisionStep(pool(['idle', 'starting', 'creating', 'waitingforstarttask'], { allocationState: 'resizing' }), policy, t0)).toEqual({
      kind: 'wait',
      ready: 1,
    });
  });

  it('replaces unusable and start-task-failed nodes of an owned pool', () => {
    const step = decideProvisionStep(pool(['idle', 'unusable', 'idle', 'starttaskfailed']), policy, t0);
    expect(step).toEqual({ kind: 'removeNodes', nodeIds: ['tvm-001', 'tvm-003'], reason: 'replacing tvm-001 unusable, tvm-003 starttaskfailed' });
  });

  it('resizes back to the target after nodes were removed', () => {
    const obs = pool(['idle', 'idle'], { targetDedicatedNodes: 2 });
    expect(decideProvisionStep(obs, policy, { ...t0, replacements: 2 })).toEqual({ kind: 'resize', target: 4 });
  });

  it('fails with the resize error when allocation stopped short and partial runs are not allowed', () => {
    const obs = pool(['idle', 'idle'], { targetDedicatedNodes: 4, resizeErrors: [{ code: 'AllocationFailed', message: 'no capacity' }] });
    expect(decideProvisionStep(obs, policy, t0)).toEqual({ kind: 'fail', reason: 'allocation failed: AllocationFailed: no capacity' });
  });

  it("asks again when the account's core quota stopped the allocation (another pool frees it), until the timeout", () => {
    const obs = pool(['idle', 'idle'], {
      targetDedicatedNodes: 4,
      resizeErrors: [{ code: 'AccountCoreQuotaReached', message: 'The specified account has reached core quota' }],
    });
    expect(decideProvisionStep(obs, policy, t0)).toEqual({ kind: 'resize', target: 4 });
    expect(decideProvisionStep(obs, policy, { ...t0, nowMs: 60_000 })).toEqual({
      kind: 'fail',
      reason: 'allocation failed: AccountCoreQuotaReached: The specified account has reached core quota',
    });
    expect(decideProvisionStep(obs, { ...policy, owned: false }, t0).kind).toBe('fail');
    const mixed = pool(['idle', 'idle'], {
      targetDedicatedNodes: 4,
      resizeErrors: [
        { code: 'AccountCoreQuotaReached', message: 'q' },
        { code: 'AllocationFailed', message: 'no capacity' },
      ],
    });
    expect(decideProvisionStep(mixed, policy, t0).kind).toBe('fail');
  });

  it('continues on fewer nodes when the job allows a partial allocation', () => {
    const obs = pool(['idle', 'idle', 'idle'], { targetDedicatedNodes: 4, resizeErrors: [{ code: 'AllocationFailed', message: 'no capacity' }] });
    const step = decideProvisionStep(obs, { ...policy, minNodes: 3 }, t0);
    expect(step).toMatchObject({ kind: 'ready', partial: true });
    expect(step.kind === 'ready' && step.nodes).toHaveLength(3);
  });

  it('gives up after the timeout', () => {
    const step = decideProvisionStep(pool(['idle', 'starting'], { allocationState: 'resizing' }), policy, { startedAtMs: 0, nowMs: 60_000, replacements: 0 });
    expect(step).toEqual({ kind: 'fail', reason: 'only 1/4 nodes ready after 60 s' });
  });

  it('stops replacing nodes past the replacement budget', () => {
    const step = decideProvisionStep(pool(['idle', 'unusable', 'idle', 'idle']), { ...policy, maxReplacements: 2 }, { ...t0, replacements: 2 });
    expect(step.kind).toBe('fail');
    expect(step.kind === 'fail' && step.reason).toContain('more than the 2 replacements allowed');
  });

  it('never removes nodes from a pool it does not own', () => {
    const step = decideProvisionStep(pool(['idle', 'unusable', 'idle', 'idle', 'idle']), { ...policy, owned: false }, t0);
    expect(step).toMatchObject({ kind: 'ready' });
    const short = decideProvisionStep(pool(['idle', 'unusable', 'idle', 'idle']), { ...policy, owned: false }, t0);
    expect(short.kind).toBe('fail');
  });

  it('property: never returns ready with fewer than minNodes or more than target nodes, and never acts on a foreign pool', () => {
    const states = fc.constantFrom('idle', 'creating', 'starting', 'waitingforstarttask', 'unusable', 'starttaskfailed', 'running', 'leavingpool');
    fc.assert(
      fc.property(
        fc.array(states, { maxLength: 12 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 8 }),
        fc.boolean(),
        fc.boolean(),
        fc.constantFrom('steady', 'resizing'),
        fc.integer({ min: 0, max: 120_000 }),
        (nodeStates, target, minOffset, owned, withErrors, allocationState, now) => {
          const minNodes = Math.max(1, target - minOffset);
          const obs = pool(nodeStates, { allocationState, resizeErrors: withErrors ? [{ code: 'X', message: 'y' }] : [] });
          const step = decideProvisionStep(
            obs,
            { target, minNodes, timeoutMs: 60_000, maxReplacements: target, owned },
            { startedAtMs: 0, nowMs: now, replacements: 0 },
          );
          if (step.kind === 'ready') {
            expect(step.nodes.length).toBeGreaterThanOrEqual(minNodes);
            expect(step.nodes.length).toBeLessThanOrEqual(target);
            expect(step.nodes.every((n) => n.state === 'idle')).toBe(true);
          }
          if (!owned) expect(['removeNodes', 'resize']).not.toContain(step.kind);
        },
      ),
    );
  });
});

describe('checkReusablePool', () => {
  it('accepts a pool fit for multi-instance tasks and names every problem otherwise', () => {
    expect(
      checkReusablePool(
        { enableInterNodeCommunication: true, taskSlotsPerNode: 1, vmSize: 'standard_hb120rs_v3', state: 'active' },
        { vmSize: 'Standard_HB120rs_v3' },
      ),
    ).toEqual([]);
    const problems = checkReusablePool(
      { enableInterNodeCommunication: false, taskSlotsPerNode: 4, vmSize: 'standard_d4s_v5', state: 'active' },
      { vmSize: 'Standard_HB120rs_v3' },
    );
    expect(problems).toHaveLength(3);
    expect(problems.join('\n')).toMatch(/inter-node communication[\s\S]*taskSlotsPerNode 4[\s\S]*standard_d4s_v5/);
  });
});
