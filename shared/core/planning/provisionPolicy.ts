/**
 * What to do next while a pool allocates, decided from one observation of the pool. Pure: the orchestrator
 * observes (activity), decides (here), acts (activity) and waits (durable timer), so every rule is testable
 * without Batch and replays identically.
 */
export interface ObservedNode {
  id: string;
  state: string;
  ipAddress: string;
  affinityId: string;
  /** Why an unusable node is unusable (its Batch node errors, e.g. a MountConfigurationError), when Batch said. */
  error?: string;
}

export interface PoolObservation {
  state: string; // active | deleting
  allocationState: string; // steady | resizing | stopping
  currentDedicatedNodes: number;
  targetDedicatedNodes: number;
  /** Spot/low-priority target (absent: 0). */
  targetLowPriorityNodes?: number;
  resizeErrors: { code: string; message: string }[];
  nodes: ObservedNode[];
}

export interface ProvisionPolicy {
  /** Nodes the job asked for. */
  target: number;
  /** Fewest nodes the job may run on when allocation falls short (target when partial runs are not allowed). */
  minNodes: number;
  /** How long allocation may take before the pipeline stops waiting (the spec's resize timeout). */
  timeoutMs: number;
  /** How many broken nodes may be replaced before giving up (a pool that keeps breaking nodes is not worth it). */
  maxReplacements: number;
  /** Whether the pipeline owns the pool (may resize it and remove nodes). */
  owned: boolean;
  /** Nodes never to run on (an earlier attempt or the preflight found them bad); in a pool we own they are being removed. */
  exclude?: readonly string[];
  /** Nodes to take first when more are ready than needed (a retry keeps the healthy nodes that hold images and shards). */
  prefer?: readonly string[];
  /** Of `target`, how many are Spot nodes (pool.spot; 0 after a fallback to dedicated nodes). Undefined: no Spot split. */
  lowPriority?: number;
}

export interface ProvisionProgress {
  startedAtMs: number;
  nowMs: number;
  replacements: number;
}

export type ProvisionStep =
  | { kind: 'ready'; nodes: ObservedNode[]; partial: boolean }
  | { kind: 'removeNodes'; nodeIds: string[]; reason: string }
  /** `target` nodes in all, `lowPriority` of them Spot nodes (present only when the policy has a Spot split). */
  | { kind: 'resize'; target: number; lowPriority?: number }
  | { kind: 'wait'; ready: number }
  | { kind: 'fail'; reason: string };

const READY = new Set(['idle']);
/** Resize errors that say the account's quota is used up (PoolResizeErrorCodes), rather than that Azure has no capacity. */
const QUOTA_ERRORS = new Set(['AccountCoreQuotaReached', 'AccountLowPriorityCoreQuotaReached', 'AccountSpotCoreQuotaReached']);
/** A preempted Spot node counts as broken: removed, and a fresh one asked for (Batch may restore it, or not, later). */
const BROKEN = new Set(['unusable', 'starttaskfailed', 'preempted']);

const byId = (a: ObservedNode, b: ObservedNode) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);

