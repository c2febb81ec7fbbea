/**
 * What the host's listeners have in flight (HostContext.ingress, local/host/ingress.ts), and how the queue listener
 * takes messages: in batches of batchSize, each batch run at once, the next fetched when in-flight messages drop to
 * newBatchThreshold (as the Storage extension's QueueListener does), the messages of full batches counted as
 * ingress and those of a partial batch not. Counts and order of events only: invocations are held open by the test
 * and released one by one.
 */
import pino from 'pino';
import type { AzuriteHandle } from '../../local/azurite';
import type { FunctionsHostHandle, InvocationRequest, InvocationResult, RegisteredFunction } from '../../local/host';
import { IngressGauge } from '../../local/host/ingress';
import { QueueTriggerListener } from '../../local/host/triggers/queueTrigger';
import { QueueClient } from '@azure/storage-queue';
import { heldRequests } from '../fixtures/host-app/src/held';
import { startAzurite, startFixtureHost, waitFor } from './harness';

let azurite: AzuriteHandle;

beforeAll(async () => {
  azurite = await startAzurite();
}, 60_000);
afterAll(async () => {
  await azurite?.stop();
});

describe('HTTP requests in flight', () => {
  let host: FunctionsHostHandle;

  beforeAll(async () => {
    ({ host } = await startFixtureHost(azurite));
  }, 60_000);
  afterAll(async () => {
    for (const release of heldRequests().values()) release();
    await host?.stop();
  });

  test('a request counts from its arrival until it is answered, and listeners hear every change', async () => {
    const ingress = host.context.ingress;
    const changes: number[] = [];
    const unsubscribe = ingress.onChange((n) => changes.push(n));
    expect(ingress.inFlight()).toBe(0);
    const answers = ['a', 'b'].map((key) => fetch(`${host.baseUrl}/api/held/${key}`));
    await waitFor('both held requests', () => heldRequests().size === 2 || undefined);
    expect(ingress.inFlight()).toBe(2);
    heldRequests().get('a')!();
    expect((await answers[0]).status).toBe(200);
    await waitFor('the first to be counted out', () => ingress.inFlight() === 1 || undefined);
    heldRequests().get('b')!();
    expect(await (await answers[1]).text()).toBe('released b');
    await waitFor('the count to drop', () => ingress.inFlight() === 0 || undefined);
    expect(changes).toEqual([1, 2, 1, 0]);
    // Requests the host answers itself (no such route) count too, and end.
    expect((await fetch(`${host.baseUrl}/api/no-such-route`)).status).toBe(404);
    await waitFor('the count to drop again', () => ingress.inFlight() === 0 || undefined);
    expect(changes).toEqual([1, 2, 1, 0, 1, 0]);
    unsubscribe();
  });
});

