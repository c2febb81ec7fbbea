/**
 * What a Table Storage transaction cannot carry (issue 18, finding 3). A U+2028 in an orchestration's input
 * wedged Azurite's table transactions for every instance (see local/durable/tableSafe.ts); the engine now
 * stores such text escaped, exactly recoverable, and an episode too large for Table Storage fails its own
 * instance only. Each stack test runs beside a normal orchestration that must complete.
 */
import { TableClient } from '@azure/data-tables';
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueClient } from '@azure/storage-queue';
import { assertTransactionSafe, escapeForTable, UnstorableError } from '../../local/durable/tableSafe';
import { durableUrl, getStatus, http, startDurableStack, waitForStatus, type DurableStack } from './helpers/harness';

const NASTY = {
  lineSeparator: 'mpirun -np 4 ./a.out\u2028--rm -rf /',
  paragraphSeparator: 'x\u2029y',
  nextLine: 'a\u0085b',
  bidi: 'rm \u202Etxt.exe\u202C \u2066isolate\u2069 \u200F\u200E\u061C',
  bom: '\uFEFFstart',
  mixed: 'all\u2028\u2029\u0085\u202A\u202B\u202D\u2067\u2068\u007F\u009F\uFFFE\uFFFF',
  nested: { command: ['\u2028', { deeper: '\u2029\u0085' }] },
};

describe('escapeForTable / assertTransactionSafe (pure)', () => {
  test('escaped JSON text parses back to the same value and holds none of the unsafe characters', () => {
    const text = JSON.stringify(NASTY);
    const stored = escapeForTable(text);
    expect(JSON.parse(stored)).toEqual(NASTY);
    expect(stored).not.toMatch(/[\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ufffe\uffff]/);
    expect(stored).toContain('\\u2028');
    // Text without unsafe characters is left alone.
    expect(escapeForTable('{"plain":"ascii and ü"}')).toBe('{"plain":"ascii and ü"}');
  });

  test('a transaction with a raw line separator or over the size limits is refused before it is sent', () => {
    expect(() => assertTransactionSafe('t', [{ partitionKey: 'p', rowKey: 'r', Data: 'a\u2028b' }])).toThrow(UnstorableError);
    expect(() => assertTransactionSafe('t', [{ partitionKey: 'p', rowKey: 'r', Data: 'x'.repeat(33_000) }])).toThrow(/33000 characters/);
    const big = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`P${i}`, 'x'.repeat(30_000)]));
    expect(() => assertTransactionSafe('t', [{ partitionKey: 'p', rowKey: 'r', ...big }])).toThrow(/1 MiB/);
    expect(() => assertTransactionSafe('t', [{ partitionKey: 'p', rowKey: 'r', Data: 'fine \\u2028' }])).not.toThrow();
  });
});

