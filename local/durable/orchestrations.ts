/**
 * The orchestration dispatcher: polls the control queue, groups messages per instance, and runs
 * episodes (load, select, invoke the orchestrator through the host, commit, send, delete).
 *
 * Crash safety comes from the order of writes: the episode's history and the engine state are
 * committed first (one sentinel write decides), then the outbox is sent, then the consumed messages
 * are deleted. A crash before the commit replays the same messages; a crash after it re-derives the
 * outbox on start-up (recovery.ts) and drops the redelivered messages as duplicates (episode.ts).
 * One instance never runs two episodes at once: this process dispatches each instance on its own,
 * and the sentinel's ETag rejects a second writer.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { HostContext, RegisteredFunction } from '../host/extension';
import type { OrchestratorStateJson } from './actions';
import type { ResolvedOptions } from './config';
import {
  applyOutcome,
  applySuspend,
  applyTerminate,
  applyUnstorable,
  parentNotification,
  selectBatch,
  type EpisodeResult,
  type Outcome,
  type Selection,
} from './episode';
import { EventType, events, type HistoryEvent } from './history';
import type { HostLoad } from './hostLoad';
import { Poller } from './poller';
import { rewindPlan, type ReopenedTask } from './rewind';
import { EtagConflictError, inParallel, rowFromState, type DurableStore, type LoadedInstance } from './store';
import { emptyOutbox, isBatch, isTerminal, type ChildStart, type ControlMessage, type InstanceState, type Outbox } from './state';
import { UnstorableError } from './tableSafe';

/** One queue message; a batch message backs several logical messages and is deleted after the last. */
interface QueueRef {
  queueMessageId: string;
  popReceipt: string;
  remaining: number;
}

interface Buffered {
  ref: QueueRef;
  msg: ControlMessage;
  order: number;
}

/** Sent so the library never splits timers into LongTimerTask chunks; the queue re-sends long timers instead. */
export const MAXIMUM_SHORT_TIMER_DURATION = '36500.00:00:00';
const OUT_PARALLELISM = 16;
/** Instances waiting for a slot above which a busy host's engine stops receiving control messages. */
const HELD_BACK_INSTANCES = 64;
/** Control messages received per poll (the storage provider's batch, at most 32 for an Azure queue). */
const CONTROL_BATCH = 32;

export class OrchestrationDispatcher {
  private readonly buffers = new Map<string, Map<string, Buffered>>();
  private readonly refs = new Map<string, QueueRef>();
  private readonly running = new Set<string>();
  private readonly waiting = new Set<string>();
  private readonly cache = new Map<string, LoadedInstance>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly poller: Poller;
  private order = 0;
  private stopped = false;
  /** The last round returned without receiving (back-pressure, or held back for a busy host). */
  private receiveSkipped = false;
  private unsubscribeIdle: (() => void) | undefined;
  /** Most episodes running at once: ever, and when one started while the host's load held the engine at its floor. */
  readonly stats = { episodes: 0, deliveredEvents: 0, peakConcurrency: 0, peakAtFloor: 0 };
  /** Called when work items were enqueued (wakes the activity poller). */
  onWorkItems: () => void = () => undefined;
  /** Called when an episode failed; its committed part may have an unsent outbox to re-derive. */
  onEpisodeError: (instanceId: string) => Promise<unknown> = async () => undefined;

  constructor(
    private readonly store: DurableStore,
    private readonly host: HostContext,
    private readonly opts: ResolvedOptions,
    private readonly log: Logger,
    private readonly load: HostLoad,
  ) {
    this.poller = new Poller('control-queue', () => this.round(), opts.maxPollingIntervalMs, log);
  }

  start(): void {
    // Once the host's listeners are less busy, instances held back get their turn.
    // Once the host's listeners are less busy, instances held back get their turn; the queue is polled again only if
    // a round skipped its receive (otherwise a poll would find only what the next idle poll finds).
    this.unsubscribeIdle = this.load.onRelief(() => {
      this.scheduleWaiting();
      if (this.receiveSkipped) this.poller.wake();
    });
    this.poller.start();
  }

