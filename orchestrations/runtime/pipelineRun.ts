import type { OrchestrationContext, Task } from 'durable-functions';
import {
  CANCEL_EVENT,
  type ActivityInput,
  type ActivityName,
  type ActivityOutput,
  type CancelEventData,
  fitStatus,
  type NodeProgress,
  type PipelineStatus,
  type PollSettings,
} from '../../shared/core/contract';
import type { JobState } from '../../shared/core/state/states';
import type { NodeUsage, PriceQuote } from '../../shared/core/ops/cost';
import { resultOf, retryOptions, scheduleActivity, withBatchAccount, type ActivityTask } from './activityCalls';
import { backoffCeilingMs, delayMs } from '../../shared/core/planning/backoff';
import { deterministicRand01 } from '../../shared/core/planning/hash';
import type { FailureEvidence } from '../../shared/core/planning/failureExplain';

/** Thrown inside the orchestrator when the user cancelled; the pipeline still runs cleanup. */
export class JobCancelled extends Error {
  constructor(readonly reason: string) {
    super(`cancelled: ${reason}`);
    this.name = 'JobCancelled';
  }
}

/** Thrown when a stage gives up; `reason` is recorded on the job row as the failure reason. */
export class StageFailed extends Error {
  constructor(
    readonly stage: JobState,
    readonly reason: string,
    /** What the stage saw of the failure (node, task, exit code, stderr), for the job's error. */
    readonly evidence?: FailureEvidence,
  ) {
    super(`${stage}: ${reason}`);
    this.name = 'StageFailed';
  }
}

/** Thrown when the job's wall-clock limit passes while a stage is still waiting. */
export class JobTimedOut extends StageFailed {
  constructor(stage: JobState, limit: string) {
    super(stage, `wall-clock limit ${limit} exceeded`);
    this.name = 'JobTimedOut';
  }
}

export type Orchestration<T> = Generator<Task, T, unknown>;

/**
 * Work that runs beside the stages (the early shard copy, the downloads of nodes whose pulls are done): it advances
 * whenever a stage waits. `step` may call activities (it runs at the start of each wait) and may throw to fail the
 * stage that waits; `fresh` hands over the durable tasks it created since the last wait, which the wait races with
 * its timer exactly once (a task yielded again inside a later Task.any would be scheduled again by the extension,
 * azure-functions-durable-js#574), so its end is noticed later through `isCompleted`.
 */
export interface BackgroundWork {
  step(): Orchestration<void>;
  fresh(): Task[];
}

/** 3 attempts, 2 s then 4 s apart: long enough for a throttling burst, short enough to report real failures promptly. */
const ACTIVITY_RETRY = retryOptions(2_000, 3);

/**
 * Everything a stage needs from the orchestration, kept deterministic: time comes from the replayed
 * history (`currentUtcDateTime`), waiting is a durable timer raced against the cancel event, and progress
 * goes to the custom status only (no I/O).
 */
export class PipelineRun {
  private readonly cancelEvent: Task;
  private batchAccount?: string;
  private readonly status: PipelineStatus;

  constructor(
    readonly ctx: OrchestrationContext,
    readonly jobId: string,
    private readonly poll: PollSettings,
    /** ISO time after which waiting stages fail with a timeout (the job's maxWallClock), if any. */
    private deadline: { at: string; limit: string } | undefined,
  ) {
    this.cancelEvent = ctx.df.waitForExternalEvent(CANCEL_EVENT);
    this.status = { stage: 'Submitted', progress: {}, resources: {} };
  }

  /**
   * Calls an activity with Durable's retry and returns its result: every pipeline activity is idempotent, and a
   * transient Batch or Storage error that outlasts the adapter's own retries must not fail a job that has nodes
   * running.
   */
  *call<N extends ActivityName>(name: N, input: ActivityInput<N>): Orchestration<ActivityOutput<N>> {
    const scheduled = this.start(name, input);
    yield scheduled.task;
    return resultOf(scheduled);
  }

  /** Schedules an activity without waiting, for fan-out (`all`). */
  start<N extends ActivityName>(name: N, input: ActivityInput<N>, retry = ACTIVITY_RETRY): ActivityTask<N> {
    return scheduleActivity(this.ctx, name, this.batchAccount ? withBatchAccount(input, this.batchAccount) : input, retry);
  }

  /**
   * The Batch account admission placed the job on (several BATCH_ACCOUNTS): from now on every activity input carries
   * it, and the activity's Batch clients are that account's (activityCalls.ts). Undefined: the home account.
   */
  placeOn(account: string | undefined): void {
    this.batchAccount = account;
  }

  /** The account `placeOn` set (undefined: the home account), for a sub-orchestration that must act on the same one. */
  placedOn(): string | undefined {
    return this.batchAccount;
  }

  /** Waits for every scheduled activity; fails with the first failure, as Task.all does. */
  *all<N extends ActivityName>(scheduled: ActivityTask<N>[]): Orchestration<ActivityOutput<N>[]> {
    yield this.ctx.df.Task.all(scheduled.map((s) => s.task));
    return scheduled.map(resultOf);
  }

