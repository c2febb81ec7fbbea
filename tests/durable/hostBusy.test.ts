/**
 * The engine stays out of the way of the host's listeners (local/durable/hostLoad.ts), and a start is one write.
 * Counts and order of events only, no timings (the sleeps in the fixture's activity only make invocations overlap):
 *  - with 3 HTTP requests in flight, an engine limited to 8 gives up 2 slots per request and runs its floor of 2
 *    activities and episodes at once, and the work still completes beside them (fails on the old engine: all 8
 *    activities ran at once);
 *  - once the listeners are quiet the full limits apply again;
 *  - an HTTP request is answered while a long run of episodes is still pending;
 *  - a start inserts the instance row without reading it first (a recording proxy in front of the host's table
 *    endpoint; fails on the old engine, which read the row first), and a finished instance can be started again.
 */
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startFaultProxy, withTableEndpoint, type FaultProxy } from '../../local/testing/faultProxy';
import { hostBusyFixture } from '../fixtures/durable-app/src/hostBusy';
import { waitFor } from '../host/harness';
import { durableUrl, http, startDurableStack, startOrchestration, waitForStatus, type DurableStack } from './helpers/harness';

const fixture = hostBusyFixture();
const overlap = (group: string) => fixture.overlap.get(group) ?? { running: 0, peak: 0, done: 0 };

describe('the engine yields to the host listeners', () => {
  let stack: DurableStack;

  beforeAll(async () => {
    stack = await startDurableStack({ maxConcurrentActivityFunctions: 8, maxConcurrentOrchestratorFunctions: 8, maxConcurrentWhileHostBusy: 2 });
  }, 60_000);
  afterAll(async () => {
    for (const release of fixture.held.values()) release();
    await stack?.stop();
  });

  /** Starts GET /api/hold/{key} and resolves once its function runs (the request is in flight until released). */
  async function hold(key: string): Promise<{ answer: Promise<Response>; release: () => void }> {
    const answer = fetch(`${stack.baseUrl}/api/hold/${key}`);
    const release = await waitFor(`the held request ${key}`, () => fixture.held.get(key));
    return { answer, release };
  }

  test('with 3 requests in flight the engine runs its floor of 2 activities and 2 episodes at once, and the work completes beside them', async () => {
    const held = await Promise.all(['busy-a', 'busy-b', 'busy-c'].map(hold));
    expect(stack.host.context.ingress.inFlight()).toBeGreaterThanOrEqual(3);
    const starts = await Promise.all(
      Array.from({ length: 4 }, (_, i) => startOrchestration(stack.baseUrl, 'FanOutOverlapping', { group: 'busy', n: 2, ms: 200 }, `busy-${i}`)),
    );
    for (const { id } of starts) expect((await waitForStatus(stack.baseUrl, id, undefined, 60_000)).runtimeStatus).toBe('Completed');
    // All of it ran while the held requests were still unanswered.
    expect(['busy-a', 'busy-b', 'busy-c'].every((k) => fixture.held.has(k))).toBe(true);
    expect(overlap('busy').done).toBe(8);
    expect(overlap('busy').peak).toBeGreaterThanOrEqual(1);
    expect(overlap('busy').peak).toBeLessThanOrEqual(2);
    const stats = stack.durable.stats()!;
    expect(stats.peakActivitiesAtFloor).toBeLessThanOrEqual(2);
    expect(stats.peakEpisodesAtFloor).toBeGreaterThanOrEqual(1);
    expect(stats.peakEpisodesAtFloor).toBeLessThanOrEqual(2);
    for (const h of held) h.release();
    for (const h of held) expect((await h.answer).status).toBe(200);
  }, 90_000);

  test('once the listeners are quiet, activities run at the full limit again', async () => {
    const { id } = await startOrchestration(stack.baseUrl, 'FanOutOverlapping', { group: 'quiet', n: 12, ms: 1500 }, 'quiet-1');
    // Wait without HTTP requests (they would make the host busy again).
    await waitFor('12 quiet activities', () => overlap('quiet').done === 12, 60_000);
    expect(overlap('quiet').peak).toBeGreaterThan(2);
    expect((await waitForStatus(stack.baseUrl, id)).runtimeStatus).toBe('Completed');
  }, 90_000);

  test('an HTTP request is answered while a long run of episodes is still pending', async () => {
    const instances = 20;
    const steps = 8; // one episode to start and one per activity answer: 9 episodes per instance
    const episodesBefore = stack.durable.stats()!.episodes;
    await Promise.all(Array.from({ length: instances }, (_, i) => startOrchestration(stack.baseUrl, 'SequenceNoop', steps, `pending-${i}`)));
    const ping = await fetch(`${stack.baseUrl}/api/ping`);
    const episodesAtAnswer = stack.durable.stats()!.episodes - episodesBefore;
    expect(ping.status).toBe(200);
    expect(await ping.text()).toBe('pong');
    expect(episodesAtAnswer).toBeLessThan(instances * (steps + 1));
    for (let i = 0; i < instances; i++) expect((await waitForStatus(stack.baseUrl, `pending-${i}`, undefined, 120_000)).output).toBe(steps);
    expect(stack.durable.stats()!.episodes - episodesBefore).toBeGreaterThanOrEqual(instances * (steps + 1));
  }, 180_000);
});

