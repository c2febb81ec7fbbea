/**
 * Image distribution tree: which nodes pull the job's images from the registry, and which copy them from a node
 * that holds them, as a pure, JSON-serializable state machine (no clock, no randomness: time and jitter come in).
 *
 * At most `registrySlots` (the job's pullConcurrency, ≤ 10) nodes ever pull from the registry at once: the first
 * `registrySlots` nodes are the seeds; every other node copies from a peer over the cluster network. Transfers are
 * dataflow: a node's copy may be issued while its source is still getting the image (the node task waits on the
 * source, holding no registry slot), so the whole tree is issued at once and the orchestrator's polling does not add a
 * round trip per level. A source serves at most `fanOut` copies at a time (the node enforces it with a lock); the
 * planner picks, for every node, the source that would finish it earliest given the copies already queued on each
 * source (greedy earliest finish, in units of one node-to-node copy), which builds a binomial tree: holders double
 * every copy time with fanOut 1, so N nodes hold the image after one registry pull plus ⌈log2(N / seeds)⌉ copies.
 * Kraken and Dragonfly bound fan-out the same way: a per-peer upload/connection limit and a limit on back-to-source
 * downloads; we add the deterministic tree because the node set is known up front.
 *
 * Failure handling: a copy whose source failed or became unreachable (outcome `sourceLost`) never uses that source
 * again for that node and is re-planned at once onto another holder; a holder that several nodes could not reach
 * serves nobody any more; when no node can serve, a node falls back to the registry within the same cap. Every
 * transfer reports the image digests the node ended up with: the first success pins them, and a node reporting other
 * digests has not got the image (its source is avoided, the node is retried). Affinity is a hint, as in pullWindow.
 */
import { BackoffOptions, DEFAULT_PULL_BACKOFF, classifyError, delayMs } from './backoff';
import { PlanningError } from './errors';

export type TransferSource = { kind: 'registry' } | { kind: 'peer'; nodeId: string };

export interface TreePlanOptions {
  /** The nodes that must end up holding every image, in issue order (the first ones are the seeds). */
  nodes: string[];
  images: string[];
  /** Nodes that already hold every image (an earlier round of the job): they serve, they get no work. */
  holders?: string[];
  /** Most nodes pulling from the registry at once, and the number of seeds. Default 10. */
  registrySlots?: number;
  /** Copies one node serves at the same time. Default 1 (with whole-image copies, serial serving is fastest). */
  fanOut?: number;
  /** Copies queued on one source (waiting or running). Default 8. */
  maxQueuePerSource?: number;
  /** Registry pull time in units of one node-to-node copy, for choosing sources. Default 1. */
  registryRounds?: number;
  maxAttempts?: number;
  maxThrottledAttempts?: number;
  maxRedirects?: number;
  /** Times a node may lose its source (source failed, unreachable, timed out) before the plan gives up. Default 6. */
  maxSourceLosses?: number;
  /** Nodes that may lose one holder before that holder serves nobody. Default 2. */
  maxLostByPerSource?: number;
  backoff?: BackoffOptions;
  /** Digests per image when known already (an earlier round): every transfer must end with these. */
  pinnedDigests?: string[];
  /**
   * Whether every registry pull must end with the same digests (default true). Docker image ids are content digests,
   * so two pulls of one tag agree unless the tag moved. A SIF that singularity builds from `docker://` is not
   * byte-for-byte reproducible (it carries build times): each seed's own file is checked by the nodes that copy it.
   */
  pinRegistryDigests?: boolean;
}

export interface NodeTreeState {
  holds: boolean;
  inFlight: { attempt: number; source: TransferSource; seq: number } | null;
  attempts: number;
  failures: number;
  throttles: number;
  redirects: number;
  sourceLosses: number;
  notBeforeMs: number;
  /** Sources that failed this node: never used for it again. */
  avoid: string[];
  /** Nodes that could not reach this one while it held the image. */
  lostBy: number;
  /** Held (or reported) digests that differ from the pinned ones: this node serves nobody until it gets the image again. */
  badDigest: boolean;
  lastMessage?: string;
  coveredBy?: string;
  /** Where the image came from when it was got. */
  gotFrom?: TransferSource;
  digests?: string[];
}

