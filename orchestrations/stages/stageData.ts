import type { Task } from 'durable-functions';
import type { NodeRef, PipelineSettings, StagingContainerRef } from '../../shared/core/contract';
import { Orchestration, PipelineRun, StageFailed, type BackgroundWork } from '../runtime/pipelineRun';
import { activityFailureMessage, type ActivityTask } from '../runtime/activityCalls';
import { NodeTaskWindow, nodeTaskWindow, type NodeTaskWindowRequest } from '../runtime/nodeTaskWindow';
import { buildNodeManifests, planShards, type Shard, type ShardPlan } from '../../shared/core/planning/shards';
import type { ListedInputBlob } from '../../shared/adapters/storage/listing';
import { stagingContainerFor } from '../../shared/core/planning/jobPlan';
import { shardDownloadConcurrency, shardDownloadTask, shardSasLifetimeMs } from '../../shared/core/planning/batchRequests';
import { resolveDestination } from '../../shared/core/spec/normalize';
import type { JobSpec } from '../../shared/core/spec/schema';

export interface StagedData {
  /** Where every node holds its shards (may reference node environment variables). */
  destination: string;
  containers: StagingContainerRef[];
  shards: number;
  bytes: number;
  /** Per node slot (the node's place in the job's node list): its shards and their read-only SAS URLs. */
  slotShards: { shardId: string; url: string }[][];
}

export interface StageDataRequest {
  jobId: string;
  batchJobId: string;
  nodes: NodeRef[];
  spec: JobSpec;
  settings: PipelineSettings;
  /**
   * Shards copied and URLs minted by an earlier attempt: only the nodes in `only` (nodes that replace failed ones, in
   * the failed nodes' places) download theirs, under their own task-id prefix.
   */
  previous?: StagedData;
  only?: readonly string[];
  taskPrefix?: string;
}

/**
 * Stage shards: list the inputs, plan 80–100 MB shards spread over the staging accounts, copy them with
 * bounded concurrency (a re-run skips verified shards), mint read-only SAS URLs that outlive the run by a
 * margin, and have every node download exactly its own shards through Batch resource files.
 */
export function* stageData(run: PipelineRun, req: StageDataRequest): Orchestration<StagedData> {
  const staged = req.previous ?? (yield* stageShards(run, req));
  yield* downloadShards(run, req, staged);
  return staged;
}

/** Lists the inputs, plans the shards, copies them and mints the nodes' read-only URLs. */
function* stageShards(run: PipelineRun, req: StageDataRequest): Orchestration<StagedData> {
  const { spec } = req;
  const destination = resolveDestination(spec, req.jobId, '$AZ_BATCH_NODE_SHARED_DIR');
  const stagingAccounts = spec.data.stagingAccounts.length ? spec.data.stagingAccounts : req.settings.stagingAccounts;

  const listing = spec.data.inputs.length ? yield* run.call('inputsList', { inputs: spec.data.inputs }) : [];
  const plan = shardPlanFor(listing, req.jobId, spec, stagingAccounts, req.nodes.length);
  const containers = containersOf(plan);
  run.report({ resources: { stagingContainers: containers }, progress: { shardsStaged: { done: 0, total: plan.shards.length } } });

  for (let i = 0; i < plan.shards.length; i += req.settings.copyConcurrency) {
    const batch = plan.shards.slice(i, i + req.settings.copyConcurrency);
    yield* run.all(batch.map((shard) => run.start('shardCopy', { jobId: req.jobId, shard })));
    run.report({ progress: { shardsStaged: { done: i + batch.length, total: plan.shards.length } } });
    run.throwIfCancelled();
  }

  // Nodes read their shards once, right now: the URLs live the job's wall clock plus a margin, within the cap.
  const expiresAt = new Date(run.now().getTime() + shardSasLifetimeMs(spec, req.settings)).toISOString();
  const urls = plan.shards.length
    ? yield* run.call('shardUrls', { shards: plan.shards.map(({ id, account, container, blobName }) => ({ id, account, container, blobName })), expiresAt })
    : {};
  const slotShards = buildNodeManifests(plan).map((m) => m.shards.map((s) => ({ shardId: s.shardId, url: urls[s.shardId] })));
  return { destination, containers, shards: plan.shards.length, bytes: plan.totalBytes, slotShards };
}