export function decideProvisionStep(obs: PoolObservation, policy: ProvisionPolicy, progress: ProvisionProgress): ProvisionStep {
  if (obs.state !== 'active') return { kind: 'fail', reason: `pool is ${obs.state}` };
  const excluded = new Set(policy.exclude ?? []);
  const rank = new Map((policy.prefer ?? []).map((id, i) => [id, i]));
  const preferred = (a: ObservedNode, b: ObservedNode) => (rank.get(a.id) ?? Infinity) - (rank.get(b.id) ?? Infinity) || byId(a, b);
  const ready = obs.nodes.filter((n) => READY.has(n.state) && !excluded.has(n.id)).sort(preferred);
  const broken = obs.nodes.filter((n) => BROKEN.has(n.state)).sort(byId);

  if (ready.length >= policy.target) return { kind: 'ready', nodes: ready.slice(0, policy.target), partial: false };

  if (broken.length > 0 && policy.owned) {
    if (progress.replacements + broken.length > policy.maxReplacements) {
      return settleShort(
        ready,
        policy,
        `${progress.replacements + broken.length} nodes failed (${describe(broken)}), more than the ${policy.maxReplacements} replacements allowed${whyBroken(broken)}`,
      );
    }
    return { kind: 'removeNodes', nodeIds: broken.map((n) => n.id), reason: `replacing ${describe(broken)}${whyBroken(broken)}` };
  }

  const steady = obs.allocationState === 'steady';
  const timedOut = progress.nowMs - progress.startedAtMs >= policy.timeoutMs;
  // The account's core quota is shared: another pool being deleted frees it soon. Ask again until the timeout (unless
  // the job may run on what it has).
  const canRunShort = ready.length >= policy.minNodes && policy.minNodes < policy.target;
  if (steady && policy.owned && !timedOut && !canRunShort && obs.resizeErrors.length > 0 && obs.resizeErrors.every((e) => QUOTA_ERRORS.has(e.code))) {
    return resizeTo(policy);
  }
  if (steady && obs.resizeErrors.length > 0) {
    const errors = obs.resizeErrors.map((e) => `${e.code}: ${e.message}`).join('; ');
    return settleShort(ready, policy, `allocation failed: ${errors}`);
  }
  if (timedOut) {
    return settleShort(ready, policy, `only ${ready.length}/${policy.target} nodes ready after ${Math.round(policy.timeoutMs / 1000)} s`);
  }
  // Removing nodes lowers the pool's target; ask for the difference back once Batch is steady again.
  // With a Spot split, the two targets count together, and Spot nodes beyond the split (after a fallback) go.
  const lowTarget = obs.targetLowPriorityNodes ?? 0;
  if (policy.owned && steady && (obs.targetDedicatedNodes + lowTarget < policy.target || (policy.lowPriority !== undefined && lowTarget > policy.lowPriority)))
    return resizeTo(policy);
  if (!policy.owned && broken.length > 0 && obs.nodes.length - broken.length < policy.target) {
    return settleShort(ready, policy, `reused pool has broken nodes (${describe(broken)}) and too few others`);
  }
  const usable = obs.nodes.filter((n) => !BROKEN.has(n.state) && !excluded.has(n.id)).length;
  if (!policy.owned && excluded.size > 0 && usable < policy.target) {
    return settleShort(
      ready,
      policy,
      `reused pool has too few nodes besides the ${excluded.size} left out (${[...excluded].join(', ')}): ${usable} of ${policy.target} needed`,
    );
  }
  return { kind: 'wait', ready: ready.length };
}

function resizeTo(policy: ProvisionPolicy): ProvisionStep {
  return policy.lowPriority === undefined
    ? { kind: 'resize', target: policy.target }
    : { kind: 'resize', target: policy.target, lowPriority: Math.min(policy.target, policy.lowPriority) };
}

/** When allocation cannot reach the target: run on what is there if the job allows it, else fail. */
function settleShort(ready: ObservedNode[], policy: ProvisionPolicy, reason: string): ProvisionStep {
  if (ready.length >= policy.minNodes && policy.minNodes < policy.target) {
    return { kind: 'ready', nodes: ready, partial: true };
  }
  return { kind: 'fail', reason };
}

function describe(nodes: ObservedNode[]): string {
  return nodes.map((n) => `${n.id} ${n.state}`).join(', ');
}

/** The distinct reasons Batch gave for the broken nodes ("; MountConfigurationError: …"), or '' when it gave none. */
function whyBroken(nodes: ObservedNode[]): string {
  const reasons = [...new Set(nodes.map((n) => n.error).filter((e): e is string => Boolean(e)))];
  return reasons.length ? `: ${reasons.join('; ')}` : '';
}

/** Checks a pool the job asked to reuse; returns the problems (empty when it fits). */
export function checkReusablePool(
  pool: { enableInterNodeCommunication: boolean; taskSlotsPerNode: number; vmSize: string; state: string },
  want: { vmSize?: string },
): string[] {
  const problems: string[] = [];
  if (pool.state !== 'active') problems.push(`pool is ${pool.state}`);
  if (!pool.enableInterNodeCommunication) problems.push('pool does not have inter-node communication enabled (required for multi-instance MPI tasks)');
  if (pool.taskSlotsPerNode !== 1) problems.push(`pool has taskSlotsPerNode ${pool.taskSlotsPerNode}; multi-instance tasks need 1`);
  if (want.vmSize && pool.vmSize.toLowerCase() !== want.vmSize.toLowerCase()) problems.push(`pool VM size is ${pool.vmSize}, job asks for ${want.vmSize}`);
  return problems;
}