describe('a start is one insert', () => {
  let azurite: AzuriteHandle;
  let proxy: FaultProxy;
  let stack: DurableStack;
  /** Requests to the Instances table since `from` (index into the proxy's log). */
  const instanceCalls = (from: number) =>
    proxy
      .requests()
      .slice(from)
      .filter((r) => /\/DurableTestHubInstances\b/.test(r));

  beforeAll(async () => {
    azurite = await startAzurite();
    proxy = await startFaultProxy(`http://127.0.0.1:${azurite.ports.table}`);
    stack = await startDurableStack({}, azurite, withTableEndpoint(azurite.connectionString(), `${proxy.url}/devstoreaccount1`));
  }, 60_000);
  afterAll(async () => {
    await stack?.stop();
    await proxy?.close();
    await azurite?.stop();
  });

  test('a new instance: its row is inserted without a read first; a finished one is read, then replaced', async () => {
    const from = proxy.requests().length;
    await startOrchestration(stack.baseUrl, 'Chain', ['Oslo'], 'calls-1');
    const first = instanceCalls(from);
    expect(first[0]).toMatch(/^POST \/devstoreaccount1\/DurableTestHubInstances(\?|$)/);
    expect(first.filter((r) => r.startsWith('GET '))).toEqual([]);
    const done = await waitForStatus(stack.baseUrl, 'calls-1');
    expect(done.output).toEqual(['Hello Oslo']);

    // The same id again once it finished: the insert meets the row (409), which is read and, being finished, replaced.
    const again = proxy.requests().length;
    await startOrchestration(stack.baseUrl, 'Chain', ['Rome'], 'calls-1');
    const second = instanceCalls(again);
    expect(second[0]).toMatch(/^POST /);
    expect(second[1]).toMatch(/^GET \/devstoreaccount1\/DurableTestHubInstances\(PartitionKey='calls-1',RowKey=''\)/);
    expect(second[2]).toMatch(/^PUT \/devstoreaccount1\/DurableTestHubInstances\(PartitionKey='calls-1',RowKey=''\)/);
    expect((await waitForStatus(stack.baseUrl, 'calls-1')).output).toEqual(['Hello Rome']);
  }, 90_000);

  test('a start of a running instance: the insert meets the row, the read finds it running, 409 and nothing written', async () => {
    const { id } = await startOrchestration(stack.baseUrl, 'Approval', 60_000, 'calls-2');
    await waitForStatus(stack.baseUrl, id, ['Running']);
    const from = proxy.requests().length;
    const res = await http('POST', durableUrl(stack.baseUrl, 'orchestrators/Approval/calls-2'), 60_000);
    expect(res.status).toBe(409);
    expect((res.body as { Message: string }).Message).toMatch(/already exists and is Running/);
    const calls = instanceCalls(from);
    expect(calls).toHaveLength(2);
    expect(calls[0]).toMatch(/^POST /);
    expect(calls[1]).toMatch(/^GET /);
    await http('POST', durableUrl(stack.baseUrl, 'instances/calls-2/terminate?reason=done'));
  }, 60_000);
});