export type TreeFailureReason = 'permanent' | 'maxAttempts' | 'throttled' | 'redirects' | 'sources' | 'digest';

export interface TreeFailure {
  nodeId: string;
  ranOnNodeId: string;
  message: string;
  attempts: number;
  reason: TreeFailureReason;
}

export interface TreePlanState {
  version: 1;
  images: string[];
  registrySlots: number;
  fanOut: number;
  maxQueuePerSource: number;
  registryRounds: number;
  maxAttempts: number;
  maxThrottledAttempts: number;
  maxRedirects: number;
  maxSourceLosses: number;
  maxLostByPerSource: number;
  backoff: BackoffOptions;
  /** Nodes to cover, in issue order. */
  order: string[];
  /** Nodes that pull from the registry (the first `registrySlots` of `order` when nobody holds the images yet). */
  seeds: string[];
  /** Every node: those to cover and the holders given at the start. */
  nodes: Record<string, NodeTreeState>;
  /** Issue counter: orders the copies queued on a source. */
  seq: number;
  pinned?: string[];
  /** See TreePlanOptions.pinRegistryDigests. */
  pinsRegistry: boolean;
  failure?: TreeFailure;
}

export interface TransferWork {
  nodeId: string;
  source: TransferSource;
  images: string[];
  attempt: number;
  /** Unique per (node, attempt). */
  workId: string;
  /** Digests the node must end with, when already pinned. */
  expectedDigests?: string[];
  /**
   * Peer copies: how many copies were queued on the source before this one when it was issued. The source serves its
   * copies in this order (a lock alone is not fair: a node that serves a late-round copy first delays the subtree of
   * its first-round one, which lengthens the tree's critical path by up to one copy per level).
   */
  turn?: number;
}

export type TransferOutcome = 'ok' | 'failed' | 'throttled' | 'sourceLost';

export interface TransferResult {
  nodeId: string;
  ranOnNodeId: string;
  attempt: number;
  outcome: TransferOutcome;
  message?: string;
  /** On success: the digest of every image as the node holds it (docker: image id; singularity: sha256 of the SIF). */
  digests?: string[];
}

export interface TreeProgress {
  holding: number;
  total: number;
  inFlight: number;
  waiting: number;
  fromRegistry: number;
  fromPeers: number;
  failed: number;
}

function positiveInt(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) throw new PlanningError(`${name} must be a positive whole number`, { [name]: value });
  return value;
}

function freshNode(holds: boolean): NodeTreeState {
  return {
    holds,
    inFlight: null,
    attempts: 0,
    failures: 0,
    throttles: 0,
    redirects: 0,
    sourceLosses: 0,
    notBeforeMs: 0,
    avoid: [],
    lostBy: 0,
    badDigest: false,
  };
}

