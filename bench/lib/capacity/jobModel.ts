/**
 * One job through the pipeline as a discrete-event simulation, driving the project's own pure decisions rather than a
 * re-implementation of them:
 *   provisioning   shared/core/planning/provisionPolicy.ts decideProvisionStep on each simulated pool observation
 *   images         shared/core/planning/pullWindow.ts (window) or imageTree.ts (tree): work issued, results fed back at polls
 *   input data     shared/core/planning/shards.ts planShards (bytes per node) and stagingModel.ts modelStagingTime (the copy)
 *   polling        shared/core/planning/backoff.ts backoffCeilingMs: the orchestrator's poll interval grows while nothing
 *                  changes and starts again from the first interval when something did
 *   idle           shared/core/ops/cost.ts idleNodeMinutesBeforeMpi over the simulated readiness and MPI start
 * What is simulated physically (durations, never decisions): node readiness spread over the allocation, registry pulls
 * sharing the registry's egress, peer copies served one at a time per source in the planner's turn order, the shard
 * copy, per-node downloads sharing the staging accounts' egress, the preflight check, the MPI task's start.
 * The sequence is the pipeline's (docs/pipeline.md): sequential = provisioning → images → copy → downloads → preflight
 * → MPI; overlapped = copy from admission beside provisioning, each node's download once its images are seen pulled and
 * the copy is done, preflight after every download.
 */
import { backoffCeilingMs, type BackoffOptions } from '../../../shared/core/planning/backoff';
import { decideProvisionStep, type ObservedNode } from '../../../shared/core/planning/provisionPolicy';
import { initPullPlan, nextPulls, onPullResult, isDone as pullsDone, type PullPlanState, type PullWork } from '../../../shared/core/planning/pullWindow';
import { initTreePlan, nextTransfers, onTransferResults, isTreeDone, type TreePlanState, type TransferWork } from '../../../shared/core/planning/imageTree';
import { buildNodeManifests, planShards, type ListedBlob } from '../../../shared/core/planning/shards';
import { modelStagingTime, type StorageAccountLimits } from '../../../shared/core/planning/stagingModel';
import { idleNodeMinutesBeforeMpi } from '../../../shared/core/ops/cost';
import { EventQueue, runEvents } from './eventQueue';

export type Staging = 'sequential' | 'overlapped';
export type Distribution = 'window' | 'tree';

export interface JobInputs {
  nodes: number;
  inputBytes: number;
  /** Size of one input file (the input is that many equal files; sharding packs or splits them). */
  inputFileBytes: number;
  imageBytes: number;
  /** Submission → the pool create request (HTTP intake, queue trigger, orchestrator start, admission). */
  intakeS: number;
  /** Pool create → first / last node idle; nodes become idle evenly between the two. */
  allocationFirstS: number;
  allocationLastS: number;
  /** The orchestrator's polling: durable timers between observations. */
  poll: BackoffOptions;
  /** Registry egress shared by every concurrent pull, bytes/s. */
  registryBps: number;
  /** One pull's own rate cap (client, per-operation bandwidth), bytes/s. */
  perPullBps: number;
  /** Fixed cost of one pull task (task start, auth, manifest, unpack). */
  pullOverheadS: number;
  /** Node-to-node copy rate, bytes/s. */
  peerBps: number;
  peerOverheadS: number;
  /** Measured copy duration (overrides the storage model); otherwise modelStagingTime's copy estimate. */
  copyS?: number;
  copyOverheadS: number;
  stagingAccounts: number;
  accountLimits: StorageAccountLimits;
  /** Node network for downloads, bytes/s. */
  nodeBps: number;
  downloadOverheadS: number;
  /** Measured per-node download duration (overrides the bandwidth model). */
  downloadS?: number;
  preflightS: number;
  /** MPI task added → running on every node. */
  mpiStartS: number;
  /** The pull window (registrySlots of the tree). */
  pullConcurrency: number;
}

export interface JobDesign {
  staging: Staging;
  distribution: Distribution;
}

export interface Span {
  start: number;
  end: number;
}