describe('queue listener batches', () => {
  const QUEUE = 'batched-items';
  const SETTING = 'IngressTestStorage';
  let listener: QueueTriggerListener | undefined;

  afterEach(async () => {
    await listener?.stop();
    delete process.env[SETTING];
  });

  test('fetches batchSize messages at once, runs the whole batch at once, fetches again only when in-flight drops to newBatchThreshold; counts full batches only', async () => {
    process.env[SETTING] = azurite.connectionString();
    const queue = new QueueClient(azurite.connectionString(), QUEUE);
    await queue.create();
    const bodies = Array.from({ length: 10 }, (_, i) => `m${i}`);
    for (const b of bodies) await queue.sendMessage(Buffer.from(b).toString('base64'));

    // Every receive the listener makes, with how many messages it got (the real client, observed).
    const received: number[] = [];
    const receive = QueueClient.prototype.receiveMessages;
    const spy = jest.spyOn(QueueClient.prototype, 'receiveMessages').mockImplementation(async function (this: QueueClient, options) {
      const got = await receive.call(this, options);
      if (this.name === QUEUE && got.receivedMessageItems.length > 0) received.push(got.receivedMessageItems.length);
      return got;
    });

    // Invocations stay open until the test finishes them; `finishedBefore` records, for each start, how many had finished.
    const started: { text: string; finishedBefore: number; finish: () => void }[] = [];
    let finished = 0;
    const invoke = (_name: string, req: InvocationRequest): Promise<InvocationResult> =>
      new Promise((resolve) => {
        const text = String(req.inputData[0]?.data?.string);
        started.push({
          text,
          finishedBefore: finished,
          finish: () => {
            finished += 1;
            resolve({ invocationId: text, outputData: [] });
          },
        });
      });
    const fn: RegisteredFunction = {
      name: 'batched',
      trigger: { name: 'item', type: 'queueTrigger', direction: 'in', queueName: QUEUE, connection: SETTING },
      bindings: {},
    };
    const ingress = new IngressGauge();
    listener = new QueueTriggerListener({
      fn,
      options: { batchSize: 4, newBatchThreshold: 2, maxPollingIntervalMs: 200, visibilityTimeoutMs: 0, maxDequeueCount: 3, messageEncoding: 'base64' },
      log: pino({ level: 'silent' }),
      invoke,
      ingress,
    });
    listener.start();

    // The first batch: 4 messages from one receive, all 4 running, none finished.
    await waitFor('the first batch', () => started.length === 4 || undefined);
    expect(received).toEqual([4]);
    expect(ingress.inFlight()).toBe(4);
    // One finished leaves 3 > newBatchThreshold in flight: no fetch. The second leaves 2: the next batch comes.
    started[0]!.finish();
    await waitFor('the first message to be deleted', () => ingress.inFlight() === 3 || undefined);
    started[1]!.finish();
    await waitFor('the second batch', () => started.length === 8 || undefined);
    expect(received).toEqual([4, 4]);
    expect(started.slice(4).map((s) => s.finishedBefore)).toEqual([2, 2, 2, 2]);
    expect(ingress.inFlight()).toBe(6); // batchSize + newBatchThreshold

    // Four more finish, leaving 2 in flight: the last 2 messages come in a third receive. A partial batch (the queue
    // has no backlog left): run at once like the others, but not counted as ingress.
    for (let i = 2; i < 6; i++) started[i]!.finish();
    await waitFor('the third batch', () => started.length === 10 || undefined);
    expect(received).toEqual([4, 4, 2]);
    await waitFor('the four to be deleted', () => ingress.inFlight() === 2 || undefined);
    started[6]!.finish();
    started[7]!.finish();
    await waitFor('the full batches to be done', () => ingress.inFlight() === 0 || undefined);
    expect(finished).toBe(8); // messages 8 and 9 still run, uncounted
    started[8]!.finish();
    started[9]!.finish();
    expect(started.map((s) => s.text).sort()).toEqual([...bodies].sort());
    await waitFor('every message deleted', async () => (await queue.getProperties()).approximateMessagesCount === 0 || undefined);
    expect((await queue.peekMessages({ numberOfMessages: 32 })).peekedMessageItems).toEqual([]);
    expect(ingress.inFlight()).toBe(0);
    spy.mockRestore();
  });

  test('a message whose hold is not renewed (the host that fetched it died) is fetched again once holdSeconds pass, not after 10 minutes', async () => {
    process.env[SETTING] = azurite.connectionString();
    const queue = new QueueClient(azurite.connectionString(), `${QUEUE}-held`);
    await queue.create();
    await queue.sendMessage(Buffer.from('orphan').toString('base64'));
    // The dead host's renewals never reach the queue.
    const renew = jest.spyOn(QueueClient.prototype, 'updateMessage').mockRejectedValue(new Error('host killed'));
    const deliveries: { dequeueCount: string; at: number; finish: () => void }[] = [];
    const invoke = (_name: string, req: InvocationRequest): Promise<InvocationResult> =>
      new Promise((resolve) => {
        deliveries.push({
          dequeueCount: String(req.triggerMetadata?.DequeueCount?.json),
          at: Date.now(),
          finish: () => resolve({ invocationId: 'x', outputData: [] }),
        });
      });
    const fn: RegisteredFunction = {
      name: 'held',
      trigger: { name: 'item', type: 'queueTrigger', direction: 'in', queueName: `${QUEUE}-held`, connection: SETTING },
      bindings: {},
    };
    const options = {
      batchSize: 4,
      newBatchThreshold: 2,
      maxPollingIntervalMs: 200,
      visibilityTimeoutMs: 0,
      maxDequeueCount: 3,
      messageEncoding: 'base64' as const,
    };
    listener = new QueueTriggerListener({ fn, options, log: pino({ level: 'silent' }), invoke, holdSeconds: 2 });
    listener.start();
    await waitFor('the second delivery', () => deliveries.length === 2 || undefined, 15_000);
    expect(deliveries.map((d) => d.dequeueCount)).toEqual(['1', '2']);
    expect(deliveries[1]!.at - deliveries[0]!.at).toBeGreaterThanOrEqual(1500);
    renew.mockRestore();
    for (const d of deliveries) d.finish();
    expect(() => new QueueTriggerListener({ fn, options, log: pino({ level: 'silent' }), invoke, holdSeconds: 1 })).toThrow(
      /holdSeconds must be an integer of at least 2/,
    );
  });
});
