import type { NodeProgress, NodeRef } from '../../shared/contract';
import { Orchestration, PipelineRun, StageFailed } from '../runtime/pipelineRun';
import { checkReusablePool, decideProvisionStep } from '../../shared/planning/provisionPolicy';
import type { PoolCreateRequest } from '../../shared/planning/jobPlan';

export interface ProvisionedPool {
  poolId: string;
  createdByUs: boolean;
  nodes: NodeRef[];
}

export interface ProvisionRequest {
  jobId: string;
  /** The pool to create (owned) or reuse (not owned). */
  poolId: string;
  reuse: boolean;
  vmSize?: string;
  nodes: number;
  minNodes: number;
  resizeTimeoutMs: number;
  createRequest: PoolCreateRequest;
}

/**
 * Provision: create the job-owned pool (or check the reused one), then observe → decide → act → wait
 * until enough nodes are idle, replacing broken nodes on pools we own.
 */
export function* provision(run: PipelineRun, req: ProvisionRequest): Orchestration<ProvisionedPool> {
  if (req.reuse) {
    const pool = yield* run.call('poolInspect', { poolId: req.poolId });
    if (!pool.exists) throw new StageFailed('Provisioning', `pool ${req.poolId} does not exist`);
    const problems = checkReusablePool(
      { enableInterNodeCommunication: !!pool.enableInterNodeCommunication, taskSlotsPerNode: pool.taskSlotsPerNode ?? 1, vmSize: pool.vmSize ?? '', state: pool.state ?? 'unknown' },
      { vmSize: req.vmSize },
    );
    if (problems.length) throw new StageFailed('Provisioning', `pool ${req.poolId} cannot run this job: ${problems.join('; ')}`);
  } else {
    yield* run.call('poolCreate', req.createRequest);
  }
  run.report({ resources: { poolId: req.poolId } });

  const startedAtMs = run.now().getTime();
  // A pool we create bills from its creation; a reused pool's nodes bill this job from when it takes them.
  const allocatedAt = new Date(startedAtMs).toISOString();
  let replacements = 0;
  for (let attempt = 0; ; attempt++) {
    const obs = yield* run.call('poolObserve', { poolId: req.poolId });
    const step = decideProvisionStep(
      obs,
      { target: req.nodes, minNodes: req.minNodes, timeoutMs: req.resizeTimeoutMs, maxReplacements: req.nodes, owned: !req.reuse },
      { startedAtMs, nowMs: run.now().getTime(), replacements },
    );
    const nodes: Record<string, NodeProgress> = {};
    for (const n of obs.nodes) nodes[n.id] = n.state === 'idle' ? 'idle' : ['unusable', 'starttaskfailed'].includes(n.state) ? 'failed' : 'allocating';
    const idle = obs.nodes.filter((n) => n.state === 'idle').length;
    // Every node of a pool we own bills from allocation, ready or not; a reused pool's nodes bill this job only once it runs on them.
    if (!req.reuse) run.recordUsage(obs.nodes.length, allocatedAt);
    run.report({ nodes, progress: { nodesReady: { done: Math.min(idle, req.nodes), total: req.nodes } } });

    switch (step.kind) {
      case 'ready': {
        run.recordUsage(step.nodes.length, req.reuse ? run.now().toISOString() : allocatedAt);
        run.report({
          progress: { nodesReady: { done: step.nodes.length, total: req.nodes } },
          lastError: step.partial ? `continuing on ${step.nodes.length}/${req.nodes} nodes` : undefined,
        });
        return {
          poolId: req.poolId,
          createdByUs: !req.reuse,
          nodes: step.nodes.map((n) => ({ id: n.id, ipAddress: n.ipAddress, affinityId: n.affinityId })),
        };
      }
      case 'fail':
        throw new StageFailed('Provisioning', `pool ${req.poolId}: ${step.reason}`);
      case 'removeNodes':
        replacements += step.nodeIds.length;
        run.report({ lastError: step.reason });
        yield* run.call('poolRemoveNodes', { poolId: req.poolId, nodeIds: step.nodeIds });
        break;
      case 'resize':
        yield* run.call('poolResize', { poolId: req.poolId, target: step.target });
        break;
      case 'wait':
        break;
    }
    yield* run.sleep('Provisioning', run.pollDelayMs(attempt));
  }
}