  wake(): void {
    this.poller.wake();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.unsubscribeIdle?.();
    await this.poller.stop();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Forget what this process cached about an instance (after a purge). */
  forget(instanceId: string): void {
    this.cache.delete(instanceId);
  }

  private bufferedCount(): number {
    let n = 0;
    for (const b of this.buffers.values()) n += b.size;
    return n;
  }

  /**
   * Episodes run at once: the extension's maxConcurrentOrchestratorFunctions, fewer while the host's listeners have
   * requests or queue messages in flight (./hostLoad.ts): intake comes first.
   */
  private concurrencyLimit(): number {
    return this.load.limit(this.opts.maxConcurrentOrchestratorFunctions);
  }

  private async round(): Promise<boolean> {
    this.receiveSkipped = true;
    if (this.bufferedCount() > 5000) return false; // back-pressure: let episodes drain the buffer
    // Held back for a busy host and already holding plenty to do: receiving more now would only let their
    // visibility run out in the buffer. The poller is woken when the host's load goes down.
    if (this.waiting.size >= HELD_BACK_INSTANCES && this.load.busy()) return false;
    this.receiveSkipped = false;
    const received = await this.store.receiveControl(CONTROL_BATCH, this.opts.controlVisibilitySeconds);
    const touched = new Set<string>();
    for (const r of received) {
      const env = r.body;
      touched.add(env.instanceId);
      const known = this.refs.get(r.queueMessageId);
      if (known) {
        // Our visibility ran out while the message waited here: it came back with a new pop receipt.
        known.popReceipt = r.popReceipt;
        continue;
      }
      const logical: ControlMessage[] = isBatch(env)
        ? env.events.map((event, i) => ({ id: `${env.id}#${i}`, instanceId: env.instanceId, executionId: env.executionId, event, sentAt: env.sentAt }))
        : [env];
      let buf = this.buffers.get(env.instanceId);
      if (!buf) this.buffers.set(env.instanceId, (buf = new Map()));
      const ref: QueueRef = { queueMessageId: r.queueMessageId, popReceipt: r.popReceipt, remaining: 0 };
      for (const msg of logical) {
        if (buf.has(msg.id)) continue; // a second copy (re-sent timer, recovery re-send) of what we hold
        buf.set(msg.id, { ref, msg, order: this.order++ });
        ref.remaining += 1;
      }
      if (ref.remaining > 0) this.refs.set(r.queueMessageId, ref);
      else void this.store.deleteControl(r).catch((err) => this.log.warn({ err }, 'could not delete duplicate control message'));
    }
    for (const id of touched) this.trySchedule(id);
    // Only a full batch says more may be waiting: a partial one took all that was visible.
    return received.length === CONTROL_BATCH;
  }

  private trySchedule(instanceId: string): void {
    if (this.stopped || this.running.has(instanceId)) return;
    const buf = this.buffers.get(instanceId);
    if (!buf || buf.size === 0) {
      this.waiting.delete(instanceId);
      return;
    }
    if (this.running.size >= this.concurrencyLimit()) {
      this.waiting.add(instanceId);
      return;
    }
    this.waiting.delete(instanceId);
    this.running.add(instanceId);
    this.stats.peakConcurrency = Math.max(this.stats.peakConcurrency, this.running.size);
    if (this.load.atFloor(this.opts.maxConcurrentOrchestratorFunctions)) this.stats.peakAtFloor = Math.max(this.stats.peakAtFloor, this.running.size);
    const firstNew = this.order;
    let again = false;
    const p = this.runEpisode(instanceId)
      .then((progressed) => {
        const buf = this.buffers.get(instanceId);
        const arrivedMeanwhile = buf !== undefined && [...buf.values()].some((b) => b.order >= firstNew);
        again = progressed || arrivedMeanwhile;
      })
      .catch((err: unknown) => {
        this.cache.delete(instanceId);
        this.log.error({ err, instanceId }, 'durable episode failed; its messages will be retried');
        if (!this.stopped) {
          this.onEpisodeError(instanceId).catch((e: unknown) => this.log.error({ err: e, instanceId }, 'durable re-derivation after a failed episode failed'));
        }
      })
      .finally(() => {
        this.running.delete(instanceId);
        this.inFlight.delete(p);
        // The instance goes to the back of the line, and the next episode starts from a fresh turn of the event loop:
        // requests and messages that arrived during this one are read before more episodes are started.
        if (again) this.waiting.add(instanceId);
        setImmediate(() => this.scheduleWaiting());
      });
    this.inFlight.add(p);
  }

  /** Starts waiting instances, oldest first, while the concurrency limit allows. */
  private scheduleWaiting(): void {
    for (const w of [...this.waiting]) {
      if (this.stopped || this.running.size >= this.concurrencyLimit()) break;
      this.trySchedule(w);
    }
  }

  /** Runs one episode; resolves true when it made progress (so remaining messages deserve another). */
  private async runEpisode(instanceId: string): Promise<boolean> {
    const buf = this.buffers.get(instanceId)!;
    const snapshot = [...buf.values()].sort((a, b) => a.order - b.order);
    const started = performance.now();
    let loaded = this.cache.get(instanceId);
    if (!loaded) {
      loaded = await this.store.load(instanceId);
      if (loaded) this.cache.set(instanceId, loaded);
    }
    const now = new Date();
    const sel = selectBatch(
      loaded?.state,
      snapshot.map((b) => b.msg),
      now,
    );
    const byId = new Map(snapshot.map((b) => [b.msg.id, b]));

    for (const d of sel.dropped) this.log.debug({ instanceId, messageId: d.id, why: d.why }, 'durable message dropped');
    for (const r of sel.requeue) {
      await this.sendTimer(r.msg, r.delayMs);
      await this.deleteMessages(buf, byId, [r.msg.id]);
    }
    await this.deleteMessages(
      buf,
      byId,
      sel.dropped.map((d) => d.id),
    );

    const state = sel.state;
    if (!state) return false;
    let result: EpisodeResult | undefined;
    let prefix: HistoryEvent[] = [];
    /** Set by a rewind: the execution's whole history, rewritten; the commit then starts at row 0. */
    let rewritten: HistoryEvent[] | undefined;
    let reopened: ReopenedTask[] = [];
    if (sel.control === 'rewind') {
      const plan = rewindPlan(state, loaded?.history ?? []);
      if (!plan.ok) {
        this.log.warn({ instanceId, why: plan.why }, 'durable rewind request dropped');
        await this.deleteMessages(buf, byId, sel.consumed);
        return false;
      }
      rewritten = plan.history;
      reopened = plan.reopened;
      prefix = [events.orchestratorStarted(now), events.rewind(now, sel.controlReason ?? '')];
      const outcome = await this.invokeOrchestrator(plan.state, rewritten, prefix);
      result = applyOutcome(plan.state, [], outcome, now);
    } else if (sel.control === 'terminate') {
      result = applyTerminate(state, sel.controlReason, now);
    } else if (sel.control === 'suspend') {
      result = applySuspend(state, sel.controlReason, now);
    } else if (sel.deliver.length > 0) {
      prefix = [events.orchestratorStarted(now)];
      if (sel.control === 'resume') prefix.push(events.executionResumed(now, sel.controlReason ?? ''));
      prefix.push(...sel.deliver);
      const committed = sel.newExecution || !loaded ? [] : loaded.history;
      const outcome = await this.invokeOrchestrator(state, committed, prefix);
      result = applyOutcome(state, sel.deliver, outcome, now);
    } else if (sel.control === 'resume') {
      const s = structuredClone(state);
      s.status = 'Running';
      s.lastUpdatedTime = now.toISOString();
      result = { state: s, appended: [events.executionResumed(now, sel.controlReason ?? '')], outbox: emptyOutbox(), actionsLog: [{ type: 'Resume' }] };
    } else if (sel.stateChanged) {
      result = { state: structuredClone(state), appended: [], outbox: emptyOutbox(), actionsLog: [] };
    }
    if (!result) return false;

    const appended = [...(rewritten ?? []), ...prefix, ...result.appended];
    const execId = state.executionId;
    const start = rewritten || sel.newExecution || !loaded ? 0 : loaded.state.historyLength;
    const final = result.state;
    if (final.executionId === execId) final.historyLength = start + appended.length;
    const tInvoked = performance.now();
    let etag: string;
    try {
      etag = await this.store.commit(instanceId, loaded?.etag, execId, start, appended, final);
    } catch (err) {
      this.cache.delete(instanceId);
      if (err instanceof EtagConflictError) {
        this.log.warn({ instanceId, err: err.message }, 'durable episode lost a commit race; will replay');
        return true;
      }
      if (err instanceof UnstorableError) {
        await this.failUnstorable(instanceId, loaded, sel, err, now, buf, byId);
        return false;
      }
      throw err;
    }
    const tCommitted = performance.now();
    const baseHistory = rewritten || sel.newExecution || !loaded ? [] : loaded.history;
    this.cache.set(instanceId, {
      state: final,
      etag,
      history: final.executionId === execId ? baseHistory.concat(appended) : [],
    });

    // After the commit these are independent (recovery re-derives any of them after a crash).
    await Promise.all([
      this.store.putInstance(rowFromState(final)),
      this.sendOutbox(result.outbox),
      this.deleteMessages(buf, byId, sel.consumed),
      reopened.length > 0 && !isTerminal(final.status) ? this.resumeReopened(final, reopened) : undefined,
    ]);
    if (sel.newExecution && loaded) void this.cleanupHistory(instanceId, execId);
    if (final.executionId !== execId) void this.cleanupHistory(instanceId, final.executionId);
    if (buf.size === 0) this.buffers.delete(instanceId);

    this.stats.episodes += 1;
    this.stats.deliveredEvents += sel.deliver.length;
    const durationMs = Math.round((performance.now() - started) * 10) / 10;
    for (const a of result.actionsLog) {
      this.log.info({ instanceId, executionId: execId, action: a.type, taskId: a.id, name: a.name }, 'durable action');
    }
    this.log.info(
      {
        instanceId,
        executionId: execId,
        orchestrator: state.name,
        episode: final.episodes,
        events: sel.deliver.map((e) => EventType[e.EventType]),
        control: sel.control,
        actions: result.actionsLog.length,
        status: final.status,
        historyLength: final.historyLength,
        durationMs,
        untilInvokedMs: Math.round(tInvoked - started),
        commitMs: Math.round(tCommitted - tInvoked),
      },
      result.nonDeterminism ? `durable episode: ${result.nonDeterminism}` : 'durable episode',
    );
    return true;
  }

  /**
   * The episode's results do not fit in Table Storage: fail this instance alone with the reason (a small
   * commit), tell its parent, and consume its messages so they do not come back forever.
   */
  private async failUnstorable(
    instanceId: string,
    loaded: LoadedInstance | undefined,
    sel: Selection,
    err: UnstorableError,
    now: Date,
    buf: Map<string, Buffered>,
    byId: Map<string, Buffered>,
  ): Promise<void> {
    const before = sel.newExecution || !loaded ? sel.state! : loaded.state;
    const failed = applyUnstorable(before, err.message, now);
    const start = sel.newExecution || !loaded ? 0 : loaded.state.historyLength;
    failed.state.historyLength = start + failed.appended.length;
    this.log.error({ instanceId, err: err.message }, 'durable episode could not be stored; the instance fails');
    try {
      await this.store.commit(instanceId, loaded?.etag, failed.state.executionId, start, failed.appended, failed.state);
    } catch (e) {
      // Even the failure does not fit (or lost a race): the Instances row below still tells the caller.
      this.log.error({ instanceId, err: e }, 'durable: could not record the failure in the History table');
    }
    await Promise.all([this.store.putInstance(rowFromState(failed.state)), this.sendOutbox(failed.outbox), this.deleteMessages(buf, byId, sel.consumed)]);
  }

  /** After a rewind: send again what the reopened tasks wait for. */
  private async resumeReopened(state: InstanceState, tasks: ReopenedTask[]): Promise<void> {
    const work: Outbox['activities'] = [];
    for (const t of tasks) {
      if (t.kind === 'activity') {
        work.push({ instanceId: state.instanceId, executionId: state.executionId, taskId: t.id, name: t.name ?? '', input: t.scheduled?.Input });
      } else if (t.kind === 'timer' && t.fireAt) {
        await this.sendTimer(timerMessage(state.instanceId, state.executionId, t.id, t.fireAt), Date.parse(t.fireAt) - Date.now());
      } else if (t.kind === 'suborch' && t.childInstanceId) {
        const parent = { instanceId: state.instanceId, executionId: state.executionId, taskId: t.id };
        const child = await this.store.load(t.childInstanceId);
        const ours =
          child?.state.parent?.instanceId === parent.instanceId && child.state.parent.executionId === parent.executionId && child.state.parent.taskId === t.id;
        if (child && ours && child.state.status === 'Failed') {
          // Rewound like its parent, as the provider rewinds failed sub-orchestrations.
          await this.store.sendControl({
            id: randomUUID(),
            instanceId: child.state.instanceId,
            event: events.rewind(new Date(), `rewind of parent '${state.instanceId}'`),
            sentAt: new Date().toISOString(),
          });
        } else if (child && ours && isTerminal(child.state.status)) {
          const m = parentNotification(child.state, new Date());
          if (m) await this.store.sendControl(m);
        } else if (!child || !ours) {
          await this.startChild({ instanceId: t.childInstanceId, name: t.name ?? '', input: t.scheduled?.Input, parent });
        }
      }
    }
    if (work.length > 0) {
      await this.sendOutbox({ ...emptyOutbox(), activities: work });
    }
    this.wake();
  }

  private async cleanupHistory(instanceId: string, keepExecutionId: string): Promise<void> {
    try {
      await this.store.deleteHistory(instanceId, keepExecutionId);
    } catch (err) {
      this.log.warn({ err, instanceId }, 'could not delete old history rows');
    }
  }

  private async deleteMessages(buf: Map<string, Buffered>, byId: Map<string, Buffered>, ids: string[]): Promise<void> {
    const done: QueueRef[] = [];
    for (const id of ids) {
      const b = buf.get(id) ?? byId.get(id);
      if (!buf.delete(id) || !b) continue;
      b.ref.remaining -= 1;
      if (b.ref.remaining === 0) {
        this.refs.delete(b.ref.queueMessageId);
        done.push(b.ref);
      }
    }
    await inParallel(done, OUT_PARALLELISM, (ref) => this.store.deleteControl(ref));
  }

  async sendOutbox(outbox: Outbox): Promise<void> {
    await this.store.sendWorkItems(outbox.activities, OUT_PARALLELISM);
    if (outbox.activities.length > 0) this.onWorkItems();
    await inParallel(outbox.timers, OUT_PARALLELISM, (t) =>
      this.sendTimer(timerMessage(t.instanceId, t.executionId, t.timerId, t.fireAt), Date.parse(t.fireAt) - Date.now()),
    );
    await inParallel(outbox.children, OUT_PARALLELISM, (c) => this.startChild(c));
    await inParallel(outbox.messages, OUT_PARALLELISM, (m) => this.store.sendControl(m));
    if (outbox.messages.length > 0 || outbox.children.length > 0) this.wake();
  }

  /**
   * Sends a timer message and polls again when it becomes visible, instead of up to one idle polling interval
   * later (a job's polling stages wait on timers; the lateness would add to every poll). Timers set by another
   * process are still found by polling.
   */
  async sendTimer(msg: ControlMessage, delayMs: number): Promise<void> {
    const visibleInMs = await this.store.sendControl(msg, delayMs);
    this.poller.wakeIn(visibleInMs + TIMER_WAKE_SLACK_MS);
  }

  /** Create (or re-create after a crash) a sub-orchestration instance and send its start message. */
  async startChild(c: ChildStart): Promise<void> {
    const executionId = childExecutionId(c);
    const existing = await this.store.getInstance(c.instanceId);
    const now = new Date().toISOString();
    if (existing && !isTerminal(existing.runtimeStatus) && existing.executionId !== executionId) {
      await this.store.sendControl({
        id: `${c.instanceId}|${executionId}|conflict`,
        instanceId: c.parent.instanceId,
        executionId: c.parent.executionId,
        event: events.subOrchestrationFailed(
          new Date(),
          c.parent.taskId,
          `Sub-orchestration '${c.name}' could not start: an instance with ID '${c.instanceId}' is already ${existing.runtimeStatus}`,
          '',
        ),
        sentAt: now,
      });
      return;
    }
    if (!existing || existing.executionId !== executionId) {
      await this.store.putInstance({
        instanceId: c.instanceId,
        name: c.name,
        runtimeStatus: 'Pending',
        executionId,
        input: c.input,
        createdTime: now,
        lastUpdatedTime: now,
        parent: c.parent,
      });
    }
    await this.store.sendControl(startMessage(c.instanceId, executionId, c.name, c.input, c.parent));
  }

  private async invokeOrchestrator(state: InstanceState, committed: HistoryEvent[], fresh: HistoryEvent[]): Promise<Outcome> {
    const fn = findFunction(this.host.functions(), state.name, 'orchestrationTrigger');
    if (!fn) {
      return { kind: 'failed', message: `The function '${state.name}' doesn't exist, is disabled, or is not an orchestrator function.` };
    }
    const history = committed.map((e) => ({ ...e, IsPlayed: true })).concat(fresh);
    const payload = {
      history,
      input: state.input !== undefined ? (JSON.parse(state.input) as unknown) : undefined,
      instanceId: state.instanceId,
      isReplaying: committed.length > 0,
      parentInstanceId: state.parent?.instanceId ?? null,
      upperSchemaVersion: 1,
      upperSchemaVersionNew: 2,
      longRunningTimerIntervalDuration: '3.00:00:00',
      maximumShortTimerDuration: MAXIMUM_SHORT_TIMER_DURATION,
      defaultHttpAsyncRequestSleepTimeMillseconds: 30000,
    };
    const res = await this.host.invoke(fn.name, { inputData: [{ name: fn.trigger.name, data: { string: JSON.stringify(payload) } }] });
    if (res.error) return failureOutcome(res.error);
    // Prefer the in-process object: its action objects keep their identity (see freshAtomsPerAction).
    const raw = res.rawResult;
    const value =
      raw && typeof raw === 'object' && 'actions' in raw ? raw : res.returnValue?.json !== undefined ? (JSON.parse(res.returnValue.json) as unknown) : raw;
    if (!value || typeof value !== 'object' || !('actions' in value)) {
      return { kind: 'failed', message: `orchestrator returned no OrchestratorState (got ${JSON.stringify(value)?.slice(0, 200)})` };
    }
    return { kind: 'state', state: value as OrchestratorStateJson };
  }
}

const OOPROC_MARKER = '$OutOfProcData$:';

/** The library throws OrchestrationFailureError whose message embeds the OrchestratorState. */
export function failureOutcome(err: Error): Outcome {
  const i = err.message.indexOf(OOPROC_MARKER);
  if (i >= 0) {
    try {
      const state = JSON.parse(err.message.slice(i + OOPROC_MARKER.length)) as OrchestratorStateJson;
      return { kind: 'failed', message: state.error ?? err.message.slice(0, i).trim(), state };
    } catch {
      // fall through: report the raw message
    }
  }
  return { kind: 'failed', message: err.message, details: err.stack };
}

export function findFunction(fns: RegisteredFunction[], name: string, triggerType: string): RegisteredFunction | undefined {
  const lower = name.toLowerCase();
  return fns.find((f) => f.name.toLowerCase() === lower && f.trigger.type === triggerType);
}

/** A delayed queue message becomes visible at its whole second: look a moment after. */
const TIMER_WAKE_SLACK_MS = 25;

export function timerMessage(instanceId: string, executionId: string, timerId: number, fireAt: string): ControlMessage {
  return {
    id: `${instanceId}|${executionId}|timer|${timerId}`,
    instanceId,
    executionId,
    event: events.timerFired(new Date(fireAt), timerId, fireAt),
    sentAt: new Date().toISOString(),
  };
}

export function startMessage(
  instanceId: string,
  executionId: string,
  name: string,
  input: string | undefined,
  parent?: ControlMessage['parent'],
): ControlMessage {
  const at = new Date();
  return {
    id: `${executionId}:start`,
    instanceId,
    executionId,
    event: events.executionStarted(at, name, input, parent?.instanceId),
    parent,
    sentAt: at.toISOString(),
  };
}

/** Deterministic so that re-sending a child start after a crash names the same execution. */
export function childExecutionId(c: ChildStart): string {
  return createHash('sha1').update(`${c.parent.instanceId}\n${c.parent.executionId}\n${c.parent.taskId}\n${c.instanceId}`).digest('hex').slice(0, 32);
}