export function initTreePlan(options: TreePlanOptions): TreePlanState {
  const order = [...options.nodes];
  const holders = [...new Set(options.holders ?? [])];
  const all = [...order, ...holders];
  if (all.some((n) => typeof n !== 'string' || n.length === 0))
    throw new PlanningError('node ids must be non-empty strings', { nodes: options.nodes, holders });
  if (new Set(all).size !== all.length)
    throw new PlanningError('node ids must be unique, and a holder is not a node to cover', { nodes: options.nodes, holders });
  const images = [...new Set(options.images)];
  if (options.pinnedDigests && options.pinnedDigests.length !== images.length) {
    throw new PlanningError('pinnedDigests must give one digest per image', { pinnedDigests: options.pinnedDigests, images });
  }
  const registrySlots = positiveInt('registrySlots', options.registrySlots ?? 10);
  const nodes: Record<string, NodeTreeState> = {};
  for (const id of order) nodes[id] = freshNode(images.length === 0);
  for (const id of holders) nodes[id] = freshNode(true);
  const registryRounds = options.registryRounds ?? 1;
  if (!(registryRounds > 0 && Number.isFinite(registryRounds))) throw new PlanningError('registryRounds must be a positive number', { registryRounds });
  return {
    version: 1,
    images,
    registrySlots,
    fanOut: positiveInt('fanOut', options.fanOut ?? 1),
    maxQueuePerSource: positiveInt('maxQueuePerSource', options.maxQueuePerSource ?? 8),
    registryRounds,
    maxAttempts: positiveInt('maxAttempts', options.maxAttempts ?? 3),
    maxThrottledAttempts: positiveInt('maxThrottledAttempts', options.maxThrottledAttempts ?? 12),
    maxRedirects: positiveInt('maxRedirects', options.maxRedirects ?? 10),
    maxSourceLosses: positiveInt('maxSourceLosses', options.maxSourceLosses ?? 6),
    maxLostByPerSource: positiveInt('maxLostByPerSource', options.maxLostByPerSource ?? 2),
    backoff: options.backoff ?? DEFAULT_PULL_BACKOFF,
    order,
    seeds: holders.length ? [] : order.slice(0, registrySlots),
    nodes,
    seq: 0,
    ...(options.pinnedDigests ? { pinned: [...options.pinnedDigests] } : {}),
    pinsRegistry: options.pinRegistryDigests ?? true,
  };
}

/** Can `id` serve copies at all (it holds or is getting the image, and nobody found it broken)? */
function canServe(state: TreePlanState, id: string): boolean {
  const n = state.nodes[id];
  return (n.holds || n.inFlight !== null) && !n.badDigest && n.lostBy < state.maxLostByPerSource;
}

/**
 * Estimated time (in copy units from now) each serving node holds the image, and when each of its upload slots is
 * free, from the copies already in flight (in issue order, so a source serves the copies queued first first).
 */
class Schedule {
  readonly ready = new Map<string, number>();
  readonly slots = new Map<string, number[]>();
  readonly queued = new Map<string, number>();
  registryInFlight = 0;

  constructor(private readonly state: TreePlanState) {
    for (const id of Object.keys(state.nodes)) if (state.nodes[id].holds) this.ready.set(id, 0);
    const flying = Object.entries(state.nodes)
      .filter(([, n]) => n.inFlight !== null)
      .sort((a, b) => a[1].inFlight!.seq - b[1].inFlight!.seq);
    for (const [id, n] of flying) {
      const src = n.inFlight!.source;
      if (src.kind === 'registry') {
        this.registryInFlight++;
        if (!n.holds) this.ready.set(id, state.registryRounds);
      } else {
        this.queued.set(src.nodeId, (this.queued.get(src.nodeId) ?? 0) + 1);
        const finish = this.take(src.nodeId);
        if (!n.holds) this.ready.set(id, finish);
      }
    }
  }

  private slotsOf(src: string): number[] {
    let s = this.slots.get(src);
    if (!s) {
      s = new Array<number>(this.state.fanOut).fill(0);
      this.slots.set(src, s);
    }
    return s;
  }

  /** When a copy from `src` queued now would finish. */
  finishFrom(src: string): number {
    const ready = this.ready.get(src) ?? this.latest() + 1;
    return Math.max(ready, Math.min(...this.slotsOf(src))) + 1;
  }

  /** Queues a copy on `src`'s earliest free slot; returns its finish. */
  take(src: string): number {
    const finish = this.finishFrom(src);
    const s = this.slotsOf(src);
    s[s.indexOf(Math.min(...s))] = finish;
    return finish;
  }

  latest(): number {
    let m = 0;
    for (const v of this.ready.values()) m = Math.max(m, v);
    return m;
  }
}