/** The shard plan of `listing` for `nodes` node slots (which slot reads which shard is all that depends on `nodes`). */
function shardPlanFor(listing: readonly ListedInputBlob[], jobId: string, spec: JobSpec, stagingAccounts: string[], nodes: number): ShardPlan {
  return planShards(listing, {
    stagingAccounts,
    nodes,
    minBytes: spec.data.shardSizeMB.min * 1_000_000,
    maxBytes: spec.data.shardSizeMB.max * 1_000_000,
    recordAlignment: spec.data.recordBytes,
    container: stagingContainerFor(jobId),
    namePrefix: '',
  });
}

function containersOf(plan: ShardPlan): StagingContainerRef[] {
  return [...new Set(plan.shards.map((s) => `${s.account}/${s.container}`))].map((k) => {
    const [account, container] = k.split('/');
    return { account, container };
  });
}

/** Every node (of `only`, when given) downloads the shards of its slot. */
function* downloadShards(run: PipelineRun, req: StageDataRequest, staged: StagedData): Orchestration<void> {
  const slot = new Map(req.nodes.map((n, i) => [n.id, i]));
  const nodes = req.only ? req.nodes.filter((n) => req.only!.includes(n.id)) : req.nodes;
  if (nodes.length === 0) return;
  const { destination } = staged;
  // Every node gets a download task, also nodes without shards, so the destination exists everywhere.
  yield* nodeTaskWindow(
    run,
    downloadWindow(
      req.batchJobId,
      nodes,
      req.spec,
      req.settings,
      req.taskPrefix ?? 'dl',
      (node) => shardDownloadTask(destination, staged.slotShards[slot.get(node.id) ?? -1] ?? []),
      staged.shards,
    ),
  );
}

/**
 * The window of shard download tasks: one per node, as many at once as nodes may pull. With no shard at all the tasks
 * only make the directory: nothing to bound, so all start at once (one task collection, settings.emptyDownloadsAtOnce).
 */
function downloadWindow(
  batchJobId: string,
  nodes: NodeRef[],
  spec: JobSpec,
  settings: PipelineSettings,
  taskPrefix: string,
  taskFor: NodeTaskWindowRequest['taskFor'],
  shards: number,
): NodeTaskWindowRequest {
  const atOnce = settings.emptyDownloadsAtOnce === true && shards === 0;
  return {
    stage: 'StagingData',
    batchJobId,
    nodes,
    items: ['shards'],
    concurrency: atOnce ? Math.max(1, nodes.length) : shardDownloadConcurrency(nodes.length, spec.container.pullConcurrency),
    maxAttempts: settings.nodeTaskMaxAttempts,
    taskPrefix,
    progressKey: 'shardsDownloaded',
    inFlightState: 'downloading',
    doneState: 'ready',
    taskFor,
  };
}

export interface EarlyStagingRequest {
  jobId: string;
  spec: JobSpec;
  settings: PipelineSettings;
  /** The nodes the job asked for: the shards are planned before the pool exists (a partial pool re-slots them). */
  plannedNodes: number;
}

/** When the overlapped staging's phases ran (the job result's `staging`). */
export interface StagingTimes {
  copy: { startedAt: string; endedAt?: string };
  downloads?: { startedAt: string; endedAt?: string };
}

/**
 * Shard staging overlapped with provisioning and image pulls (PIPELINE_OVERLAP, docs/pipeline.md#overlap). Started
 * at admission: the inputs are listed, the shards planned and copied server-side (no node needed) while the pool
 * allocates and the nodes pull; the read-only URLs are minted as soon as the last copy ends. Each node's download task
 * starts once its own pull is done (`offer`) and every shard is copied; `drain` then waits for the downloads the
 * MPI task needs. It advances whenever a stage waits (PipelineRun background work). `settle` stops it and waits
 * for copies still running, so cleanup deletes containers no copy writes to any more.
 */
