/**
 * The activity dispatcher: takes work items from the work-item queue, runs each activity through the
 * host (as its activityTrigger), and answers the orchestration with TaskCompleted / TaskFailed on the
 * control queue. The work item is deleted only after the answer is sent, so a crash re-runs the
 * activity (at-least-once); the orchestration side drops the duplicate answer.
 */
import type { Logger } from 'pino';
import type { HostContext, TypedData } from '../host/extension';
import type { ResolvedOptions } from './config';
import { events } from './history';
import { findFunction } from './orchestrations';
import { Poller } from './poller';
import type { DurableStore, ReceivedMessage } from './store';
import type { ActivityWorkItem } from './state';

export class ActivityDispatcher {
  private active = 0;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly poller: Poller;
  readonly stats = { completed: 0, failed: 0, peakConcurrency: 0 };
  /** Called after an answer was put on the control queue (wakes the orchestration poller). */
  onAnswer: () => void = () => undefined;

  constructor(
    private readonly store: DurableStore,
    private readonly host: HostContext,
    private readonly opts: ResolvedOptions,
    private readonly log: Logger,
  ) {
    this.poller = new Poller('work-item-queue', () => this.round(), opts.maxPollingIntervalMs, log);
  }

  start(): void {
    this.poller.start();
  }

  wake(): void {
    this.poller.wake();
  }

  async stop(): Promise<void> {
    await this.poller.stop();
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async round(): Promise<boolean> {
    const free = this.opts.maxConcurrentActivityFunctions - this.active;
    if (free <= 0) return false;
    const received = await this.store.receiveWorkItems(Math.min(32, free), this.opts.workItemVisibilitySeconds);
    for (const m of received) {
      this.active += 1;
      this.stats.peakConcurrency = Math.max(this.stats.peakConcurrency, this.active);
      const p = this.run(m)
        .catch((err: unknown) => this.log.error({ err, instanceId: m.body.instanceId, taskId: m.body.taskId }, 'activity dispatch failed; the work item will be retried'))
        .finally(() => {
          this.active -= 1;
          this.inFlight.delete(p);
          this.poller.wake();
        });
      this.inFlight.add(p);
    }
    return received.length > 0;
  }

  private async run(m: ReceivedMessage<ActivityWorkItem>): Promise<void> {
    const item = m.body;
    const started = performance.now();
    // Keep the work item invisible while a long activity runs.
    const lease = { queueMessageId: m.queueMessageId, popReceipt: m.popReceipt };
    const renew = setInterval(() => {
      this.store
        .extendWorkItem(lease, this.opts.workItemVisibilitySeconds)
        .then((pop) => {
          if (pop) lease.popReceipt = pop;
        })
        .catch((err) => this.log.warn({ err, instanceId: item.instanceId, taskId: item.taskId }, 'could not renew work item lease'));
    }, (this.opts.workItemVisibilitySeconds * 1000) / 2);
    let event;
    try {
      const fn = findFunction(this.host.functions(), item.name, 'activityTrigger');
      if (!fn) {
        event = events.taskFailed(new Date(), item.taskId, `The activity function '${item.name}' doesn't exist, is disabled, or is not an activity function.`, '');
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
    } finally {
      clearInterval(renew);
    }
    await this.store.sendControl({
      id: `${item.instanceId}|${item.executionId}|task|${item.taskId}`,
      instanceId: item.instanceId,
      executionId: item.executionId,
      event,
      sentAt: new Date().toISOString(),
    });
    this.onAnswer();
    await this.store.deleteWorkItem(lease);
    const ok = event.TaskScheduledId !== undefined && event.Result !== undefined;
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
  }
}

/** TaskCompleted.Result: JSON text the library parses back (notes §1.5, activityTrigger). */
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
