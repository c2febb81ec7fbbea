/**
 * Queue trigger listener with the Storage extension's semantics: randomized exponential backoff while the
 * queue is empty (100 ms up to maxPollingInterval), batches of batchSize fetched again once in-flight
 * messages drop to newBatchThreshold, a held message's visibility renewed while its function runs, delete on
 * success, visibilityTimeout after a failure, and after maxDequeueCount failures a copy of the message
 * (body unchanged) in `<queue>-poison`.
 */
import type { DequeuedMessageItem, QueueClient } from '@azure/storage-queue';
import type { Logger } from 'pino';
import type { InvocationRequest, InvocationResult, RegisteredFunction, TypedData } from '../extension';
import type { IngressGauge } from '../ingress';
import { resolveAppSettingExpressions } from './bindingSettings';
import { queueServiceClient, resolveStorageConnection } from '../storageConnection';
import { decodeMessageText, hostTimestamp } from './queueMessages';
import { PollingBackoff } from './pollingBackoff';
import { MIN_POLLING_INTERVAL_MS, type QueueOptions } from './queueOptions';

/** How long a fetched message stays invisible while its function runs (renewed at half-time): the extension's 10 minutes. */
const DEFAULT_HOLD_S = 600;

export interface QueueListenerDeps {
  fn: RegisteredFunction;
  options: QueueOptions;
  log: Logger;
  invoke(functionName: string, request: InvocationRequest): Promise<InvocationResult>;
  /**
   * Counts the messages of a full batch from their receipt until they are deleted or given back (../ingress.ts): a
   * full batch means the queue has a backlog, which background work should make room for. A partial batch means the
   * listener keeps up, and is not counted.
   */
  ingress?: IngressGauge;
  /** Default DEFAULT_HOLD_S; a message held by a killed host is fetched again after it. */
  holdSeconds?: number;
}

export class QueueTriggerListener {
  private readonly queue: QueueClient;
  private readonly poison: QueueClient;
  private readonly queueName: string;
  private running = false;
  private loop?: Promise<void>;
  private readonly inFlight = new Set<Promise<void>>();
  private signalStop!: () => void;
  private readonly stopped = new Promise<void>((resolve) => {
    this.signalStop = resolve;
  });
  private readonly backoff: PollingBackoff;
  private poisonReady?: Promise<unknown>;
  private readonly holdSeconds: number;

  constructor(private readonly deps: QueueListenerDeps) {
    const t = deps.fn.trigger;
    const what = `Function "${deps.fn.name}" queue trigger`;
    this.queueName = resolveAppSettingExpressions(String(t.queueName ?? ''), what).toLowerCase();
    if (!this.queueName) throw new Error(`${what}: no queueName`);
    const service = queueServiceClient(resolveStorageConnection(t.connection, 'queue', what));
    this.queue = service.getQueueClient(this.queueName);
    this.poison = service.getQueueClient(`${this.queueName}-poison`);
    this.holdSeconds = deps.holdSeconds ?? DEFAULT_HOLD_S;
    if (!Number.isInteger(this.holdSeconds) || this.holdSeconds < 2)
      throw new Error(`${what}: holdSeconds must be an integer of at least 2, got ${this.holdSeconds}`);
    this.backoff = new PollingBackoff(MIN_POLLING_INTERVAL_MS, deps.options.maxPollingIntervalMs);
  }

  start(): void {
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.signalStop();
    await this.loop;
    await Promise.all([...this.inFlight]);
  }

  private async run(): Promise<void> {
    const { options, log } = this.deps;
    while (this.running) {
      if (this.inFlight.size > options.newBatchThreshold) {
        await Promise.race([...this.inFlight, this.stopped]);
        continue;
      }
      let messages: DequeuedMessageItem[] = [];
      try {
        const got = await this.queue.receiveMessages({ numberOfMessages: options.batchSize, visibilityTimeout: this.holdSeconds });
        messages = got.receivedMessageItems;
      } catch (err) {
        // A queue that does not exist yet is an empty queue, as for the host.
        if ((err as { statusCode?: number }).statusCode !== 404) {
          log.warn({ err, queue: this.queueName, functionName: this.deps.fn.name }, 'Queue poll failed');
        }
      }
      if (!this.running && messages.length > 0) {
        // Stopping: give the messages back at once.
        await Promise.all(messages.map((m) => this.release(m, 0)));
        break;
      }
      if (messages.length === 0) {
        await this.sleep(this.backoff.nextEmpty());
        continue;
      }
      this.backoff.reset();
      // The whole batch runs at once, as the Storage extension runs a fetched batch.
      const backlog = this.deps.ingress && messages.length >= options.batchSize ? this.deps.ingress : undefined;
      for (const m of messages) {
        const work = (): Promise<void> => this.process(m);
        const p = (backlog ? backlog.track(work) : work()).finally(() => this.inFlight.delete(p));
        this.inFlight.add(p);
      }
    }
  }

