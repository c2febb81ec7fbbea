import { QueueServiceClient, type QueueClient } from '@azure/storage-queue';
import type { AzuriteHandle } from '../../local/azurite';
import type { FunctionsHostHandle } from '../../local/host';
import { events } from '../fixtures/host-app/src/events';
import { startAzurite, startFixtureHost, waitFor, type LogCapture } from './harness';

const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
const unb64 = (s: string): string => Buffer.from(s, 'base64').toString('utf8');

describe('local host: storage queues', () => {
  let azurite: AzuriteHandle;
  let host: FunctionsHostHandle;
  let logs: LogCapture;
  let service: QueueServiceClient;
  const queue = (name: string): QueueClient => service.getQueueClient(name);

  /** Every message currently in a queue (peek does not change dequeue counts). */
  const peekAll = async (name: string): Promise<string[]> => {
    const q = queue(name);
    if (!(await q.exists())) return [];
    const got = await q.peekMessages({ numberOfMessages: 32 });
    return got.peekedMessageItems.map((m) => m.messageText);
  };

  beforeAll(async () => {
    azurite = await startAzurite();
    service = QueueServiceClient.fromConnectionString(azurite.connectionString());
    for (const name of ['items', 'always-fails', 'slow-items']) await queue(name).create();
    ({ host, logs } = await startFixtureHost(azurite));
  });

  afterAll(async () => {
    await host?.stop();
    await azurite?.stop();
  });

  it('processes a message, passes trigger metadata, writes the output binding and deletes the message', async () => {
    const sent = await queue('items').sendMessage(b64(JSON.stringify({ name: 'job-1', size: 3 })));
    const seen = await waitFor('processItem to run', () => events().find((e) => e.kind === 'processItem' && e.id === sent.messageId));
    expect(seen).toMatchObject({ item: { name: 'job-1', size: 3 }, dequeueCount: 1 });
    expect(typeof seen.insertionTime).toBe('string');

    const done = await waitFor('the output message', async () => {
      const texts = await peekAll('items-done');
      return texts.length > 0 ? texts : undefined;
    });
    expect(done.map((t) => JSON.parse(unb64(t)))).toEqual([{ processed: { name: 'job-1', size: 3 }, by: 'processItem' }]);
    await waitFor('the message to be deleted', async () => ((await peekAll('items')).length === 0 ? true : undefined));
    // The invocation's log lines carry its id and function name.
    const invocationLog = logs.lines.find((l) => l.functionName === 'processItem' && /Executed/.test(l.msg));
    expect(invocationLog?.invocationId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('retries a failing message exactly maxDequeueCount times, then moves it unchanged to the poison queue', async () => {
    const body = b64(JSON.stringify({ poison: 'pill', n: 42 }));
    const sent = await queue('always-fails').sendMessage(body);
    const poisoned = await waitFor('the poison message', async () => {
      const texts = await peekAll('always-fails-poison');
      return texts.length > 0 ? texts : undefined;
    });
    expect(poisoned).toEqual([body]);
    const attempts = events().filter((e) => e.kind === 'alwaysFails');
    // maxDequeueCount is 3 in the fixture's host.json.
    expect(attempts.map((e) => e.dequeueCount)).toEqual([1, 2, 3]);
    expect(attempts.every((e) => JSON.stringify(e.item) === '{"poison":"pill","n":42}')).toBe(true);
    expect(await peekAll('always-fails')).toEqual([]);
    expect(logs.lines.some((l) => l.messageId === sent.messageId && /MaxDequeueCount of 3/.test(l.msg))).toBe(true);
  });

  it('writes one message per array element of a queue output binding', async () => {
    const res = await fetch(`${host.baseUrl}/api/fan-out/3`, { method: 'POST' });
    expect(res.status).toBe(202);
    const texts = await peekAll('fanned');
    expect(texts.map((t) => JSON.parse(unb64(t)))).toEqual([{ part: 0 }, { part: 1 }, { part: 2 }]);
  });

  it('handles a burst of more messages than batchSize without losing any', async () => {
    const before = events().filter((e) => e.kind === 'processItem').length;
    const names = Array.from({ length: 12 }, (_, i) => `burst-${i}`);
    await Promise.all(names.map((name) => queue('items').sendMessage(b64(JSON.stringify({ name })))));
    await waitFor('all burst messages', () => (events().filter((e) => e.kind === 'processItem').length - before >= names.length ? true : undefined));
    const got = events()
      .filter((e) => e.kind === 'processItem')
      .slice(before)
      .map((e) => (e.item as { name: string }).name)
      .sort();
    expect(got).toEqual([...names].sort());
    await waitFor('the queue to drain', async () => ((await peekAll('items')).length === 0 ? true : undefined));
  });

  it('runs up to batchSize + newBatchThreshold invocations at once', async () => {
    // Fixture host.json: batchSize 4, newBatchThreshold 2.
    await Promise.all(Array.from({ length: 10 }, (_, i) => queue('slow-items').sendMessage(b64(String(i)))));
    await waitFor('all slow items', () => (events().filter((e) => e.kind === 'slowItem').length >= 10 ? true : undefined));
    const overlaps = events()
      .filter((e) => e.kind === 'slowItem')
      .map((e) => e.inFlight as number);
    expect(Math.max(...overlaps)).toBeGreaterThanOrEqual(2);
    expect(Math.max(...overlaps)).toBeLessThanOrEqual(6);
  });
});