export interface NextTransfers {
  state: TreePlanState;
  /** Transfers to start now; already marked in flight in `state`. */
  work: TransferWork[];
  /** When nothing more can start now only because of backoff: the earliest time something becomes startable. */
  wakeAtMs?: number;
}

export function nextTransfers(state: TreePlanState, nowMs: number): NextTransfers {
  if (state.failure) return { state, work: [] };
  const sched = new Schedule(state);
  const nodes = { ...state.nodes };
  const view: TreePlanState = { ...state, nodes };
  const rank = new Map(Object.keys(nodes).map((id, i) => [id, i]));
  let seq = state.seq;
  const work: TransferWork[] = [];
  let wakeAtMs: number | undefined;
  let blockedOnSlot = false;

  for (const id of state.order) {
    const n = nodes[id];
    if (n.holds || n.inFlight !== null) continue;
    if (n.notBeforeMs > nowMs) {
      wakeAtMs = wakeAtMs === undefined ? n.notBeforeMs : Math.min(wakeAtMs, n.notBeforeMs);
      continue;
    }
    let source: TransferSource | undefined;
    if (!state.seeds.includes(id)) {
      let best: { src: string; finish: number } | undefined;
      for (const src of sched.ready.keys()) {
        if (src === id || n.avoid.includes(src) || !canServe(view, src)) continue;
        if ((sched.queued.get(src) ?? 0) >= state.maxQueuePerSource) continue;
        const finish = sched.finishFrom(src);
        if (!best || finish < best.finish || (finish === best.finish && rank.get(src)! < rank.get(best.src)!)) best = { src, finish };
      }
      if (best) source = { kind: 'peer', nodeId: best.src };
    }
    // Seeds pull from the registry; any other node only when nobody can serve it (a fallback within the same cap).
    if (!source) {
      if (sched.registryInFlight >= state.registrySlots) {
        blockedOnSlot = true;
        continue;
      }
      source = { kind: 'registry' };
    }
    const attempt = n.attempts + 1;
    seq++;
    nodes[id] = { ...n, attempts: attempt, inFlight: { attempt, source, seq } };
    if (source.kind === 'registry') {
      sched.registryInFlight++;
      sched.ready.set(id, state.registryRounds);
    }
    let turn: number | undefined;
    if (source.kind === 'peer') {
      turn = sched.queued.get(source.nodeId) ?? 0;
      sched.queued.set(source.nodeId, turn + 1);
      sched.ready.set(id, sched.take(source.nodeId));
    }
    work.push({
      nodeId: id,
      source,
      images: [...state.images],
      attempt,
      workId: `${id}#${attempt}`,
      ...(state.pinned ? { expectedDigests: [...state.pinned] } : {}),
      ...(turn !== undefined ? { turn } : {}),
    });
  }
  const next = work.length ? { ...state, nodes, seq } : state;
  // A wake-up helps only when something other than a full registry holds the node back.
  return wakeAtMs !== undefined && !blockedOnSlot ? { state: next, work, wakeAtMs } : { state: next, work };
}

export interface TreeResultContext {
  nowMs: number;
  /** Jitter in [0, 1) for a backoff a result may cause, per result (e.g. deterministicRand01 of the task id). */
  rand01: (r: TransferResult) => number;
}

const sameDigests = (a: string[] | undefined, b: string[]) => !!a && a.length === b.length && a.every((d, i) => d === b[i]);

/**
 * Applies the results of one observation. Registry transfers are applied first, so the digests they pin check the
 * copies observed in the same poll. Stale and duplicate results are ignored.
 */
export function onTransferResults(state: TreePlanState, results: TransferResult[], ctx: TreeResultContext): TreePlanState {
  const live = results
    .map((r) => ({ r, f: state.nodes[r.nodeId]?.inFlight }))
    .filter((x): x is { r: TransferResult; f: NonNullable<NodeTreeState['inFlight']> } => !!x.f && x.f.attempt === x.r.attempt)
    .sort((a, b) => (a.f.source.kind === b.f.source.kind ? a.f.seq - b.f.seq : a.f.source.kind === 'registry' ? -1 : 1));
  let s = state;
  for (const { r } of live) s = applyResult(s, r, ctx.nowMs, ctx.rand01(r));
  return s;
}