export class EarlyStaging implements BackgroundWork {
  private readonly queue: Shard[];
  private readonly copying: { shard: Shard; task: ActivityTask<'shardCopy'>; raced: boolean }[] = [];
  private copied = 0;
  private urls?: Record<string, string>;
  private window?: { win: NodeTaskWindow; nodes: NodeRef[]; poolSize: number };
  /** Set by drain's own step so the wait right after it does not look at the same tasks again. */
  private justStepped = false;
  /** Shard ids per slot, by pool size (a partial pool has fewer slots than planned). */
  private readonly slots = new Map<number, string[][]>();
  readonly times: StagingTimes;

  private constructor(
    private readonly run: PipelineRun,
    private readonly req: EarlyStagingRequest,
    private readonly listing: readonly ListedInputBlob[],
    private readonly stagingAccounts: string[],
    private readonly plan: ShardPlan,
    private readonly destination: string,
  ) {
    this.queue = [...plan.shards];
    this.times = { copy: { startedAt: run.now().toISOString() } };
  }

  /** Lists the inputs, plans the shards, reports their containers (cleanup deletes them) and starts the copy. */
  static *start(run: PipelineRun, req: EarlyStagingRequest): Orchestration<EarlyStaging> {
    const { spec } = req;
    const destination = resolveDestination(spec, req.jobId, '$AZ_BATCH_NODE_SHARED_DIR');
    const stagingAccounts = spec.data.stagingAccounts.length ? spec.data.stagingAccounts : req.settings.stagingAccounts;
    const listing = spec.data.inputs.length ? yield* run.call('inputsList', { inputs: spec.data.inputs }) : [];
    const plan = shardPlanFor(listing, req.jobId, spec, stagingAccounts, req.plannedNodes);
    run.report({ resources: { stagingContainers: containersOf(plan) }, progress: { shardsStaged: { done: 0, total: plan.shards.length } } });
    const staging = new EarlyStaging(run, req, listing, stagingAccounts, plan, destination);
    staging.refill();
    run.startBackground(staging);
    return staging;
  }

  /** Every shard is copied and its URL minted. */
  get copyDone(): boolean {
    return this.urls !== undefined;
  }

  /**
   * The nodes that download under `taskPrefix` (all of `pool` on a first attempt, replacements later), in their
   * slots of `pool`; none starts before `offer` says its pull is done.
   */
  expect(batchJobId: string, pool: NodeRef[], nodes: NodeRef[], taskPrefix: string): void {
    const slot = new Map(pool.map((n, i) => [n.id, i]));
    // Tasks are made only once every URL is minted (step submits nothing before).
    const taskFor = (node: NodeRef) => shardDownloadTask(this.destination, this.slotShards(pool.length)[slot.get(node.id) ?? -1] ?? []);
    const win = new NodeTaskWindow(this.run, {
      ...downloadWindow(batchJobId, nodes, this.req.spec, this.req.settings, taskPrefix, taskFor, this.plan.shards.length),
      held: nodes.map((n) => n.id),
    });
    this.window = { win, nodes, poolSize: pool.length };
    this.run.startBackground(this);
  }

  /** Nodes whose images are pulled: their downloads may start. */
  offer(nodeIds: string[]): void {
    this.window?.win.release(nodeIds);
  }

  fresh(): Task[] {
    const fresh = this.copying.filter((c) => !c.raced);
    for (const c of fresh) c.raced = true;
    return fresh.map((c) => c.task.task);
  }

