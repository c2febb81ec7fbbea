/**
 * The activity dispatcher: takes work-item messages (each packs one or more activity attempts) from
 * the work-item queue, runs each attempt through the host as its activityTrigger with at most
 * maxConcurrentActivityFunctions at once, and answers the orchestration with TaskCompleted /
 * TaskFailed on the control queue. Answers that finish close together are batched into one control
 * message per instance. A work-item message is deleted only after every attempt in it was answered,
 * so a crash re-runs them (at-least-once); the orchestration side drops duplicate answers.
 */
import type { Logger } from 'pino';
import type { HostContext, TypedData } from '../host/extension';
import type { ResolvedOptions } from './config';
import { events, type HistoryEvent } from './history';
import { findFunction } from './orchestrations';
import type { HostLoad } from './hostLoad';
import { Poller } from './poller';
import type { DurableStore } from './store';
import type { ActivityWorkItem } from './state';

interface Lease {
  queueMessageId: string;
  popReceipt: string;
  remaining: number;
  renew: NodeJS.Timeout;
}

interface Attempt {
  item: ActivityWorkItem;
  lease: Lease;
}

interface PendingAnswers {
  instanceId: string;
  executionId: string;
  events: HistoryEvent[];
  leases: Lease[];
}

/** Answers per control message; keeps messages well under the 64 KiB queue limit for small results. */
const MAX_ANSWERS_PER_MESSAGE = 100;
const MAX_ANSWER_CHARS = 40 * 1024;
/** Work-item messages received per poll. */
const WORK_ITEM_BATCH = 4;

export class ActivityDispatcher {
  private active = 0;
  private readonly backlog: Attempt[] = [];
  private readonly leases = new Set<Lease>();
  private readonly inFlight = new Set<Promise<void>>();
  private readonly answers = new Map<string, PendingAnswers>();
  private flushing: Promise<void> | undefined;
  private flushTimer: NodeJS.Immediate | undefined;
  private readonly poller: Poller;
  private stopped = false;
  private unsubscribeIdle: (() => void) | undefined;
  /** `peakAtFloor`: the most activities running at once when one started while the host's load held the engine at its floor. */
  readonly stats = { completed: 0, failed: 0, peakConcurrency: 0, peakAtFloor: 0 };
  /** Called after answers were put on the control queue (wakes the orchestration poller). */
  onAnswer: () => void = () => undefined;

  constructor(
    private readonly store: DurableStore,
    private readonly host: HostContext,
    private readonly opts: ResolvedOptions,
    private readonly log: Logger,
    private readonly load: HostLoad,
  ) {
    this.poller = new Poller('work-item-queue', () => this.round(), opts.maxPollingIntervalMs, log);
  }

