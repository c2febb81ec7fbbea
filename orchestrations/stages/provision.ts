import type { NodeProgress, NodeRef, NodesReplaced } from '../../shared/core/contract';
import { Orchestration, PipelineRun, StageFailed } from '../runtime/pipelineRun';
import { checkReusablePool, decideProvisionStep } from '../../shared/core/planning/provisionPolicy';
import type { PoolCreateRequest } from '../../shared/core/planning/jobPlan';
import { startTaskNote, type FailureEvidence } from '../../shared/core/planning/failureExplain';
import type { PoolObservation } from '../../shared/core/planning/provisionPolicy';
import { poolSplit } from '../../shared/core/planning/spotPolicy';

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
  /** Of `nodes`, the Spot ones (pool.spot; 0 after a fallback to dedicated nodes; undefined without pool.spot). */
  spotNodes?: number;
  minNodes: number;
  resizeTimeoutMs: number;
  createRequest: PoolCreateRequest;
  /**
   * Read a failed start task's stderr before its node goes, note every replacement on the timeline and carry the
   * evidence into the job's error (PipelineSettings.explainFailures; runs started before it replay without).
   */
  explainFailures?: boolean;
}

/** The pool could not get its nodes (resize error, timeout, too many broken nodes): a failure `retry` may retry. */
export class AllocationFailed extends StageFailed {
  constructor(reason: string, evidence?: FailureEvidence) {
    super('Provisioning', reason, evidence);
    this.name = 'AllocationFailed';
  }
}

/**
 * Provision: create the job-owned pool (or check the reused one), then observe → decide → act → wait
 * until enough nodes are idle, replacing broken nodes on pools we own.
 */
export function* provision(run: PipelineRun, req: ProvisionRequest, opts: { reallocate?: boolean } = {}): Orchestration<ProvisionedPool> {
  if (req.reuse) {
    // Pools have owners: judged again now, from the pool as it is, before anything of the job is placed on it.
    const pool = yield* run.call('poolInspect', { poolId: req.poolId, jobId: req.jobId });
    if (pool.access && !pool.access.allowed) throw new StageFailed('Provisioning', pool.access.reason);
    if (!pool.exists) throw new StageFailed('Provisioning', `pool ${req.poolId} does not exist`);
    const problems = checkReusablePool(
      {
        enableInterNodeCommunication: !!pool.enableInterNodeCommunication,
        taskSlotsPerNode: pool.taskSlotsPerNode ?? 1,
        vmSize: pool.vmSize ?? '',
        state: pool.state ?? 'unknown',
      },
      { vmSize: req.vmSize },
    );
    if (problems.length) throw new StageFailed('Provisioning', `pool ${req.poolId} cannot run this job: ${problems.join('; ')}`);
  } else if (opts.reallocate) {
    // An earlier attempt created the pool and Batch could not fill it.
    yield* askAgain(run, req);
  } else {
    yield* run.call('poolCreate', req.createRequest);
  }
  run.report({ resources: { poolId: req.poolId } });
  return yield* waitForNodes(run, req, { minNodes: req.minNodes, exclude: [], prefer: [] });
}

/**
 * Replaces `failed` nodes of `current` through the same path: in a pool we own they are removed and Batch allocates
 * new ones when the pool is resized back (or, after a failed allocation, asked again); a reused pool is not ours to
 * change, so its other idle nodes are taken instead. The nodes kept stay in their places and a new node takes the
 * place of the one it replaces, so the node that held shard set i is followed by the one that downloads set i. All
 * of `current`'s nodes are needed again: a replacement never settles for fewer.
 */
