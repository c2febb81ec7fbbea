/**
 * The event relay against a real Azurite and the stack's real webhook receiver (no Functions host): the outbox
 * guarantees with the crash windows made deterministic.
 *  - A process that dies between the job row write and the event write, then the next transition by another writer:
 *    the lost event is still on the timeline and delivered (fails on the old store, which overwrote the row's
 *    lastEvent and lost that seq: the relay then records it "missing").
 *  - Transitions nobody announced (a host killed before the announcement) are found by the relay and delivered in order.
 *  - A failing receiver: each try is recorded, later events wait for the earlier one, retries follow the schedule,
 *    and after the last try the event is given up (recorded) and the next one goes.
 *  - Two senders at once deliver each event once (the cursor's lease).
 *  - The relay's memory: a pass does not read again the jobs an earlier pass found delivered, unless they changed
 *    (fails without it: every job of the look-back window was read at every pass).
 *  - A job with only its creation is left to its first transition while younger than the grace, then delivered.
 */
import { TableClient } from '@azure/data-tables';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startWebhookReceiver, type WebhookReceiver } from '../../local/webhooks';
import { deliverJob, relayOnce, RelayMemory, type DeliveryDeps } from '../../shared/adapters/events/delivery';
import { DeliveryStore } from '../../shared/adapters/events/deliveryStore';
import { webhookEndpoint } from '../../shared/adapters/events/webhookSender';
import { JobStore, type JobState } from '../../shared/adapters/state';
import { parseJobSpec, specHash } from '../../shared/core/spec';

let azurite: AzuriteHandle;
let receiver: WebhookReceiver;
let n = 0;

beforeAll(async () => {
  azurite = await startAzurite();
  receiver = await startWebhookReceiver();
}, 60_000);
afterAll(async () => {
  await receiver?.stop();
  await azurite?.stop();
});

const spec = (() => {
  const r = parseJobSpec({ name: 'events', pool: { vmSize: 'Standard_D2s_v5', nodes: 1 }, mpi: { runtime: 'openmpi', command: 'true' } });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
})();