  now(): Date {
    return this.ctx.df.currentUtcDateTime;
  }

  /** Sets the time after which waiting stages fail (the job's budget starts at admission: queue time does not count). */
  startDeadline(deadline: { at: string; limit: string }): void {
    this.deadline = deadline;
  }

  /**
   * The budget guard (limits.maxNodeHours / maxCost), installed before provisioning and checked at every poll
   * against the current usage: when it names a reason, the job is cancelled through the normal cancel path
   * (cleanup runs).
   */
  guardBudget(check: ((now: Date, usage: NodeUsage) => string | undefined) | undefined): void {
    this.budgetCheck = check;
  }

  private budgetCheck?: (now: Date, usage: NodeUsage) => string | undefined;

  /** Nodes billed to this job and since when; provisioning keeps it current, the budget guard and the cost read it. */
  readonly usage: NodeUsage = { nodes: 0 };

  recordUsage(nodes: number, allocatedAt: string): void {
    this.usage.nodes = nodes;
    this.usage.allocatedAt = allocatedAt;
    // Published with the next report: the dashboard's running cost.
    if (this.status.billing) this.status.billing = { ...this.status.billing, nodes, since: allocatedAt };
  }

  /** The job's price, published beside its usage (the running cost); looked up once, before provisioning. */
  showPrice(price: PriceQuote): void {
    this.status.billing = {
      nodes: this.usage.nodes,
      ...(this.usage.allocatedAt ? { since: this.usage.allocatedAt } : {}),
      ...(price.pricePerNodeHour !== undefined ? { pricePerNodeHour: price.pricePerNodeHour } : {}),
      currency: price.currency,
      priceSource: price.source,
    };
  }

  /** The first time the run saw each node idle (ISO), for the billed idle time before the MPI task. */
  readonly nodeReadyAt: Record<string, string> = {};

  noteNodesReady(nodeIds: readonly string[]): void {
    const now = this.now().toISOString();
    for (const id of nodeIds) this.nodeReadyAt[id] ??= now;
  }

  private readonly background = new Set<BackgroundWork>();

  /** Runs `work` beside the stages until `stopBackground(work)`. */
  startBackground(work: BackgroundWork): void {
    this.background.add(work);
  }

  stopBackground(work: BackgroundWork): void {
    this.background.delete(work);
  }

  isCancelRequested(): boolean {
    return this.cancelEvent.isCompleted;
  }

  /** Records progress visible through the Durable status endpoint and GET /api/jobs/{id}. */
  report(
    patch: Partial<Omit<PipelineStatus, 'progress' | 'resources'>> & {
      progress?: PipelineStatus['progress'];
      resources?: PipelineStatus['resources'];
    },
  ): void {
    Object.assign(this.status, {
      ...patch,
      progress: { ...this.status.progress, ...(patch.progress ?? {}) },
      resources: { ...this.status.resources, ...(patch.resources ?? {}) },
      updatedAt: this.now().toISOString(),
    });
    // The run keeps every node's state (nodeStates); what it publishes must fit Azure's 16 KB custom status.
    this.ctx.df.setCustomStatus(fitStatus(this.status));
  }

  /**
   * The resources reported so far (a copy): what cleanup must release, whichever stage stopped the pipeline (a
   * stage that fails or is cancelled half-way has already created them).
   */
  resources(): PipelineStatus['resources'] {
    return { ...this.status.resources };
  }

  /** The per-node states reported so far (a copy). */
  nodeStates(): Record<string, NodeProgress> {
    return { ...(this.status.nodes ?? {}) };
  }

  /** The MPI task's state as last reported (undefined before the task was added). */
  mpiProgress(): PipelineStatus['progress']['mpi'] {
    return this.status.progress.mpi && { ...this.status.progress.mpi };
  }

  /** The polling settings (a sub-orchestration that polls gets them as input). */
  pollSettings(): PollSettings {
    return { ...this.poll };
  }

  /**
   * The n-th polling delay (0-based): exponential from initialMs to maxMs. Not jittered: each orchestration polls its
   * own resources, so there is no herd to spread, and the same delay on replay needs no random input.
   */
  pollDelayMs(attempt: number): number {
    const { initialMs, maxMs, factor } = this.poll;
    return backoffCeilingMs(Math.max(0, attempt) + 1, { baseMs: initialMs, maxMs, factor });
  }

  /**
   * The polling delay while the MPI task runs: at most half an interval, so that the task's end is seen and
   * the pool's deletion requested within one polling interval (the idle-time bound, docs/operations.md).
   */
  runningPollDelayMs(attempt: number): number {
    return Math.min(this.pollDelayMs(attempt), Math.ceil(this.poll.maxMs / 2));
  }

