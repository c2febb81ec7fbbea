import type { Counter, NodeProgress, NodeRef, NodeTaskObservation, NodeTaskRequest } from '../../shared/core/contract';
import type { JobState } from '../../shared/core/state/states';
import { Orchestration, PipelineRun, StageFailed } from './pipelineRun';
import { initPullPlan, isDone, nextPulls, nodesNotPulled, onPullResult, progress, PullPlanState, PullWork } from '../../shared/core/planning/pullWindow';
import { deterministicRand01 } from '../../shared/core/planning/hash';
import { nodeTaskId } from '../../shared/core/planning/batchRequests';

export interface NodeTaskWindowRequest {
  stage: JobState;
  batchJobId: string;
  nodes: NodeRef[];
  /** What every node must end up holding (image references, or a label such as "shards"). */
  items: string[];
  concurrency: number;
  maxAttempts: number;
  /** Short task-id prefix, e.g. "pull" or "dl". */
  taskPrefix: string;
  /** The Batch task for one node (already pinned by its affinity id). */
  taskFor(node: NodeRef, nodeIndex: number, work: PullWork): Omit<NodeTaskRequest, 'id' | 'affinityId'>;
  /** Custom-status keys this window reports under. */
  progressKey: 'imagesPulled' | 'shardsDownloaded';
  inFlightState: NodeProgress;
  doneState: NodeProgress;
  /** Told the nodes that became covered at each look at the tasks (each node once). */
  onNodesDone?: (nodeIds: string[]) => void;
}

/**
 * Runs one pinned task per node, at most `concurrency` at a time, until every node is covered: the seeds'
 * rule that at most 10 nodes pull from a registry at once. Batch affinity is only a hint, so the node a task
 * really ran on is what counts (the planner re-issues the intended node). Throttling is retried with
 * deterministic jittered backoff; a permanent failure fails the stage naming the node and the message.
 */
export function* nodeTaskWindow(run: PipelineRun, req: NodeTaskWindowRequest): Orchestration<void> {
  const window = new NodeTaskWindow(run, req);
  for (;;) {
    yield* window.submit();
    window.report();
    if (window.isDone()) break;
    // Poll at the base interval while work is in flight; when only backoff holds work back, wake when it ends.
    yield* run.sleep(req.stage, window.waitMs());
    if (!window.hasInFlight()) continue;
    yield* window.observe();
  }
  window.throwIfFailed();
}

/**
 * The window's state and its two steps (start what may start, look at what runs), for `nodeTaskWindow`'s loop and
 * for work that runs beside the stages (shard downloads that start as each node's pull ends). Nodes in `held` get no
 * task until `release`d.
 */
export class NodeTaskWindow {
  private plan: PullPlanState;
  private readonly byId: Map<string, { node: NodeRef; index: number }>;
  private readonly inFlight = new Map<string, PullWork>();
  private readonly nodeStates: Record<string, NodeProgress> = {};
  private readonly held = new Set<string>();
  private wakeAtMs: number | undefined;
  /** Looks since tasks were last added (the looks' backoff position), and all looks (the jitter's key). */
  private looks = 0;
  private allLooks = 0;

  constructor(
    private readonly run: PipelineRun,
    private readonly req: NodeTaskWindowRequest & {
      /** Nodes that may not start yet (their images are still being pulled). */
      held?: readonly string[];
    },
  ) {
    this.byId = new Map(req.nodes.map((n, i) => [n.id, { node: n, index: i }]));
    this.plan = initPullPlan({
      nodes: req.nodes.map((n) => n.id),
      images: req.items,
      concurrency: req.concurrency,
      maxAttempts: req.maxAttempts,
      backoff: { baseMs: 2 * run.pollDelayMs(0), maxMs: 60_000, factor: 2 },
    });
    for (const id of req.held ?? []) this.hold(id);
  }

  /** Lets held nodes start (nodes not held are ignored). */
  release(nodeIds: readonly string[]): void {
    const nodes = { ...this.plan.nodes };
    for (const id of nodeIds) {
      if (!this.held.delete(id)) continue;
      nodes[id] = { ...nodes[id], notBeforeMs: 0 };
    }
    this.plan = { ...this.plan, nodes };
  }

  private hold(id: string): void {
    if (!this.plan.nodes[id] || this.plan.nodes[id].pulled) return;
    this.held.add(id);
    // The planner's own "not before" keeps a held node out of the window; release sets it back.
    this.plan = { ...this.plan, nodes: { ...this.plan.nodes, [id]: { ...this.plan.nodes[id], notBeforeMs: Number.MAX_SAFE_INTEGER } } };
  }