describe('on the stack', () => {
  let stack: DurableStack;

  beforeAll(async () => {
    stack = await startDurableStack();
  });

  afterAll(async () => {
    await stack?.stop();
  });

  const start = async (name: string, id: string, input?: unknown): Promise<void> => {
    const res = await http('POST', durableUrl(stack.baseUrl, `orchestrators/${name}/${id}`, stack.systemKey), input);
    expect(res.status).toBe(202);
  };

  test('line separators, NEL and bidi controls in an input round-trip exactly, and other orchestrations keep running', async () => {
    await start('EchoInput', 'nasty-1', NASTY);
    await start('Chain', 'normal-1', ['after']);
    // An event whose name and data carry the same characters.
    await start('Waiter', 'nasty-waiter');
    await waitForStatus(stack.baseUrl, 'nasty-waiter', ['Running']);
    const raised = await http('POST', durableUrl(stack.baseUrl, `instances/nasty-waiter/raiseEvent/Go`, stack.systemKey), NASTY.mixed);
    expect(raised.status).toBe(202);
    await http('POST', durableUrl(stack.baseUrl, `instances/nasty-waiter/raiseEvent/${encodeURIComponent('Go\u2028\u202E')}`, stack.systemKey), 1);

    const nasty = await waitForStatus(stack.baseUrl, 'nasty-1');
    expect(nasty).toMatchObject({ runtimeStatus: 'Completed', input: NASTY, output: NASTY, customStatus: NASTY });
    expect(await waitForStatus(stack.baseUrl, 'normal-1')).toMatchObject({ runtimeStatus: 'Completed', output: ['Hello after'] });
    expect(await waitForStatus(stack.baseUrl, 'nasty-waiter')).toMatchObject({ runtimeStatus: 'Completed', output: NASTY.mixed });
    const h = await getStatus(stack.baseUrl, 'nasty-1', '?showHistory=true&showHistoryOutput=true');
    expect(h?.historyEvents?.find((e) => e.EventType === 'TaskCompleted')?.Result).toEqual(NASTY);

    // Nothing raw in the task hub's tables: every stored string is escaped.
    for (const table of ['DurableTestHubHistory', 'DurableTestHubInstances']) {
      const client = TableClient.fromConnectionString(stack.azurite.connectionString(), table, { allowInsecureConnection: true });
      for await (const e of client.listEntities<Record<string, unknown>>()) {
        for (const [k, v] of Object.entries(e)) {
          if (typeof v === 'string') expect({ table, k, raw: /[\u2028\u2029\u0085\u202e]/.test(v) }).toEqual({ table, k, raw: false });
        }
      }
    }
    // A later transaction of another instance still succeeds (the stack is not wedged).
    await start('Chain', 'normal-2', ['later']);
    expect(await waitForStatus(stack.baseUrl, 'normal-2')).toMatchObject({ runtimeStatus: 'Completed' });
  });

  test("a message larger than a queue message travels through a blob, as the provider's large-message support does; a purge removes the blobs", async () => {
    // 80,000 characters (base64: 107,000): the start message, the activity's work item and its answer are each over
    // the 64 KiB limit. (The provider also moves table properties over 64 KiB to blobs; this engine splits them into
    // several properties instead, within the entity's 1 MiB: the next test.)
    const big = { rows: Array.from({ length: 800 }, (_, i) => `${String(i).padStart(4, '0')} ${'abcdefghij'.repeat(9)}`) };
    await start('PassThrough', 'large-1', big);
    const done = await waitForStatus(stack.baseUrl, 'large-1');
    expect({ status: done.runtimeStatus, output: done.output }).toEqual({ status: 'Completed', output: big });
    const container = BlobServiceClient.fromConnectionString(stack.azurite.connectionString()).getContainerClient('durabletesthub-largemessages');
    const blobs = async (): Promise<string[]> => {
      const names: string[] = [];
      for await (const b of container.listBlobsFlat({ prefix: 'large-1/' })) names.push(b.name);
      return names;
    };
    expect((await blobs()).length).toBeGreaterThanOrEqual(3);
    const purged = await http('DELETE', durableUrl(stack.baseUrl, 'instances/large-1', stack.systemKey));
    expect(purged.status).toBe(200);
    expect(await blobs()).toEqual([]);
  });

  test('valid JSON of the wrong shape, on the control and the work-item queue, is deleted and logged unread; the instances behind it run', async () => {
    const control = new QueueClient(stack.azurite.connectionString(), 'durabletesthub-control-00');
    const workItems = new QueueClient(stack.azurite.connectionString(), 'durabletesthub-workitems');
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64');
    const event = { EventType: 10, EventId: -1, IsPlayed: false, Timestamp: new Date().toISOString(), Name: 'x' };
    const controlTexts = [
      null,
      42,
      [],
      {},
      { id: 'm1', instanceId: 7, sentAt: 'now', event },
      { id: 'm2', instanceId: 'i', sentAt: 'now', event: { EventType: 1 } },
      { id: 'm3', instanceId: 'i', sentAt: 'now', events: [event, 'x'], executionId: 'e' },
    ];
    const workTexts = [{}, { items: [] }, { items: [{ instanceId: 'i', executionId: 'e', name: 'Hello', taskId: 'zero' }] }];
    for (const v of controlTexts) await control.sendMessage(b64(v));
    for (const v of workTexts) await workItems.sendMessage(b64(v));
    await start('Chain', 'after-wrong-shape', ['shaped']);
    expect(await waitForStatus(stack.baseUrl, 'after-wrong-shape')).toMatchObject({ runtimeStatus: 'Completed', output: ['Hello shaped'] });
    const dropped = () =>
      stack.logs.lines.filter((l) => l.msg === 'durable queue message unreadable: deleted' && /^not a (control|work item) message/.test(String(l.reason)));
    for (let i = 0; i < 100 && dropped().length < controlTexts.length + workTexts.length; i++) await new Promise((r) => setTimeout(r, 100));
    expect(dropped().filter((l) => l.queue === 'durabletesthub-control-00')).toHaveLength(controlTexts.length);
    expect(dropped().filter((l) => l.queue === 'durabletesthub-workitems')).toHaveLength(workTexts.length);
    expect((await control.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => m.messageText)).not.toContain(b64({}));
  });

  test('a control message no one can read (not JSON, a large message whose blob is gone, a blob that is not gzip) is deleted and logged; the instances behind it run', async () => {
    const control = new QueueClient(stack.azurite.connectionString(), 'durabletesthub-control-00');
    const blobs = BlobServiceClient.fromConnectionString(stack.azurite.connectionString()).getContainerClient('durabletesthub-largemessages');
    await blobs.getBlockBlobClient('x/message-not-gzip.json.gz').uploadData(Buffer.from('plain text'));
    const b64 = (text: string) => Buffer.from(text).toString('base64');
    for (const text of [
      '{not json',
      JSON.stringify({ largeMessageBlob: 'gone/message-1.json.gz' }),
      JSON.stringify({ largeMessageBlob: 'x/message-not-gzip.json.gz' }),
    ]) {
      await control.sendMessage(b64(text));
    }
    await start('Chain', 'after-unreadable', ['still']);
    expect(await waitForStatus(stack.baseUrl, 'after-unreadable')).toMatchObject({ runtimeStatus: 'Completed', output: ['Hello still'] });
    const dropped = () =>
      stack.logs.lines.filter((l) => l.msg === 'durable queue message unreadable: deleted' && !/^not a (control|work item) message/.test(String(l.reason)));
    for (let i = 0; i < 50 && dropped().length < 3; i++) await new Promise((r) => setTimeout(r, 100));
    const reasons = dropped().map((l) => String(l.reason));
    expect(reasons).toHaveLength(3);
    expect(reasons).toEqual(
      expect.arrayContaining([expect.stringMatching(/JSON/), 'its large-message blob is gone', expect.stringMatching(/incorrect header check/)]),
    );
    expect((await control.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => m.messageText)).not.toContain(b64('{not json'));
  });

  test("a custom status over 16 KB of UTF-16 text fails the orchestration with the extension's message; 8,703 characters pass", async () => {
    await start('SizedStatus', 'status-fits', 8703);
    await start('SizedStatus', 'status-over', 8704);
    expect(await waitForStatus(stack.baseUrl, 'status-fits')).toMatchObject({ runtimeStatus: 'Completed', customStatus: 's'.repeat(8701) });
    const over = await waitForStatus(stack.baseUrl, 'status-over');
    expect({ status: over.runtimeStatus, output: over.output }).toEqual({
      status: 'Failed',
      output:
        "Orchestrator function 'SizedStatus' failed: The UTF-16 size of the JSON-serialized payload must not exceed 16 KB. The current payload size is 17 KB.",
    });
  });

  test('an episode too large for Table Storage fails its own instance with the reason; the others complete', async () => {
    await start('HugeInput', 'huge-1');
    await start('Chain', 'beside-huge', ['x']);
    const huge = await waitForStatus(stack.baseUrl, 'huge-1');
    expect(huge.runtimeStatus).toBe('Failed');
    expect(String(huge.output)).toMatch(/could not store the state of orchestration 'HugeInput' \(instance 'huge-1'\): .*(1 MiB|characters)/);
    expect(await waitForStatus(stack.baseUrl, 'beside-huge')).toMatchObject({ runtimeStatus: 'Completed', output: ['Hello x'] });
    // Its messages were consumed: no episode of it runs again.
    const episodes = () => stack.logs.lines.filter((l) => l.msg.startsWith('durable episode') && l.instanceId === 'huge-1').length;
    const before = episodes();
    await new Promise((r) => setTimeout(r, 1500));
    expect(episodes()).toBe(before);
  });
});
