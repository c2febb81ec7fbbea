/**
 * A node Batch made unusable because a pool mount failed (MountConfigurationError): the provisioning decision carries
 * Batch's reason into the replacement note and the job's error, once per distinct reason (issue 26, item 2).
 */
import { decideProvisionStep, type ObservedNode, type PoolObservation, type ProvisionPolicy } from '../../shared/core/planning/provisionPolicy';

const WHY = 'MountConfigurationError: The node could not mount data (10.20.0.4:/export/data): mount.nfs: Connection timed out';
const node = (i: number, state: string, error?: string): ObservedNode => ({
  id: `tvm-${i}`,
  state,
  ipAddress: `10.0.0.${i}`,
  affinityId: `aff-${i}`,
  ...(error ? { error } : {}),
});
const pool = (nodes: ObservedNode[]): PoolObservation => ({
  state: 'active',
  allocationState: 'steady',
  currentDedicatedNodes: nodes.length,
  targetDedicatedNodes: nodes.length,
  resizeErrors: [],
  nodes,
});
const policy: ProvisionPolicy = { target: 2, minNodes: 2, timeoutMs: 60_000, maxReplacements: 2, owned: true };

describe('unusable nodes with a reason', () => {
  it('the replacement says why the nodes are unusable, once for the same reason', () => {
    expect(decideProvisionStep(pool([node(0, 'unusable', WHY), node(1, 'unusable', WHY)]), policy, { startedAtMs: 0, nowMs: 1, replacements: 0 })).toEqual({
      kind: 'removeNodes',
      nodeIds: ['tvm-0', 'tvm-1'],
      reason: `replacing tvm-0 unusable, tvm-1 unusable: ${WHY}`,
    });
  });

  it("the job's failure, once replacements are used up, ends with the reason", () => {
    const step = decideProvisionStep(pool([node(0, 'unusable', WHY), node(1, 'unusable', WHY)]), policy, { startedAtMs: 0, nowMs: 1, replacements: 2 });
    expect(step).toEqual({ kind: 'fail', reason: `4 nodes failed (tvm-0 unusable, tvm-1 unusable), more than the 2 replacements allowed: ${WHY}` });
  });

  it('without a reason the words are as before', () => {
    expect(decideProvisionStep(pool([node(0, 'idle'), node(1, 'unusable')]), policy, { startedAtMs: 0, nowMs: 1, replacements: 0 })).toEqual({
      kind: 'removeNodes',
      nodeIds: ['tvm-1'],
      reason: 'replacing tvm-1 unusable',
    });
  });
});
