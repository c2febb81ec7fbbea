import type { Counter, NodeProgress, NodeRef, NodeTaskObservation, NodeTaskRequest } from '../../shared/core/contract';
import { Orchestration, PipelineRun, StageFailed } from '../runtime/pipelineRun';
import { failureMessage, nodeTaskWindow } from '../runtime/nodeTaskWindow';
import { imageBlobs, imageLabel, peerCopyTask, pullTask, seedPullTask } from '../../shared/core/planning/mpiTaskRequest';
import type { JobSpec } from '../../shared/core/spec/schema';
import { IMAGE_SAS_MINUTES, nodeTaskId, pullNodeTask } from '../../shared/core/planning/batchRequests';
import { deterministicRand01 } from '../../shared/core/planning/hash';
import {
  initTreePlan,
  isTreeDone,
  nextTransfers,
  nodesWithoutImages,
  onTransferResults,
  treeProgress,
  type TransferResult,
  type TransferWork,
  type TreePlanState,
} from '../../shared/core/planning/imageTree';
import { SOURCE_LOST_EXIT } from '../../shared/core/mpi/imageTransfer';

export interface PullImagesRequest {
  jobId: string;
  batchJobId: string;
  nodes: NodeRef[];
  spec: JobSpec;
  maxAttempts: number;
  /** The deployment's cap on SAS lifetimes (minutes). */
  sasMaxLifetimeMinutes: number;
  /** The pool identity's client id, when the deployment has one (the pull task signs in to the registry with it). */
  poolIdentityClientId?: string;
  /** Task-id prefix (default "pull"); nodes that replace others pull under their own, as ids are unique in a Batch job. */
  taskPrefix?: string;
  /** Nodes of the pool that already hold the images (an earlier round): replacements copy from them, not from the registry. */
  holders?: NodeRef[];
  /**
   * Told which nodes hold every image as soon as the stage knows (each node once; all of them at once when there is
   * nothing to pull): their shard downloads may start while other nodes still pull.
   */
  onNodesPulled?: (nodeIds: string[]) => void;
}

export interface PullImagesResult {
  /** Digest of every image as the nodes hold it (docker: image id; singularity: sha256 of the SIF), when reported. */
  digests?: string[];
  /** Nodes that got the images from the registry, and from a peer. */
  fromRegistry: number;
  fromPeers: number;
}

/**
 * Every node must hold every image before any MPI container starts. With `imageDistribution: peers` (default) at
 * most `pullConcurrency` nodes (10 by default) pull from the registry — 40 nodes pulling at once knock a registry
 * over — and every other node copies the images from a node that holds them, in a tree that doubles the holders
 * every copy time (shared/core/planning/imageTree.ts), each copy checked by digest (shared/core/mpi/imageTransfer.ts). With
 * `registry`, every node pulls, `pullConcurrency` at a time. The pool was created without image preload, so nothing
 * else pulls behind our back. SIF files from blob storage come as the seeds' resource files, through short-lived
 * read-only SAS URLs.
 */
export function* pullImages(run: PipelineRun, req: PullImagesRequest): Orchestration<PullImagesResult> {
  const { container } = req.spec;
  if (container.runtime === 'none' || container.images.length === 0 || req.nodes.length === 0) {
    run.report({ progress: { imagesPulled: { done: req.nodes.length, total: req.nodes.length } } });
    req.onNodesPulled?.(req.nodes.map((n) => n.id));
    return { fromRegistry: 0, fromPeers: 0 };
  }
  const blobs = imageBlobs(req.spec);
  const expiresAt = new Date(run.now().getTime() + Math.min(req.sasMaxLifetimeMinutes, IMAGE_SAS_MINUTES) * 60_000).toISOString();
  const blobUrls = blobs.length ? yield* run.call('imageBlobUrls', { blobs, expiresAt }) : [];
  if (container.imageDistribution === 'registry') {
    const task = pullTask(req.jobId, req.spec, blobUrls, req.poolIdentityClientId);
    yield* nodeTaskWindow(run, {
      stage: 'PullingImages',
      batchJobId: req.batchJobId,
      nodes: req.nodes,
      items: container.images.map(imageLabel),
      concurrency: container.pullConcurrency,
      maxAttempts: req.maxAttempts,
      taskPrefix: req.taskPrefix ?? 'pull',
      progressKey: 'imagesPulled',
      inFlightState: 'pulling',
      doneState: 'pulled',
      taskFor: () => pullNodeTask(task),
      onNodesDone: req.onNodesPulled,
    });
    return { fromRegistry: req.nodes.length, fromPeers: 0 };
  }
  return yield* distribute(run, req, blobUrls);
}