/** Fresh tables per test; `failEventWrite(seq)` makes the write of that transition's event fail once (the process "dies" there). */
async function setup(policy = { maxAttempts: 5, initialMs: 50, maxMs: 200 }) {
  n += 1;
  const cs = azurite.connectionString();
  const suffix = `${process.pid}x${n}`;
  const jobsTable = TableClient.fromConnectionString(cs, `Jobs${suffix}`, { allowInsecureConnection: true });
  const eventsTable = TableClient.fromConnectionString(cs, `JobEvents${suffix}`, { allowInsecureConnection: true });
  let failSeq: number | undefined;
  const flakyEvents = new Proxy(eventsTable, {
    get(target, prop, recv) {
      if (prop === 'upsertEntity' && failSeq !== undefined) {
        return async (entity: { seq?: unknown }, mode: 'Replace') => {
          if (entity.seq === failSeq) {
            failSeq = undefined;
            throw new Error('the process died before the event write');
          }
          return target.upsertEntity(entity as never, mode);
        };
      }
      const v = Reflect.get(target, prop, recv) as unknown;
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const store = new JobStore(jobsTable, flakyEvents);
  await store.ensureTables();
  const deliveries = new DeliveryStore(
    TableClient.fromConnectionString(cs, `EventCursors${suffix}`, { allowInsecureConnection: true }),
    TableClient.fromConnectionString(cs, `EventAttempts${suffix}`, { allowInsecureConnection: true }),
  );
  await deliveries.ensureTables();
  const deps: DeliveryDeps = {
    jobs: store,
    deliveries,
    policy,
    endpoints: [webhookEndpoint({ name: 'local', url: receiver.url, secret: receiver.secret, allowLoopback: true })],
    sourceBaseUrl: 'http://127.0.0.1:7071',
  };
  return {
    store,
    deliveries,
    deps,
    failEventWrite: (seq: number) => {
      failSeq = seq;
    },
  };
}

async function createJob(store: JobStore, id: string): Promise<void> {
  await store.createIfAbsent({ id, spec, specHash: specHash(spec), owner: 'tenant/user' });
}

const received = (jobId: string) => receiver.deliveries().filter((d) => d.id.startsWith(`${jobId}:`));
const firstSeqs = (jobId: string) => [...new Set(received(jobId).map((d) => Number(d.id.split(':')[1])))];

async function faults(failNext: number, status = 503): Promise<void> {
  await fetch(`${new URL(receiver.url).origin}/faults`, { method: 'POST', body: JSON.stringify({ failNext, status }) });
}

test('a process that died between the row write and the event write loses no event, even when another writer moves the job on', async () => {
  const { store, deliveries, deps, failEventWrite } = await setup();
  const id = 'crash-window';
  await createJob(store, id);
  await store.transition(id, 'Provisioning', 'pool requested');
  failEventWrite(3);
  await expect(store.transition(id, 'Running', 'task started')).rejects.toThrow(/died before the event write/);
  expect((await store.get(id))?.state).toBe('Running'); // the row was written: only its event is missing
  // Another writer (the sweep, a cancel) moves the job on before anyone repairs the timeline.
  await store.transition(id, 'CleaningUp', 'cancelled');
  await store.transition(id, 'Cancelled', 'cleanup done');

  const timeline = (await store.events(id)).filter((e) => e.kind === 'transition').map((e) => e.seq);
  expect(timeline).toEqual([1, 2, 3, 4, 5]);
  const report = await relayOnce(deps);
  expect(report.sent).toBe(5);
  expect(firstSeqs(id)).toEqual([1, 2, 3, 4, 5]);
  const attempts = await deliveries.attemptsOf(id);
  expect(attempts.map((a) => a.outcome)).toEqual(['delivered', 'delivered', 'delivered', 'delivered', 'delivered']);
  expect(received(id).map((d) => (d.event as { data: { state: JobState } }).data.state)).toEqual([
    'Submitted',
    'Provisioning',
    'Running',
    'CleaningUp',
    'Cancelled',
  ]);
  expect(received(id).every((d) => d.signatureValid && d.cloudEventValid && d.status === 204)).toBe(true);
  expect((received(id)[0].event as { source: string }).source).toBe(`http://127.0.0.1:7071/api/jobs/${id}`);
});

test('transitions nobody announced are found by the relay and delivered in order, once; the next pass sends nothing', async () => {
  const { store, deps } = await setup();
  const ids = ['quiet-a', 'quiet-b', 'quiet-c'];
  for (const id of ids) {
    await createJob(store, id);
    await store.transition(id, 'Provisioning', 'pool requested');
  }
  await store.transition('quiet-b', 'Failed', 'no pool').catch(() => undefined); // illegal from Provisioning: not recorded
  await store.transition('quiet-b', 'CleaningUp', 'failing');
  const first = await relayOnce(deps);
  expect(first.failed).toEqual([]);
  expect(first.sent).toBe(7);
  for (const id of ids) expect({ id, seqs: firstSeqs(id) }).toEqual({ id, seqs: id === 'quiet-b' ? [1, 2, 3] : [1, 2] });
  const second = await relayOnce(deps);
  expect(second.sent).toBe(0);
  expect(Date.parse(second.watermark)).toBeGreaterThanOrEqual(Date.parse(first.watermark));
  expect(ids.flatMap(received).length).toBe(7);
});

test('with its memory, a pass reads nothing of the jobs an earlier pass found delivered; a job that moved on is read and delivered', async () => {
  const { store, deps } = await setup();
  const ids = ['settled-a', 'settled-b', 'settled-c'];
  for (const id of ids) await createJob(store, id);
  // Every row read and cursor read the relay makes, by job (the real store and tables answer them).
  const reads: string[] = [];
  const counted: DeliveryDeps = {
    ...deps,
    jobs: { get: (id) => (reads.push(`row ${id}`), store.get(id)), events: (id) => store.events(id), changedSince: (since) => store.changedSince(since) },
    deliveries: new Proxy(deps.deliveries, {
      get(target, prop, recv) {
        const v = Reflect.get(target, prop, recv) as unknown;
        if (prop === 'cursor') return (jobId: string, endpoint: string) => (reads.push(`cursor ${jobId}`), target.cursor(jobId, endpoint));
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }),
  };
  const memory = new RelayMemory();
  const opts = { memory, creationGraceMs: 0 };
  const first = await relayOnce(counted, opts);
  expect(first.sent).toBe(3);
  expect(first.settled).toBe(0);
  // The second pass finds them delivered (one row and one cursor read each) and remembers them.
  reads.length = 0;
  const second = await relayOnce(counted, opts);
  expect(second.sent).toBe(0);
  expect(reads.filter((r) => ids.some((id) => r.endsWith(id))).sort()).toEqual(ids.flatMap((id) => [`cursor ${id}`, `row ${id}`]).sort());
  expect(memory.size).toBeGreaterThanOrEqual(3);
  // From then on they are not read, until one of them moves on.
  reads.length = 0;
  await store.transition('settled-b', 'Provisioning', 'pool requested');
  const third = await relayOnce(counted, opts);
  expect(third.settled).toBeGreaterThanOrEqual(2);
  expect(third.sent).toBe(1);
  expect(reads.filter((r) => ids.some((id) => r.endsWith(id))).every((r) => r.endsWith('settled-b'))).toBe(true);
  expect(firstSeqs('settled-b')).toEqual([1, 2]);
  for (const id of ['settled-a', 'settled-c']) expect(received(id)).toHaveLength(1);
});

test('a job with only its creation is left to its first transition while young; its first transition delivers both; one that stays is delivered after the grace', async () => {
  const { store, deps } = await setup();
  let clock = Date.now();
  const timed: DeliveryDeps = { ...deps, now: () => new Date(clock) };
  await createJob(store, 'young-moves');
  await createJob(store, 'young-stays');
  const first = await relayOnce(timed, { creationGraceMs: 60_000 });
  expect(first.young).toBe(2);
  expect(first.sent).toBe(0);
  expect(received('young-moves')).toEqual([]);
  // The first transition's sender (its announcement) delivers the creation with it.
  await store.transition('young-moves', 'Provisioning', 'pool requested');
  await deliverJob(timed, 'young-moves');
  expect(firstSeqs('young-moves')).toEqual([1, 2]);
  // Past the grace, the job still in Submitted is the relay's: the watermark did not move past it.
  clock += 61_000;
  const later = await relayOnce(timed, { creationGraceMs: 60_000 });
  expect(later.young).toBe(0);
  expect(firstSeqs('young-stays')).toEqual([1]);
  expect(firstSeqs('young-moves')).toEqual([1, 2]);
});

test('a failing receiver: every try recorded, later events wait for the earlier one, then it is delivered', async () => {
  const { store, deliveries, deps } = await setup({ maxAttempts: 5, initialMs: 1_000, maxMs: 60_000 });
  // A pinned clock decides when a retry is due (the receiver and the tables are real).
  let clock = Date.now();
  const timed: DeliveryDeps = { ...deps, now: () => new Date(clock) };
  const id = 'flaky-receiver';
  await createJob(store, id);
  await store.transition(id, 'Provisioning', 'pool requested');
  await faults(2);
  expect(await deliverJob(timed, id)).toMatchObject([{ state: 'waiting', sent: 0 }]); // first failure: retry in 1 s
  clock += 999;
  expect(await deliverJob(timed, id)).toMatchObject([{ state: 'waiting', sent: 0 }]); // not due: nothing sent
  expect(received(id)).toHaveLength(1);
  clock += 1;
  expect(await deliverJob(timed, id)).toMatchObject([{ state: 'waiting', sent: 0 }]); // second failure: retry in 2 s
  clock += 2_000;
  expect(await deliverJob(timed, id)).toMatchObject([{ state: 'delivered', sent: 2 }]);
  const attempts = await deliveries.attemptsOf(id);
  expect(attempts.map((a) => [a.seq, a.attempt, a.outcome, a.status])).toEqual([
    [1, 1, 'failed', 503],
    [1, 2, 'failed', 503],
    [1, 3, 'delivered', 204],
    [2, 1, 'delivered', 204],
  ]);
  expect(received(id).map((d) => d.id)).toEqual([`${id}:1`, `${id}:1`, `${id}:1`, `${id}:2`]);
  expect(firstSeqs(id)).toEqual([1, 2]);
});

test('after the last try an event is given up, on record, and the next one goes', async () => {
  const { store, deliveries, deps } = await setup({ maxAttempts: 2, initialMs: 1_000, maxMs: 1_000 });
  let clock = Date.now();
  const timed: DeliveryDeps = { ...deps, now: () => new Date(clock) };
  const id = 'given-up';
  await createJob(store, id);
  await store.transition(id, 'Provisioning', 'pool requested');
  await faults(2, 500);
  await deliverJob(timed, id);
  clock += 1_000;
  expect(await deliverJob(timed, id)).toMatchObject([{ state: 'delivered', sent: 1 }]);
  const attempts = await deliveries.attemptsOf(id);
  expect(attempts.map((a) => [a.seq, a.attempt, a.outcome])).toEqual([
    [1, 1, 'failed'],
    [1, 2, 'abandoned'],
    [2, 1, 'delivered'],
  ]);
  expect((await deliveries.cursor(id, 'webhook-local')).delivered).toBe(2);
});

test('two senders at once deliver each event once', async () => {
  const { store, deps } = await setup();
  const id = 'two-senders';
  await createJob(store, id);
  for (const s of ['Provisioning', 'PullingImages', 'StagingData', 'Running'] as const) await store.transition(id, s, s);
  const runs = await Promise.all([deliverJob(deps, id), deliverJob(deps, id), deliverJob(deps, id)]);
  expect(
    runs
      .flat()
      .map((r) => r.state)
      .sort(),
  ).toEqual(['busy', 'busy', 'delivered']);
  expect(received(id).map((d) => d.id)).toEqual([1, 2, 3, 4, 5].map((s) => `${id}:${s}`));
});