function applyResult(state: TreePlanState, result: TransferResult, nowMs: number, rand01: number): TreePlanState {
  const node = state.nodes[result.nodeId];
  if (!node || node.inFlight === null || node.inFlight.attempt !== result.attempt) return state;
  const source = node.inFlight.source;
  const nodes = { ...state.nodes };
  const updated: NodeTreeState = { ...node, inFlight: null, avoid: [...node.avoid] };
  nodes[result.nodeId] = updated;
  if (result.message !== undefined) updated.lastMessage = result.message;
  let pinned = state.pinned;
  let failure = state.failure;
  const fail = (reason: TreeFailureReason, message: string) => {
    failure ??= { nodeId: result.nodeId, ranOnNodeId: result.ranOnNodeId, message, attempts: updated.attempts, reason };
  };
  const from = source.kind === 'registry' ? 'the registry' : `node ${source.nodeId}`;
  const avoidSource = () => {
    if (source.kind === 'peer' && !updated.avoid.includes(source.nodeId)) updated.avoid.push(source.nodeId);
  };
  const retryLater = (count: number) => {
    updated.notBeforeMs = nowMs + delayMs(count, state.backoff, rand01);
  };

  let outcome = result.outcome;
  let message = result.message ?? '';
  const ranOn = nodes[result.ranOnNodeId] ? result.ranOnNodeId : result.nodeId;

  if (outcome === 'ok') {
    const digests = result.digests;
    if (!digests || digests.length !== state.images.length || digests.some((d) => !d)) {
      outcome = 'failed';
      message = `node ${ranOn} reported no digest for every image after getting them from ${from}`;
    } else {
      // Without pinned digests, a copy must still end with what its source holds.
      const reference = pinned ?? (source.kind === 'peer' ? state.nodes[source.nodeId]?.digests : undefined);
      if (reference && !sameDigests(digests, reference)) {
        const bad = digests.findIndex((d, i) => d !== reference[i]);
        if (source.kind === 'registry') {
          // The registry itself served something else: the tag moved during the job. Copying on would mix images.
          fail(
            'digest',
            `image ${state.images[bad]} on node ${ranOn} has digest ${digests[bad]}, but other nodes pulled ${reference[bad]} from the registry: the tag changed while the job pulled it (pin the image by digest)`,
          );
        }
        outcome = 'failed';
        message = `image digest mismatch on node ${ranOn}: got ${digests[bad]} from ${from}, expected ${reference[bad]}`;
        if (ranOn !== result.nodeId) nodes[ranOn] = { ...nodes[ranOn], badDigest: true };
        else updated.badDigest = true;
      } else if (state.pinsRegistry) {
        pinned ??= [...digests];
      }
    }
  }
  if (outcome === 'sourceLost' && source.kind === 'registry') outcome = 'failed';
  if (outcome === 'failed' && classifyError(message) === 'transient') outcome = 'throttled';
  if (outcome !== 'ok' && message) updated.lastMessage = message;

  const cover = (id: string) => {
    const other = nodes[id];
    if (other && !other.holds) nodes[id] = { ...other, holds: true, badDigest: false, coveredBy: result.nodeId, gotFrom: source, digests: result.digests };
  };

  if (outcome === 'ok') {
    if (ranOn === result.nodeId) {
      Object.assign(updated, { holds: true, badDigest: false, gotFrom: source, digests: result.digests });
    } else {
      cover(ranOn);
      if (!updated.holds) {
        updated.redirects++;
        updated.notBeforeMs = nowMs;
        if (updated.redirects > state.maxRedirects) {
          fail(
            'redirects',
            `transfer for node ${result.nodeId} ran on other nodes ${updated.redirects} times (last: ${ranOn}); node affinity is not being honoured`,
          );
        }
      }
    }
  } else if (outcome === 'sourceLost') {
    avoidSource();
    updated.sourceLosses++;
    updated.notBeforeMs = nowMs;
    const src = source.kind === 'peer' ? nodes[source.nodeId] : undefined;
    // A holder this node could not reach is suspect; a source that failed to get the image is not (it is retried).
    if (src && src.holds && source.kind === 'peer') nodes[source.nodeId] = { ...src, lostBy: src.lostBy + 1 };
    if (updated.sourceLosses > state.maxSourceLosses) fail('sources', `lost its source ${updated.sourceLosses} times (last: ${from}): ${message}`);
  } else if (outcome === 'throttled') {
    updated.throttles++;
    if (updated.throttles >= state.maxThrottledAttempts) fail('throttled', `${from} still throttling after ${updated.throttles} attempts: ${message}`);
    else retryLater(updated.throttles);
  } else {
    avoidSource();
    updated.failures++;
    if (source.kind === 'registry' && classifyError(message) === 'permanent') fail('permanent', message);
    else if (updated.failures >= state.maxAttempts) fail('maxAttempts', message);
    else retryLater(updated.failures);
  }
  const next: TreePlanState = { ...state, nodes };
  if (pinned) next.pinned = pinned;
  if (failure) next.failure = failure;
  return next;
}