  *step(): Orchestration<void> {
    if (this.justStepped) {
      this.justStepped = false;
      return;
    }
    const { run } = this;
    this.noteCopies();
    if (this.queue.length === 0 && this.copying.length === 0 && !this.urls) {
      // Nodes read their shards from now on: the URLs live the job's wall clock plus a margin, within the cap.
      const expiresAt = new Date(run.now().getTime() + shardSasLifetimeMs(this.req.spec, this.req.settings)).toISOString();
      const { shards } = this.plan;
      this.urls = shards.length
        ? yield* run.call('shardUrls', { shards: shards.map(({ id, account, container, blobName }) => ({ id, account, container, blobName })), expiresAt })
        : {};
      this.times.copy.endedAt = run.now().toISOString();
    }
    const w = this.window;
    if (!w || !this.urls || w.win.isDone()) return;
    if (w.win.hasInFlight()) yield* w.win.observe();
    if (!w.win.isDone()) {
      yield* w.win.submit();
      if (w.win.hasInFlight()) this.times.downloads ??= { startedAt: run.now().toISOString() };
    }
    w.win.report();
    if (w.win.isDone()) {
      if (this.times.downloads) this.times.downloads.endedAt = run.now().toISOString();
      run.stopBackground(this);
      w.win.throwIfFailed();
    }
  }

  /**
   * Waits until the expected nodes hold their shards (every shard copied, each node's download done); their pulls
   * are done by now. Fails the stage as the downloads did.
   */
  *drain(): Orchestration<StagedData> {
    const w = this.window;
    if (!w) throw new Error('EarlyStaging.drain before expect');
    w.win.release(w.nodes.map((n) => n.id));
    for (;;) {
      this.run.startBackground(this);
      yield* this.step();
      if (this.copyDone && w.win.isDone()) break;
      this.justStepped = true;
      yield* this.run.sleep('StagingData', w.win.waitMs());
    }
    w.win.throwIfFailed();
    return {
      destination: this.destination,
      containers: containersOf(this.plan),
      shards: this.plan.shards.length,
      bytes: this.plan.totalBytes,
      slotShards: this.slotShards(w.poolSize),
    };
  }

  /** Stops the background work and waits for the copies still running (their results no longer matter). */
  *settle(): Orchestration<void> {
    this.run.stopBackground(this);
    this.queue.length = 0;
    for (const c of this.copying.filter((x) => x.raced)) {
      try {
        yield c.task.task;
      } catch {
        // A copy that failed wrote nothing cleanup must know of beyond its container.
      }
    }
    this.copying.length = 0;
  }

  /** Starts copies while there is room (they are scheduled at the next wait, raced with its timer). */
  private refill(): void {
    while (this.copying.length < this.req.settings.copyConcurrency && this.queue.length) {
      const shard = this.queue.shift()!;
      this.copying.push({ shard, task: this.run.start('shardCopy', { jobId: this.req.jobId, shard }), raced: false });
    }
  }

  /** Takes the ends of copies into account and starts the next ones; a copy that failed for good fails the stage. */
  private noteCopies(): void {
    for (const c of [...this.copying]) {
      if (c.task.task.isFaulted) {
        this.run.stopBackground(this);
        this.queue.length = 0;
        throw new StageFailed('StagingData', `shard ${c.shard.id} not copied: ${activityFailureMessage(c.task.task.result)}`);
      }
      if (!c.task.task.isCompleted) continue;
      this.copying.splice(this.copying.indexOf(c), 1);
      this.copied++;
    }
    this.refill();
    this.run.report({ progress: { shardsStaged: { done: this.copied, total: this.plan.shards.length } } });
  }

  /** Shard ids and URLs per node slot for a pool of `nodes` nodes (the shards themselves do not depend on it). */
  private slotShards(nodes: number): { shardId: string; url: string }[][] {
    const urls = this.urls ?? {};
    let slots = this.slots.get(nodes);
    if (!slots) {
      const plan = nodes === this.req.plannedNodes ? this.plan : shardPlanFor(this.listing, this.req.jobId, this.req.spec, this.stagingAccounts, nodes);
      slots = buildNodeManifests(plan).map((m) => m.shards.map((s) => s.shardId));
      this.slots.set(nodes, slots);
    }
    return slots.map((ids) => ids.map((shardId) => ({ shardId, url: urls[shardId] })));
  }
}