  start(): void {
    // Relief raises the limit for attempts held in the backlog; with none there, a poll would find only what the next
    // idle poll finds (every HTTP request the host answers ends in a relief: two empty receives each, before).
    this.unsubscribeIdle = this.load.onRelief(() => {
      if (this.backlog.length > 0) this.poller.wake();
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
    if (this.flushTimer) clearImmediate(this.flushTimer);
    await this.flush();
    // Attempts never started stay in their (undeleted) messages and run again after a restart.
    this.backlog.length = 0;
    for (const l of this.leases) clearInterval(l.renew);
    this.leases.clear();
  }

  private async round(): Promise<boolean> {
    const started = this.startAttempts();
    // A full backlog: receive nothing more until attempts start (an ending activity wakes the poller for that).
    if (this.backlog.length >= this.opts.maxConcurrentActivityFunctions) return started;
    const received = await this.store.receiveWorkItems(WORK_ITEM_BATCH, this.opts.workItemVisibilitySeconds);
    for (const m of received) {
      const lease: Lease = {
        queueMessageId: m.queueMessageId,
        popReceipt: m.popReceipt,
        remaining: m.body.items.length,
        renew: undefined as unknown as NodeJS.Timeout,
      };
      lease.renew = setInterval(() => this.renewLease(lease), (this.opts.workItemVisibilitySeconds * 1000) / 2);
      this.leases.add(lease);
      for (const item of m.body.items) this.backlog.push({ item, lease });
      if (m.body.items.length === 0) this.release(lease, true);
    }
    this.startAttempts();
    // Only a full batch says more may be waiting; what this process sends wakes the poller anyway.
    return received.length === WORK_ITEM_BATCH;
  }

  /** maxConcurrentActivityFunctions, fewer while the host's listeners are busy (./hostLoad.ts). */
  private concurrencyLimit(): number {
    return this.load.limit(this.opts.maxConcurrentActivityFunctions);
  }

  private startAttempts(): boolean {
    let started = false;
    while (!this.stopped && this.active < this.concurrencyLimit() && this.backlog.length > 0) {
      const a = this.backlog.shift()!;
      this.active += 1;
      this.stats.peakConcurrency = Math.max(this.stats.peakConcurrency, this.active);
      if (this.load.atFloor(this.opts.maxConcurrentActivityFunctions)) this.stats.peakAtFloor = Math.max(this.stats.peakAtFloor, this.active);
      started = true;
      const p = this.run(a)
        .catch((err: unknown) => {
          this.log.error({ err, instanceId: a.item.instanceId, taskId: a.item.taskId }, 'activity dispatch failed; the work item will be retried');
          this.release(a.lease, false);
        })
        .finally(() => {
          this.active -= 1;
          this.inFlight.delete(p);
          // A freed slot matters only to attempts held in the backlog (new work items wake the poller when sent).
          if (this.backlog.length > 0) this.poller.wake();
        });
      this.inFlight.add(p);
    }
    return started;
  }

  private renewLease(lease: Lease): void {
    this.store
      .extendWorkItem(lease, this.opts.workItemVisibilitySeconds)
      .then((pop) => {
        if (pop) lease.popReceipt = pop;
      })
      .catch((err) => this.log.warn({ err }, 'could not renew work item lease'));
  }

  /** One attempt answered (ok) or given up (not ok: the message will come back after its visibility timeout). */
  private release(lease: Lease, ok: boolean): void {
    if (!this.leases.has(lease)) return;
    lease.remaining -= 1;
    if (ok && lease.remaining > 0) return;
    clearInterval(lease.renew);
    this.leases.delete(lease);
    if (ok) void this.store.deleteWorkItem(lease).catch((err) => this.log.warn({ err }, 'could not delete answered work item'));
  }

  private async run(a: Attempt): Promise<void> {
    const item = a.item;
    const started = performance.now();
    let event: HistoryEvent;
    const fn = findFunction(this.host.functions(), item.name, 'activityTrigger');
    if (!fn) {
      event = events.taskFailed(
        new Date(),
        item.taskId,
        `The activity function '${item.name}' doesn't exist, is disabled, or is not an activity function.`,
        '',
      );
    } else {
      const data: TypedData | undefined = item.input !== undefined ? { json: item.input } : undefined;
      const res = await this.host.invoke(fn.name, {
        inputData: [{ name: fn.trigger.name, data }],
        triggerMetadata: { instanceId: { string: item.instanceId } },
      });
      event = res.error
        ? events.taskFailed(new Date(), item.taskId, `Activity function '${item.name}' failed: ${res.error.message}`, res.error.stack ?? '')
        : events.taskCompleted(new Date(), item.taskId, resultJson(res.returnValue));
    }
    const ok = event.Result !== undefined;
    if (ok) this.stats.completed += 1;
    else this.stats.failed += 1;
    this.log.info(
      {
        instanceId: item.instanceId,
        activity: item.name,
        taskId: item.taskId,
        ok,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        ...(ok ? {} : { reason: event.Reason }),
      },
      'durable activity',
    );
    this.answer(item, event, a.lease);
  }

  private answer(item: ActivityWorkItem, event: HistoryEvent, lease: Lease): void {
    const key = `${item.instanceId}\n${item.executionId}`;
    let group = this.answers.get(key);
    if (!group) this.answers.set(key, (group = { instanceId: item.instanceId, executionId: item.executionId, events: [], leases: [] }));
    group.events.push(event);
    group.leases.push(lease);
    // Collect the answers that finish in the same turn of the event loop, then send them together.
    this.flushTimer ??= setImmediate(() => {
      this.flushTimer = undefined;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.answers.size === 0) return;
    const groups = [...this.answers.values()];
    this.answers.clear();
    this.flushing = (async () => {
      await Promise.all(groups.map((g) => this.sendGroup(g)));
      this.onAnswer();
    })().finally(() => {
      this.flushing = undefined;
    });
    await this.flushing;
  }

  private async sendGroup(g: PendingAnswers): Promise<void> {
    let start = 0;
    while (start < g.events.length) {
      let end = start;
      let size = 0;
      while (end < g.events.length && end - start < MAX_ANSWERS_PER_MESSAGE) {
        const n = JSON.stringify(g.events[end]).length;
        if (end > start && size + n > MAX_ANSWER_CHARS) break;
        size += n;
        end += 1;
      }
      const chunk = g.events.slice(start, end);
      const leases = g.leases.slice(start, end);
      try {
        await this.store.sendControlBatch({
          id: `${g.instanceId}|${g.executionId}|answers|${chunk
            .map((e) => e.TaskScheduledId)
            .join(',')
            .slice(0, 200)}|${Date.now()}`,
          instanceId: g.instanceId,
          executionId: g.executionId,
          events: chunk,
          sentAt: new Date().toISOString(),
        });
        for (const l of leases) this.release(l, true);
      } catch (err) {
        this.log.error({ err, instanceId: g.instanceId }, 'could not send activity answers; the work items will run again');
        for (const l of leases) this.release(l, false);
      }
      start = end;
    }
  }
}

/** TaskCompleted.Result: JSON text the library parses back (the activityTrigger's return value, serialised). */
export function resultJson(v: TypedData | undefined | null): string {
  if (!v) return 'null';
  if (v.json !== undefined) return v.json;
  if (v.string !== undefined) return JSON.stringify(v.string);
  if (v.int !== undefined) return String(v.int);
  if (v.double !== undefined) return String(v.double);
  if (v.bytes !== undefined) return JSON.stringify(Buffer.from(v.bytes).toString('base64'));
  if (v.collectionString) return JSON.stringify(v.collectionString.string);
  if (v.collectionDouble) return JSON.stringify(v.collectionDouble.double);
  if (v.collectionSint64) return JSON.stringify(v.collectionSint64.sint64);
  return 'null';
}