export interface JobFigures {
  design: JobDesign;
  submitToMpiS: number;
  idleNodeMinutes: number;
  registryPulls: number;
  registryBytes: number;
  peerCopies: number;
  polls: number;
  phases: { provisioning: Span; images: Span; copy: Span; downloads: Span; preflight: Span };
  /** First transfer start → last transfer end (what bench/stagger.ts calls "ready"). */
  imagesReadyS: number;
  copyBottleneck: string;
  downloadBottleneck: string;
  events: number;
}

type Ev =
  | { kind: 'admit' }
  | { kind: 'nodeIdle'; node: string }
  | { kind: 'poll' }
  | { kind: 'transferDone'; node: string; attempt: number; ranOn: string; fromRegistry: boolean }
  | { kind: 'copyDone' }
  | { kind: 'downloadDone'; node: string }
  | { kind: 'preflightDone' };

const nodeId = (i: number) => `n${String(i).padStart(4, '0')}`;

function validate(i: JobInputs): void {
  const positive: (keyof JobInputs)[] = [
    'nodes',
    'imageBytes',
    'registryBps',
    'perPullBps',
    'peerBps',
    'nodeBps',
    'stagingAccounts',
    'pullConcurrency',
    'inputFileBytes',
  ];
  for (const k of positive)
    if (!((i[k] as number) > 0 && Number.isFinite(i[k] as number))) throw new RangeError(`${k} must be a finite number > 0, got ${String(i[k])}`);
  const nonNeg: (keyof JobInputs)[] = [
    'inputBytes',
    'intakeS',
    'allocationFirstS',
    'allocationLastS',
    'pullOverheadS',
    'peerOverheadS',
    'copyOverheadS',
    'downloadOverheadS',
    'preflightS',
    'mpiStartS',
  ];
  for (const k of nonNeg)
    if (!((i[k] as number) >= 0 && Number.isFinite(i[k] as number))) throw new RangeError(`${k} must be a finite number >= 0, got ${String(i[k])}`);
  if (i.allocationLastS < i.allocationFirstS) throw new RangeError('allocationLastS must not be before allocationFirstS');
  if (!Number.isSafeInteger(i.nodes)) throw new RangeError('nodes must be a whole number');
}

/** Bytes each node downloads, from the real shard plan of `inputBytes` split into equal files. */
export function bytesPerNode(i: Pick<JobInputs, 'nodes' | 'inputBytes' | 'inputFileBytes' | 'stagingAccounts'>): number[] {
  if (i.inputBytes === 0) return new Array<number>(i.nodes).fill(0);
  const files = Math.max(1, Math.round(i.inputBytes / i.inputFileBytes));
  const size = Math.floor(i.inputBytes / files);
  const listing: ListedBlob[] = Array.from({ length: files }, (_, k) => ({ account: 'data', container: 'in', name: `f${k}`, size, etag: `"e${k}"` }));
  const plan = planShards(listing, { stagingAccounts: Array.from({ length: i.stagingAccounts }, (_, k) => `stg${k}`), nodes: i.nodes });
  const perNode = new Array<number>(i.nodes).fill(0);
  for (const m of buildNodeManifests(plan)) perNode[m.node] = m.shards.reduce((s, x) => s + x.bytes, 0);
  return perNode;
}