  /** Waits `ms`, or less when the listener stops. */
  private async sleep(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([new Promise<void>((resolve) => (timer = setTimeout(resolve, ms))), this.stopped]);
    clearTimeout(timer);
  }

  private async process(message: DequeuedMessageItem): Promise<void> {
    const { fn, options, log } = this.deps;
    const ctx = { functionName: fn.name, queue: this.queueName, messageId: message.messageId, dequeueCount: message.dequeueCount };
    let popReceipt = message.popReceipt;
    try {
      if (message.dequeueCount > options.maxDequeueCount) {
        // Left over from a crash after its last failure: straight to poison.
        await this.moveToPoison(message, popReceipt);
        return;
      }
      const renew = setInterval(
        () => {
          this.queue
            .updateMessage(message.messageId, popReceipt, undefined, this.holdSeconds)
            .then((r) => {
              if (r.popReceipt) popReceipt = r.popReceipt;
            })
            .catch((err: unknown) => log.warn({ ...ctx, err }, 'Could not renew message visibility'));
        },
        (this.holdSeconds * 1000) / 2,
      );
      let result: InvocationResult;
      try {
        result = await this.invokeFor(message);
      } finally {
        clearInterval(renew);
      }
      if (!result.error) {
        await this.queue.deleteMessage(message.messageId, popReceipt);
      } else if (message.dequeueCount >= options.maxDequeueCount) {
        log.warn(
          { ...ctx, invocationId: result.invocationId },
          `Message has reached MaxDequeueCount of ${options.maxDequeueCount}. Moving message to queue '${this.queueName}-poison'.`,
        );
        await this.moveToPoison(message, popReceipt);
      } else {
        await this.release(message, options.visibilityTimeoutMs, popReceipt);
      }
    } catch (err) {
      log.error({ ...ctx, err }, 'Queue message handling failed');
    }
  }

  private async invokeFor(message: DequeuedMessageItem): Promise<InvocationResult> {
    const { fn, options } = this.deps;
    let text: string;
    try {
      text = decodeMessageText(message.messageText, options.messageEncoding);
    } catch (err) {
      return { invocationId: '', outputData: [], error: err as Error };
    }
    const triggerMetadata: Record<string, TypedData> = {
      QueueTrigger: { string: text },
      DequeueCount: { json: String(message.dequeueCount) },
      ExpirationTime: { json: JSON.stringify(hostTimestamp(message.expiresOn)) },
      Id: { string: message.messageId },
      InsertionTime: { json: JSON.stringify(hostTimestamp(message.insertedOn)) },
      NextVisibleTime: { json: JSON.stringify(hostTimestamp(message.nextVisibleOn)) },
      PopReceipt: { string: message.popReceipt },
    };
    // A JSON object message also exposes its top-level properties as binding data.
    const parsed = tryParseObject(text);
    if (parsed) {
      for (const [k, v] of Object.entries(parsed)) {
        if (!(k in triggerMetadata)) triggerMetadata[k] = typeof v === 'string' ? { string: v } : { json: JSON.stringify(v) };
      }
    }
    return this.deps.invoke(fn.name, { inputData: [{ name: fn.trigger.name, data: { string: text } }], triggerMetadata });
  }

  private async release(message: DequeuedMessageItem, visibilityMs: number, popReceipt = message.popReceipt): Promise<void> {
    await this.queue.updateMessage(message.messageId, popReceipt, undefined, Math.round(visibilityMs / 1000));
  }

  private async moveToPoison(message: DequeuedMessageItem, popReceipt: string): Promise<void> {
    this.poisonReady ??= this.poison.createIfNotExists().catch((err: unknown) => {
      this.poisonReady = undefined;
      throw err;
    });
    await this.poisonReady;
    // The raw text: the body stays exactly as it was sent (still encoded).
    await this.poison.sendMessage(message.messageText);
    await this.queue.deleteMessage(message.messageId, popReceipt);
  }
}

function tryParseObject(text: string): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}