export function* replaceNodes(
  run: PipelineRun,
  req: ProvisionRequest,
  current: ProvisionedPool,
  failed: readonly string[],
  opts: { exclude: readonly string[]; reallocate: boolean },
): Orchestration<ProvisionedPool> {
  const failedSet = new Set(failed);
  if (!req.reuse) {
    const obs = yield* run.call('poolObserve', { poolId: req.poolId });
    const present = obs.nodes.filter((n) => failedSet.has(n.id) && n.state !== 'leavingpool').map((n) => n.id);
    if (present.length) {
      run.report({ lastError: `replacing ${present.join(', ')}` });
      yield* run.call('poolRemoveNodes', { poolId: req.poolId, nodeIds: present });
    } else if (opts.reallocate) {
      yield* askAgain(run, req);
    }
  }
  const kept = current.nodes.filter((n) => !failedSet.has(n.id));
  const wanted = Math.max(current.nodes.length, kept.length);
  const ready = yield* waitForNodes(
    run,
    { ...req, nodes: wanted },
    { minNodes: wanted, exclude: [...new Set([...opts.exclude, ...failed])], prefer: kept.map((n) => n.id) },
  );
  const readyIds = new Set(ready.nodes.map((n) => n.id));
  const newcomers = ready.nodes.filter((n) => !kept.some((k) => k.id === n.id));
  const nodes = current.nodes.map((n) => (!failedSet.has(n.id) && readyIds.has(n.id) ? n : newcomers.shift())).filter((n): n is NodeRef => n !== undefined);
  return { ...current, nodes: [...nodes, ...newcomers] };
}

/** A failed resize leaves its errors on the pool until the next resize: after the backoff, ask Batch again. */
function* askAgain(run: PipelineRun, req: ProvisionRequest): Orchestration<void> {
  const obs = yield* run.call('poolObserve', { poolId: req.poolId });
  if (obs.state === 'active' && obs.allocationState === 'steady' && obs.resizeErrors.length)
    yield* run.call('poolResize', resizeRequest(req.poolId, req.nodes, req.spotNodes));
}