export function simulateJob(inputs: JobInputs, design: JobDesign): JobFigures {
  validate(inputs);
  const q = new EventQueue<Ev>();
  const ids = Array.from({ length: inputs.nodes }, (_, k) => nodeId(k));
  const staging = modelStagingTime({
    totalBytes: inputs.inputBytes,
    stagingAccounts: inputs.stagingAccounts,
    nodes: inputs.nodes,
    limits: inputs.accountLimits,
    nodeNetworkGbps: (inputs.nodeBps * 8) / 1e9,
  });
  const copyDuration = inputs.inputBytes === 0 ? 0 : (inputs.copyS ?? staging.copy.seconds) + inputs.copyOverheadS;
  const perNodeBytes = bytesPerNode(inputs);
  // Downloads share the staging accounts' egress; each node is also capped by its own network.
  const stagingEgressBps = (inputs.stagingAccounts * inputs.accountLimits.egressGbps * 1e9) / 8;
  const downloadRate = Math.min(inputs.nodeBps, stagingEgressBps / inputs.nodes);

  // --- state ---
  let admitAt = NaN;
  const idleAt = new Map<string, number>();
  const seenReadyAt: Record<string, number> = {};
  let phase: 'provisioning' | 'images' | 'after-images' | 'preflight' | 'mpi' = 'provisioning';
  let ready: string[] = [];
  let pullPlan: PullPlanState | undefined;
  let treePlan: TreePlanState | undefined;
  const finished: { node: string; attempt: number; ranOn: string; at: number }[] = [];
  let registryActive = 0;
  let registryPulls = 0;
  let peerCopies = 0;
  const holdsAt = new Map<string, number>();
  const sourceFreeAt = new Map<string, number>();
  const transferSpans: Span[] = [];
  let copyStart = NaN;
  let copyEnd = NaN;
  let copyDone = false;
  let copySeen = false;
  const pulledSeen = new Set<string>();
  const dlIssued = new Set<string>();
  const dlDone = new Map<string, number>();
  const dlSeen = new Set<string>();
  const dlSpans: Span[] = [];
  let provisionEnd = NaN;
  let preflight: Span = { start: NaN, end: NaN };
  let preflightDone = false;
  let mpiAddedAt = NaN;
  let polls = 0;
  let quietPolls = 0;

  const startCopy = (now: number) => {
    copyStart = now;
    q.push(now + copyDuration, { kind: 'copyDone' });
  };
  const startDownload = (node: string, now: number) => {
    dlIssued.add(node);
    const bytes = perNodeBytes[ids.indexOf(node)] ?? 0;
    const dur = bytes === 0 ? 0 : (inputs.downloadS ?? bytes / downloadRate) + inputs.downloadOverheadS;
    dlSpans.push({ start: now, end: now + dur });
    q.push(now + dur, { kind: 'downloadDone', node });
  };

  /** A registry pull starting now: its duration shares the registry's egress with the pulls already running. */
  const registryPull = (now: number, node: string, attempt: number, ranOn: string) => {
    registryActive++;
    registryPulls++;
    const rate = Math.min(inputs.perPullBps, inputs.registryBps / registryActive);
    const end = now + inputs.pullOverheadS + inputs.imageBytes / rate;
    transferSpans.push({ start: now, end });
    holdsAt.set(ranOn, end);
    q.push(end, { kind: 'transferDone', node, attempt, ranOn, fromRegistry: true });
  };

  const issueWindow = (work: PullWork[], now: number) => {
    for (const w of work) registryPull(now, w.nodeId, w.attempt, w.nodeId);
  };
  const issueTree = (work: TransferWork[], now: number) => {
    // Registry pulls first (they decide when sources hold the image), then copies in turn order per source.
    for (const w of work) if (w.source.kind === 'registry') registryPull(now, w.nodeId, w.attempt, w.nodeId);
    const copies = work.filter((w): w is TransferWork & { source: { kind: 'peer'; nodeId: string } } => w.source.kind === 'peer');
    copies.sort((a, b) => (a.turn ?? 0) - (b.turn ?? 0));
    // A copy can only start once its source holds the image; process in an order where sources are known.
    const pending = [...copies];
    let guard = pending.length * pending.length + 1;
    while (pending.length && guard-- > 0) {
      const w = pending.shift()!;
      const src = w.source.nodeId;
      const srcHolds = holdsAt.get(src);
      if (srcHolds === undefined) {
        pending.push(w);
        continue;
      }
      const start = Math.max(now, srcHolds, sourceFreeAt.get(src) ?? 0);
      const end = start + inputs.peerOverheadS + inputs.imageBytes / inputs.peerBps;
      sourceFreeAt.set(src, end);
      holdsAt.set(w.nodeId, end);
      peerCopies++;
      transferSpans.push({ start, end });
      q.push(end, { kind: 'transferDone', node: w.nodeId, attempt: w.attempt, ranOn: w.nodeId, fromRegistry: false });
    }
    if (pending.length) throw new Error('tree copies whose sources never get the image');
  };

  const imagesDone = () => (design.distribution === 'window' ? pullsDone(pullPlan!) : isTreeDone(treePlan!));

  const schedulePoll = (now: number, changed: boolean) => {
    quietPolls = changed ? 1 : quietPolls + 1;
    q.push(now + backoffCeilingMs(quietPolls, inputs.poll) / 1000, { kind: 'poll' });
  };

  const onPoll = (now: number) => {
    polls++;
    let changed = false;
    if (phase === 'provisioning') {
      const nodes: ObservedNode[] = ids.map((id) => ({ id, state: (idleAt.get(id) ?? Infinity) <= now ? 'idle' : 'starting', ipAddress: '', affinityId: id }));
      for (const n of nodes)
        if (n.state === 'idle' && seenReadyAt[n.id] === undefined) {
          seenReadyAt[n.id] = now;
          changed = true;
        }
      const step = decideProvisionStep(
        {
          state: 'active',
          allocationState: idleAt.size === ids.length && [...idleAt.values()].every((t) => t <= now) ? 'steady' : 'resizing',
          currentDedicatedNodes: ids.length,
          targetDedicatedNodes: ids.length,
          resizeErrors: [],
          nodes,
        },
        { target: ids.length, minNodes: ids.length, timeoutMs: 3_600_000, maxReplacements: 0, owned: true },
        { startedAtMs: admitAt * 1000, nowMs: now * 1000, replacements: 0 },
      );
      if (step.kind === 'fail') throw new Error(`provisioning failed in the model: ${step.reason}`);
      if (step.kind === 'ready') {
        provisionEnd = now;
        ready = step.nodes.map((n) => n.id);
        phase = 'images';
        if (design.distribution === 'window') {
          pullPlan = initPullPlan({ nodes: ready, images: ['app'], concurrency: inputs.pullConcurrency });
          const next = nextPulls(pullPlan, now * 1000);
          pullPlan = next.state;
          issueWindow(next.work, now);
        } else {
          treePlan = initTreePlan({ nodes: ready, images: ['app'], registrySlots: inputs.pullConcurrency });
          const next = nextTransfers(treePlan, now * 1000);
          treePlan = next.state;
          issueTree(next.work, now);
        }
        changed = true;
      }
    } else if (phase === 'images' || phase === 'after-images') {
      if (phase === 'images') {
        const seen = finished.splice(0);
        if (seen.length) changed = true;
        if (design.distribution === 'window') {
          for (const r of seen)
            pullPlan = onPullResult(pullPlan!, { nodeId: r.node, ranOnNodeId: r.ranOn, outcome: 'ok', attempt: r.attempt }, { nowMs: now * 1000, rand01: 0.5 });
          const next = nextPulls(pullPlan!, now * 1000);
          pullPlan = next.state;
          issueWindow(next.work, now);
          for (const id of ready) if (pullPlan.nodes[id].pulled) pulledSeen.add(id);
        } else {
          treePlan = onTransferResults(
            treePlan!,
            seen.map((r) => ({ nodeId: r.node, ranOnNodeId: r.ranOn, attempt: r.attempt, outcome: 'ok' as const, digests: ['sha256:app'] })),
            { nowMs: now * 1000, rand01: () => 0.5 },
          );
          const next = nextTransfers(treePlan, now * 1000);
          treePlan = next.state;
          issueTree(next.work, now);
          for (const id of ready) if (treePlan.nodes[id].holds) pulledSeen.add(id);
        }
        const failure = design.distribution === 'window' ? pullPlan!.failure : treePlan!.failure;
        if (failure) throw new Error(`image distribution failed in the model: ${failure.message}`);
        if (imagesDone()) {
          phase = 'after-images';
          if (design.staging === 'sequential') startCopy(now);
        }
      }
      if (copyDone && !copySeen) {
        copySeen = true;
        changed = true;
      }
      // Downloads: overlapped per node as soon as its images are seen and the copy is; sequential after every image.
      if (copySeen && (design.staging === 'overlapped' || phase === 'after-images')) {
        for (const id of ready)
          if (pulledSeen.has(id) && !dlIssued.has(id)) {
            startDownload(id, now);
            changed = true;
          }
      }
      for (const [id, at] of dlDone)
        if (at <= now && !dlSeen.has(id)) {
          dlSeen.add(id);
          changed = true;
        }
      if (phase === 'after-images' && dlSeen.size === ready.length) {
        phase = 'preflight';
        preflight = { start: now, end: now + inputs.preflightS };
        q.push(preflight.end, { kind: 'preflightDone' });
        changed = true;
      }
    } else if (phase === 'preflight' && preflightDone) {
      phase = 'mpi';
      mpiAddedAt = now;
      return; // no more polls before MPI
    }
    schedulePoll(now, changed);
  };

  q.push(inputs.intakeS, { kind: 'admit' });
  const events = runEvents(q, (now, ev) => {
    switch (ev.kind) {
      case 'admit': {
        admitAt = now;
        const n = ids.length;
        ids.forEach((id, k) => {
          const at = now + inputs.allocationFirstS + (n > 1 ? ((inputs.allocationLastS - inputs.allocationFirstS) * k) / (n - 1) : 0);
          q.push(at, { kind: 'nodeIdle', node: id });
        });
        if (design.staging === 'overlapped') startCopy(now);
        schedulePoll(now, true);
        break;
      }
      case 'nodeIdle':
        idleAt.set(ev.node, now);
        break;
      case 'transferDone':
        if (ev.fromRegistry) registryActive--;
        finished.push({ node: ev.node, attempt: ev.attempt, ranOn: ev.ranOn, at: now });
        break;
      case 'copyDone':
        copyDone = true;
        copyEnd = now;
        break;
      case 'downloadDone':
        dlDone.set(ev.node, now);
        break;
      case 'preflightDone':
        preflightDone = true;
        break;
      case 'poll':
        if (phase !== 'mpi') onPoll(now);
        break;
    }
  });
  // `phase` is changed inside the handlers above, which TypeScript's narrowing does not follow.
  if ((phase as string) !== 'mpi') throw new Error(`simulation ended in phase ${phase}`);
  const mpiStart = mpiAddedAt + inputs.mpiStartS;
  const iso = (s: number) => new Date(Date.UTC(2026, 0, 1) + s * 1000).toISOString();
  const readyIso: Record<string, string> = {};
  for (const id of ready) readyIso[id] = iso(seenReadyAt[id] ?? provisionEnd);
  const idleNodeMinutes = idleNodeMinutesBeforeMpi(readyIso, [{ at: iso(mpiAddedAt), nodes: ready, attemptStartedAt: iso(admitAt) }]);
  const first = Math.min(...transferSpans.map((s) => s.start));
  const last = Math.max(...transferSpans.map((s) => s.end));
  const span = (xs: Span[]): Span =>
    xs.length ? { start: Math.min(...xs.map((s) => s.start)), end: Math.max(...xs.map((s) => s.end)) } : { start: NaN, end: NaN };
  return {
    design,
    submitToMpiS: mpiStart,
    idleNodeMinutes,
    registryPulls,
    registryBytes: registryPulls * inputs.imageBytes,
    peerCopies,
    polls,
    phases: {
      provisioning: { start: admitAt, end: provisionEnd },
      images: { start: first, end: last },
      copy: { start: copyStart, end: copyEnd },
      downloads: span(dlSpans),
      preflight,
    },
    imagesReadyS: last - first,
    copyBottleneck: inputs.copyS !== undefined ? 'measured' : staging.copy.bottleneck,
    downloadBottleneck: inputs.downloadS !== undefined ? 'measured' : downloadRate < inputs.nodeBps ? 'staging egress' : 'node network',
    events,
  };
}