  /**
   * The wait before the n-th look (0-based) at work in flight that may take long (node tasks, the preflight check):
   * the project's backoff from POLL_INITIAL_MS up to POLL_LOOK_MAX_MS, with equal jitter from `key` and `look`
   * (deterministicRand01: the same on replay). A wait of T seconds thus costs O(log T) looks until the cap, then one
   * per cap; the end of the work is seen at most one cap later than it happened (docs/call-budgets.md, "Looks back
   * off"). `legacyMs`: the wait of a run started before (no `poll.lookMaxMs`), which replays its looks unchanged.
   */
  lookDelayMs(look: number, key: string, legacyMs: number): number {
    const { initialMs, factor, lookMaxMs } = this.poll;
    if (lookMaxMs === undefined) return legacyMs;
    const opts = { baseMs: initialMs, maxMs: Math.max(initialMs, lookMaxMs), factor };
    return delayMs(Math.max(0, look) + 1, opts, deterministicRand01(`${this.jobId}:look:${key}:${look}`));
  }

  /**
   * Waits `ms` on a durable timer unless the user cancels first. Also enforces the job's wall-clock limit,
   * so a stage stuck waiting on Batch cannot outlive the job's budget.
   */
  *sleep(stage: JobState, ms: number): Orchestration<void> {
    this.checkpoint(stage);
    const until = new Date(this.now().getTime() + ms);
    for (;;) {
      // Background work first (it may start downloads or copies), then the wait raced with what it just started.
      for (const work of [...this.background]) yield* work.step();
      const fresh = [...this.background].flatMap((w) => w.fresh());
      const timer = this.ctx.df.createTimer(until);
      const winner = yield this.ctx.df.Task.any([timer, this.cancelEvent, ...fresh]);
      if (winner === timer) return;
      timer.cancel();
      if (winner === this.cancelEvent) throw new JobCancelled(this.cancelReason());
      if (this.now().getTime() >= until.getTime()) return;
      // A background task ended first: let the work go on, then wait for the rest of the interval on a new timer.
    }
  }

  /**
   * The checks every wait makes (wall-clock limit, budget, cancel), for a step that may not wait at all, such as the
   * start of another attempt.
   */
  checkpoint(stage: JobState): void {
    if (this.deadline && this.now().getTime() >= Date.parse(this.deadline.at)) {
      throw new JobTimedOut(stage, this.deadline.limit);
    }
    const overBudget = this.budgetCheck?.(this.now(), this.usage);
    if (overBudget) {
      this.budgetCheck = undefined;
      throw new JobCancelled(overBudget);
    }
    if (this.cancelEvent.isCompleted) throw new JobCancelled(this.cancelReason());
  }

  /**
   * Waits up to `ms` for `event` (true when it came first) unless the user cancels first: how a queued job waits for
   * an admission or dependency event with a polling fallback. No deadline applies: the job's budget has not started.
   */
  *waitFor(event: Task, ms: number): Orchestration<boolean> {
    if (this.cancelEvent.isCompleted) throw new JobCancelled(this.cancelReason());
    const timer = this.ctx.df.createTimer(new Date(this.now().getTime() + ms));
    const winner = yield this.ctx.df.Task.any([timer, event, this.cancelEvent]);
    if (winner === timer) return false;
    timer.cancel();
    if (winner === this.cancelEvent) throw new JobCancelled(this.cancelReason());
    return true;
  }

  /** A plain durable-timer wait: for steps after the pipeline (cleanup's bookkeeping), which a cancel must not cut short. */
  *pause(ms: number): Orchestration<void> {
    yield this.ctx.df.createTimer(new Date(this.now().getTime() + ms));
  }

  /**
   * Waits for `task` (a sub-orchestration) unless the user cancels first; the task's failure is thrown as Durable
   * throws it. A cancelled wait is left to end on its own (Durable does not stop sub-orchestrations; cleanup ends
   * what it watches).
   */
  *race(task: Task): Orchestration<unknown> {
    if (this.cancelEvent.isCompleted) throw new JobCancelled(this.cancelReason());
    const winner = yield this.ctx.df.Task.any([task, this.cancelEvent]);
    if (winner === this.cancelEvent) throw new JobCancelled(this.cancelReason());
    if (task.isFaulted) throw task.result instanceof Error ? task.result : new Error(String(task.result));
    return task.result;
  }

  /** The time after which waiting stages fail, if set (a sub-orchestration that waits gets it as input). */
  deadlineOf(): { at: string; limit: string } | undefined {
    return this.deadline && { ...this.deadline };
  }

  /** Whether work runs beside the stages (a wait moved elsewhere would not advance it). */
  hasBackground(): boolean {
    return this.background.size > 0;
  }

  /** Cancel check between steps that do not wait. */
  throwIfCancelled(): void {
    if (this.cancelEvent.isCompleted) throw new JobCancelled(this.cancelReason());
  }

  private cancelReason(): string {
    // Raised from outside (the API or anyone holding the system key): checked, not trusted.
    const r: Partial<CancelEventData> | undefined = isRecord(this.cancelEvent.result) ? this.cancelEvent.result : undefined;
    return typeof r?.reason === 'string' && r.reason ? r.reason : 'cancelled by user';
  }
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