/** The image tree: issue the planner's transfers as pinned node tasks, feed their results back, until every node holds the images. */
function* distribute(run: PipelineRun, req: PullImagesRequest, blobUrls: string[]): Orchestration<PullImagesResult> {
  const { container } = req.spec;
  const holders = (req.holders ?? []).filter((h) => !req.nodes.some((n) => n.id === h.id));
  const byId = new Map([...req.nodes, ...holders].map((n) => [n.id, n]));
  const indexOf = new Map(req.nodes.map((n, i) => [n.id, i]));
  const prefix = req.taskPrefix ?? 'pull';
  let plan: TreePlanState = initTreePlan({
    nodes: req.nodes.map((n) => n.id),
    holders: holders.map((n) => n.id),
    images: container.images.map(imageLabel),
    registrySlots: container.pullConcurrency,
    maxAttempts: req.maxAttempts,
    backoff: { baseMs: 2 * run.pollDelayMs(0), maxMs: 60_000, factor: 2 },
    pinRegistryDigests: container.runtime === 'docker',
  });
  const inFlight = new Map<string, TransferWork>();

  const nodeStates: Record<string, NodeProgress> = {};
  const announced = new Set<string>();

  const taskFor = (w: TransferWork): Omit<NodeTaskRequest, 'id' | 'affinityId'> => {
    if (w.source.kind === 'registry') return pullNodeTask(seedPullTask(req.jobId, req.spec, blobUrls, w.expectedDigests, req.poolIdentityClientId));
    const source = byId.get(w.source.nodeId)!;
    return pullNodeTask(peerCopyTask(req.jobId, req.spec, { nodeId: source.id, ipAddress: source.ipAddress }, w.expectedDigests, w.turn));
  };
  const report = () => {
    const p = treeProgress(plan, run.now().getTime());
    const counter: Counter = { done: p.holding, total: p.total };
    run.report({ progress: { imagesPulled: counter }, nodes: { ...run.nodeStates(), ...nodeStates } });
  };

  // Looks since transfers were last issued (their backoff position) and all looks (the jitter's key).
  let looks = 0;
  let allLooks = 0;
  for (;;) {
    const now = run.now().getTime();
    const next = nextTransfers(plan, now);
    plan = next.state;
    if (next.work.length) {
      looks = 0;
      const tasks: NodeTaskRequest[] = next.work.map((w) => {
        const node = byId.get(w.nodeId)!;
        const id = nodeTaskId(prefix, indexOf.get(w.nodeId)!, w.attempt);
        inFlight.set(id, w);
        nodeStates[w.nodeId] = 'pulling';
        return { id, affinityId: node.affinityId, ...taskFor(w) };
      });
      for (const chunk of messageSizedChunks(tasks)) yield* run.call('nodeTasksAdd', { batchJobId: req.batchJobId, tasks: chunk });
    }
    report();
    if (isTreeDone(plan)) break;

    // Poll at the base interval while work is in flight; when only backoff holds work back, wake when it ends.
    const wait =
      inFlight.size > 0 ? run.lookDelayMs(looks, `${prefix}:${allLooks}`, run.pollDelayMs(0)) : Math.max(run.pollDelayMs(0), (next.wakeAtMs ?? now) - now);
    yield* run.sleep('PullingImages', wait);
    if (inFlight.size === 0) continue;
    looks++;
    allLooks++;

    const observed = yield* observeTransfers(run, req, plan, inFlight);
    const { results, taskOf } = transferResults(plan, inFlight, observed, byId);
    plan = onTransferResults(plan, results, { nowMs: run.now().getTime(), rand01: (r) => deterministicRand01(`${run.jobId}:${taskOf.get(r)}`) });
    const ready = newHolders(plan, announced, nodeStates, byId);
    if (plan.failure) nodeStates[plan.failure.nodeId] = 'failed';
    if (ready.length && !plan.failure) req.onNodesPulled?.(ready.map((n) => n.id));
  }

  return treeOutcome(run, plan);
}

/**
 * Looks at the transfers in flight. Only the registry pulls made before the digests were pinned print digests nobody
 * knows: a transfer issued with the pinned ones, or a peer copy (its source's), checks them itself and fails on
 * others. So a look reads at most the seeds' stdout, not one per node.
 */
function* observeTransfers(
  run: PipelineRun,
  req: PullImagesRequest,
  plan: TreePlanState,
  inFlight: ReadonlyMap<string, TransferWork>,
): Orchestration<NodeTaskObservation[]> {
  const taskIds = [...inFlight.keys()];
  const pending = new Set([...inFlight.values()].map((w) => w.nodeId));
  // A copy whose source's digests are known, or will be (the source's own transfer is in flight), is not read.
  const sourceKnown = (w: TransferWork) => w.source.kind === 'peer' && (!!plan.nodes[w.source.nodeId]?.digests || pending.has(w.source.nodeId));
  const digestsOf = taskIds.filter((id) => !inFlight.get(id)!.expectedDigests && !sourceKnown(inFlight.get(id)!));
  return yield* run.call('nodeTasksObserve', { batchJobId: req.batchJobId, taskIds, digests: req.spec.container.images.length, digestsOf });
}