/** Observe → decide → act → wait until `req.nodes` usable nodes are idle (or fewer, down to `minNodes`, when allowed). */
function* waitForNodes(
  run: PipelineRun,
  req: ProvisionRequest,
  sel: { minNodes: number; exclude: readonly string[]; prefer: readonly string[] },
): Orchestration<ProvisionedPool> {
  const startedAtMs = run.now().getTime();
  // A pool we create bills from its creation; a reused pool's nodes bill this job from when it takes them. A later
  // attempt keeps the time billing started.
  const first = run.usage.allocatedAt === undefined;
  const allocatedAt = run.usage.allocatedAt ?? new Date(startedAtMs).toISOString();
  // While nodes are replaced the pool's count dips and grows back: the job is billed for the most it held.
  const billed = (n: number) => (first ? n : Math.max(run.usage.nodes, n));
  let replacements = 0;
  for (let attempt = 0; ; attempt++) {
    const obs = yield* run.call('poolObserve', { poolId: req.poolId });
    const step = decideProvisionStep(
      obs,
      {
        target: req.nodes,
        minNodes: sel.minNodes,
        timeoutMs: req.resizeTimeoutMs,
        maxReplacements: req.nodes,
        owned: !req.reuse,
        exclude: sel.exclude,
        prefer: sel.prefer,
        ...(req.spotNodes !== undefined ? { lowPriority: req.spotNodes } : {}),
      },
      { startedAtMs, nowMs: run.now().getTime(), replacements },
    );
    reportObservation(run, req, obs, { nodes: billed(obs.nodes.length), allocatedAt });

    switch (step.kind) {
      case 'ready': {
        run.recordUsage(billed(step.nodes.length), req.reuse && first ? run.now().toISOString() : allocatedAt);
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
        throw yield* allocationFailure(run, req, obs, step.reason);
      case 'removeNodes':
        replacements += step.nodeIds.length;
        run.report({ lastError: step.reason });
        // The replaced nodes' start task output goes with them: the timeline keeps why each was replaced.
        if (req.explainFailures) yield* noteReplacedNodes(run, req, obs, step.nodeIds);
        yield* run.call('poolRemoveNodes', { poolId: req.poolId, nodeIds: step.nodeIds });
        break;
      case 'resize':
        yield* run.call('poolResize', resizeRequest(req.poolId, step.target, step.lowPriority));
        break;
      case 'wait':
        break;
    }
    yield* run.sleep('Provisioning', run.pollDelayMs(attempt));
  }
}

/** Each node's state as the pool shows it, those ready noted, and the pool's nodes billed (`billed`: if owned). */
function reportObservation(run: PipelineRun, req: ProvisionRequest, obs: PoolObservation, billed: { nodes: number; allocatedAt: string }): void {
  const nodes: Record<string, NodeProgress> = {};
  for (const n of obs.nodes) nodes[n.id] = n.state === 'idle' ? 'idle' : ['unusable', 'starttaskfailed'].includes(n.state) ? 'failed' : 'allocating';
  const idle = obs.nodes.filter((n) => n.state === 'idle').length;
  run.noteNodesReady(obs.nodes.filter((n) => n.state === 'idle').map((n) => n.id));
  // Every node of a pool we own bills from allocation, ready or not; a reused pool's nodes bill this job only once it runs on them.
  if (!req.reuse) run.recordUsage(billed.nodes, billed.allocatedAt);
  run.report({ nodes, progress: { nodesReady: { done: Math.min(idle, req.nodes), total: req.nodes } } });
}

/** The pool cannot get its nodes: the error to throw, with a failed start task's output as evidence when asked. */
function* allocationFailure(run: PipelineRun, req: ProvisionRequest, obs: PoolObservation, reason: string): Orchestration<StageFailed> {
  if (obs.state !== 'active') return new StageFailed('Provisioning', `pool ${req.poolId}: ${reason}`);
  const [failed] = req.explainFailures
    ? yield* startTasksFailed(
        run,
        req,
        obs,
        obs.nodes.map((n) => n.id),
      )
    : [];
  const evidence: FailureEvidence | undefined = failed
    ? {
        stage: 'Provisioning',
        node: failed.nodeId,
        task: 'start task',
        ...(failed.exitCode !== undefined ? { exitCode: failed.exitCode } : {}),
        ...(failed.stderr ? { stderr: failed.stderr } : {}),
      }
    : undefined;
  return new AllocationFailed(`pool ${req.poolId}: ${reason}`, evidence);
}

/** Why each of the nodes about to be removed failed (its start task's output, or its state), on the job's timeline. */
function* noteReplacedNodes(run: PipelineRun, req: ProvisionRequest, obs: PoolObservation, nodeIds: string[]): Orchestration<void> {
  const failures = yield* startTasksFailed(run, req, obs, nodeIds);
  const notes = nodeIds.map((id) => {
    const f = failures.find((x) => x.nodeId === id);
    const n = obs.nodes.find((x) => x.id === id);
    return f ? startTaskNote(id, f.exitCode, f.failure, f.stderr) : `node ${id}: ${n?.state ?? 'failed'}${n?.error ? `: ${n.error}` : ''}`;
  });
  const at = run.now().toISOString();
  const data: NodesReplaced & { replaced: string[] } = {
    kind: 'nodesReplaced',
    stage: 'Provisioning',
    replaced: nodeIds,
    nodes: nodeIds.map((id, i) => ({ node: id, cause: failures.some((x) => x.nodeId === id) ? 'startTask' : 'unusable', reasons: [notes[i]] })),
  };
  yield* run.call('jobNote', {
    jobId: req.jobId,
    eventId: `nodes-replaced-${run.now().getTime()}`,
    at,
    reason: `replacing ${nodeIds.length} failed node(s): ${notes.join('; ')}`,
    data,
  });
}

/** The resize of `nodes` nodes, `spot` of them Spot nodes; the request of a job without pool.spot is as it always was. */
function resizeRequest(poolId: string, nodes: number, spot: number | undefined): { poolId: string; target: number; lowPriority?: number } {
  if (spot === undefined) return { poolId, target: nodes };
  const split = poolSplit(nodes, spot);
  return { poolId, target: split.dedicated, lowPriority: split.lowPriority };
}

/** The start task failures of those of `candidates` whose start task failed (none read when there are none). */
function* startTasksFailed(run: PipelineRun, req: ProvisionRequest, obs: PoolObservation, candidates: readonly string[]) {
  const nodeIds = obs.nodes
    .filter((n) => n.state === 'starttaskfailed' && candidates.includes(n.id))
    .map((n) => n.id)
    .slice(0, 4);
  return nodeIds.length ? yield* run.call('startTaskFailures', { poolId: req.poolId, nodeIds }) : [];
}