  /** Adds the tasks the window has room for (one nodeTasksAdd call, none when nothing may start). */
  *submit(): Orchestration<void> {
    const { run, req } = this;
    const next = nextPulls(this.plan, run.now().getTime());
    this.plan = next.state;
    this.wakeAtMs = next.wakeAtMs;
    if (!next.work.length) return;
    // New tasks: look at them soon again (a window with data adds a task as one ends, so its looks stay frequent).
    this.looks = 0;
    const tasks: NodeTaskRequest[] = next.work.map((w) => {
      const { node, index } = this.byId.get(w.nodeId)!;
      const id = nodeTaskId(req.taskPrefix, index, w.attempt);
      this.inFlight.set(id, w);
      this.nodeStates[w.nodeId] = req.inFlightState;
      return { id, affinityId: node.affinityId, ...req.taskFor(node, index, w) };
    });
    yield* run.call('nodeTasksAdd', { batchJobId: req.batchJobId, tasks });
  }

  /** Looks at the tasks in flight once and feeds their ends to the planner. */
  *observe(): Orchestration<void> {
    const { run, req } = this;
    const before = new Set(this.doneNodes());
    this.looks++;
    this.allLooks++;
    const observed = yield* run.call('nodeTasksObserve', { batchJobId: req.batchJobId, taskIds: [...this.inFlight.keys()] });
    const nowMs = run.now().getTime();
    for (const o of observed) {
      const work = this.inFlight.get(o.id);
      if (!work || (o.state !== 'completed' && o.state !== 'missing')) continue;
      this.inFlight.delete(o.id);
      const ok = o.state === 'completed' && o.exitCode === 0;
      const ranOn = o.nodeId && this.byId.has(o.nodeId) ? o.nodeId : work.nodeId;
      this.plan = onPullResult(
        this.plan,
        { nodeId: work.nodeId, ranOnNodeId: ranOn, outcome: ok ? 'ok' : 'failed', attempt: work.attempt, message: ok ? undefined : failureMessage(o) },
        { nowMs, rand01: deterministicRand01(`${run.jobId}:${o.id}`) },
      );
      for (const id of Object.keys(this.plan.nodes)) if (this.plan.nodes[id].pulled) this.nodeStates[id] = req.doneState;
      if (!ok && this.plan.failure?.nodeId === work.nodeId) this.nodeStates[work.nodeId] = 'failed';
    }
    const newlyDone = this.doneNodes().filter((id) => !before.has(id));
    if (newlyDone.length) req.onNodesDone?.(newlyDone);
  }

  report(): void {
    const p = progress(this.plan, this.run.now().getTime());
    const counter: Counter = { done: p.pulled, total: p.total };
    this.run.report({ progress: { [this.req.progressKey]: counter }, nodes: { ...this.run.nodeStates(), ...this.nodeStates } });
  }

  hasInFlight(): boolean {
    return this.inFlight.size > 0;
  }

  /** Nothing more to start: every node covered, or the window failed. */
  isDone(): boolean {
    return isDone(this.plan);
  }

  /** The nodes covered so far. */
  doneNodes(): string[] {
    return this.plan.order.filter((id) => this.plan.nodes[id].pulled);
  }

  /**
   * How long the window's loop waits: while work is in flight, the looks' backoff since tasks were last added (a
   * long stage costs O(log T) looks, PipelineRun.lookDelayMs); else until the retry backoff ends.
   */
  waitMs(): number {
    const { run } = this;
    const now = run.now().getTime();
    if (this.inFlight.size > 0) return run.lookDelayMs(this.looks, `${this.req.taskPrefix}:${this.allLooks}`, run.pollDelayMs(0));
    return Math.max(run.pollDelayMs(0), (this.wakeAtMs ?? now) - now);
  }

  /** Fails the stage when a node failed for good, or when nodes are left uncovered. */
  throwIfFailed(): void {
    const { plan, req } = this;
    if (plan.failure) {
      const f = plan.failure;
      throw new StageFailed(
        req.stage,
        `node ${f.nodeId}${f.ranOnNodeId !== f.nodeId ? ` (ran on ${f.ranOnNodeId})` : ''} failed after ${f.attempts} attempt(s): ${f.message}`,
      );
    }
    const missing = nodesNotPulled(plan);
    if (missing.length) throw new StageFailed(req.stage, `nodes not covered: ${missing.join(', ')}`);
    this.run.report({ lastError: undefined });
  }
}

/**
 * Batch's failure info for a task that exited non-zero only says so (FailureExitCode); the cause, such as the
 * registry's "manifest unknown", is in the task's output, so a failure carries both.
 */
export function failureMessage(o: NodeTaskObservation): string {
  const parts = [o.failure, o.outputTail && `output: ${o.outputTail}`].filter((p): p is string => !!p);
  return parts.length ? parts.join('; ') : `task ${o.id} ${o.state}`;
}