/** The transfers this look saw end, as the planner's results (each taken out of `inFlight`), and the task of each. */
function transferResults(
  plan: TreePlanState,
  inFlight: Map<string, TransferWork>,
  observed: readonly NodeTaskObservation[],
  byId: ReadonlyMap<string, NodeRef>,
): { results: TransferResult[]; taskOf: Map<TransferResult, string> } {
  const digestsOfTask = transferDigests(plan, inFlight, observed);
  const results: TransferResult[] = [];
  const taskOf = new Map<TransferResult, string>();
  for (const o of observed) {
    const work = inFlight.get(o.id);
    if (!work || (o.state !== 'completed' && o.state !== 'missing')) continue;
    const ok = o.state === 'completed' && o.exitCode === 0;
    // A copy that ended before Batch showed its source's transfer ended: its digests are known at the next look.
    const source = work.source.kind === 'peer' ? work.source.nodeId : undefined;
    if (
      ok &&
      source &&
      !digestsOfTask.has(o.id) &&
      observed.some((x) => inFlight.get(x.id)?.nodeId === source && x.state !== 'completed' && x.state !== 'missing')
    )
      continue;
    // Taken out while looking: a later copy's check above sees this transfer ended.
    inFlight.delete(o.id);
    const lost = o.state === 'completed' && o.exitCode === SOURCE_LOST_EXIT && work.source.kind === 'peer';
    const r: TransferResult = {
      nodeId: work.nodeId,
      ranOnNodeId: o.nodeId && byId.has(o.nodeId) ? o.nodeId : work.nodeId,
      attempt: work.attempt,
      outcome: ok ? 'ok' : lost ? 'sourceLost' : 'failed',
      ...(ok ? { digests: digestsOfTask.get(o.id) } : { message: failureMessage(o) }),
    };
    taskOf.set(r, o.id);
    results.push(r);
  }
  return { results, taskOf };
}

/** The nodes that hold the images since this look, in the tree's order; each announced once. */
function newHolders(plan: TreePlanState, announced: Set<string>, nodeStates: Record<string, NodeProgress>, byId: ReadonlyMap<string, NodeRef>): NodeRef[] {
  const ready: NodeRef[] = [];
  for (const id of plan.order) {
    if (plan.nodes[id].holds && !announced.has(id)) {
      announced.add(id);
      nodeStates[id] = 'pulled';
      ready.push(byId.get(id)!);
    }
  }
  return ready;
}

/** The tree's end: a node that could not get the images fails the stage, else where the images came from. */
function treeOutcome(run: PipelineRun, plan: TreePlanState): PullImagesResult {
  if (plan.failure) {
    const f = plan.failure;
    throw new StageFailed(
      'PullingImages',
      `node ${f.nodeId}${f.ranOnNodeId !== f.nodeId ? ` (ran on ${f.ranOnNodeId})` : ''} failed after ${f.attempts} attempt(s): ${f.message}`,
    );
  }
  const missing = nodesWithoutImages(plan);
  if (missing.length) throw new StageFailed('PullingImages', `nodes not covered: ${missing.join(', ')}`);
  run.report({ lastError: undefined });
  const p = treeProgress(plan);
  return { ...(plan.pinned ? { digests: plan.pinned } : {}), fromRegistry: p.fromRegistry, fromPeers: p.fromPeers };
}

/**
 * The digests each successful transfer of this look ended with: what it printed (the seeds' stdout, read), else the
 * pinned ones it was issued with, else, for a peer copy, its source's (the copy checked them against the source's),
 * the source holding since an earlier look or from this one (a chain of copies is followed).
 */
function transferDigests(plan: TreePlanState, inFlight: ReadonlyMap<string, TransferWork>, observed: readonly NodeTaskObservation[]): Map<string, string[]> {
  const held = new Map<string, string[]>();
  for (const [id, n] of Object.entries(plan.nodes)) if (n.holds && n.digests) held.set(id, n.digests);
  const ok = observed.filter((o) => inFlight.has(o.id) && o.state === 'completed' && o.exitCode === 0);
  const out = new Map<string, string[]>();
  for (let changed = true; changed;) {
    changed = false;
    for (const o of ok) {
      if (out.has(o.id)) continue;
      const w = inFlight.get(o.id)!;
      const d = o.digests ?? w.expectedDigests ?? (w.source.kind === 'peer' ? held.get(w.source.nodeId) : undefined);
      if (!d) continue;
      out.set(o.id, [...d]);
      held.set(w.nodeId, d);
      changed = true;
    }
  }
  return out;
}

/**
 * An activity's input travels in one storage queue message (64 KiB; the local engine does not offload larger ones to
 * blobs, and offloading costs a blob round trip on Azure): the whole tree is issued at once, about 2 KB per copy task,
 * so the tasks go in chunks of at most this many characters of JSON.
 */
const TASKS_CHUNK_CHARS = 32_000;

function messageSizedChunks(tasks: NodeTaskRequest[]): NodeTaskRequest[][] {
  const chunks: NodeTaskRequest[][] = [];
  let size = 0;
  for (const t of tasks) {
    const n = JSON.stringify(t).length;
    if (!chunks.length || size + n > TASKS_CHUNK_CHARS) {
      chunks.push([]);
      size = 0;
    }
    chunks[chunks.length - 1].push(t);
    size += n;
  }
  return chunks;
}