export function isTreeComplete(state: TreePlanState): boolean {
  return state.order.every((id) => state.nodes[id].holds);
}

export function isTreeDone(state: TreePlanState): boolean {
  return state.failure !== undefined || isTreeComplete(state);
}

export function treeProgress(state: TreePlanState, nowMs?: number): TreeProgress {
  const p: TreeProgress = { holding: 0, total: state.order.length, inFlight: 0, waiting: 0, fromRegistry: 0, fromPeers: 0, failed: state.failure ? 1 : 0 };
  for (const id of state.order) {
    const n = state.nodes[id];
    if (n.holds) {
      p.holding++;
      if (n.gotFrom?.kind === 'registry') p.fromRegistry++;
      else if (n.gotFrom?.kind === 'peer') p.fromPeers++;
    }
    if (n.inFlight !== null) p.inFlight++;
    else if (!n.holds && nowMs !== undefined && n.notBeforeMs > nowMs) p.waiting++;
  }
  return p;
}

export function nodesWithoutImages(state: TreePlanState): string[] {
  return state.order.filter((id) => !state.nodes[id].holds);
}

/**
 * Copy rounds a tree of `nodes` needs after the seeds' registry pull: ⌈log_{1+fanOut}(nodes / seeds)⌉ (0 when seeds
 * cover all). With `maxCopiesPerSource` (the planner's maxQueuePerSource), a holder serves at most that many copies in
 * all, `fanOut` a round: a deep tree then needs more rounds than the logarithm (2 seeds, fanOut 3, 127 nodes: the
 * seeds would each serve 9 copies in 3 rounds; capped at 8 it takes 4).
 */
export function treeDepth(nodes: number, seeds: number, fanOut = 1, maxCopiesPerSource = Infinity): number {
  if (nodes <= seeds) return 0;
  // Holders by the round they got the images (the seeds at round 0); a holder of round r has served
  // min(cap, fanOut × (t - 1 - r)) copies before round t.
  const cohorts: number[] = [seeds];
  let holders = seeds;
  let rounds = 0;
  while (holders < nodes) {
    let added = 0;
    cohorts.forEach((count, r) => {
      const served = Math.min(maxCopiesPerSource, fanOut * (rounds - r));
      added += count * Math.max(0, Math.min(fanOut, maxCopiesPerSource - served));
    });
    if (added === 0) return Infinity;
    rounds++;
    cohorts.push(added);
    holders += added;
  }
  return rounds;
}
