/**
 * Intake when things go wrong, on the local stack with the function app's table endpoint behind a fault
 * proxy (local/testing/faultProxy.ts): transient storage failures, a permanently failing queue message,
 * invalid queue messages (with and without an id) and an invalid HTTP submission.
 * The Durable engine and the queues talk to Azurite directly; only the app's Jobs/JobEvents traffic is faulted.
 * Needs the compiled app (dist/).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { startFaultProxy, withTableEndpoint, type FaultProxy } from '../../local/testing/faultProxy';
import { durableInstances, enqueue, eventually, fastSpec, jobRows, postJob, postJobRetrying, submissionsQueue, waitAllTerminal, POISON_QUEUE } from './support';

let stack: Stack;
let proxy: FaultProxy;
const hostLog = path.join(REPO_ROOT, 'test-artifacts', 'intake-faults-host.log');

beforeAll(async () => {
  mkdirSync(path.dirname(hostLog), { recursive: true });
  writeFileSync(hostLog, ''); // the host appends: start from an empty log, as the assertions count lines
  stack = await startStack({
    port: 0,
    logDestination: hostLog,
    demoImage: false,
    // The fault proxy forwards plain http, which a bearer token never crosses: this test opts in to shared keys.
    sharedKeys: true,
    appStorage: async (azurite) => {
      proxy = await startFaultProxy(`http://${azurite.ports.host}:${azurite.ports.table}`);
      return withTableEndpoint(azurite.connectionString(), `${proxy.url}/${azurite.accounts[0]?.name ?? 'devstoreaccount1'}`);
    },
  });
  await submissionsQueue(stack).createIfNotExists();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await proxy?.close();
}, 60_000);

/** The Jobs table insert (createEntity is a POST to the table; point reads and updates use other verbs). */
const JOBS_INSERT = /^POST \/[^/]+\/Jobs(\?|$)/;

async function instancesOf(id: string): Promise<string[]> {
  return (await durableInstances(stack)).filter((i) => i.instanceId === id).map((i) => i.runtimeStatus);
}

/** Host log lines (JSON) whose message matches. */
function logLines(re: RegExp): string[] {
  return readFileSync(hostLog, 'utf8')
    .split('\n')
    .filter((l) => re.test(l));
}

async function getJob(
  id: string,
): Promise<{ status: number; body: { state?: string; error?: { code: string; message: string; details?: { path: string }[] } } }> {
  const res = await fetch(`${stack.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': stack.host.keys.functionKey } });
  return { status: res.status, body: (await res.json()) as never };
}

describe('intake with storage briefly unavailable', () => {
  it('HTTP: the storage client retries a few 503s itself; longer outages answer 503 + Retry-After, and the retry is accepted once', async () => {
    // Two refusals: absorbed by the Tables SDK's own retry policy, the client never notices.
    proxy.fail({ mode: 'status', status: 503, count: 2, match: JOBS_INSERT });
    const quick = await postJob(stack, fastSpec('fault-h-1'));
    expect(quick.status).toBe(202);

    // Six refusals: the SDK gives up after its 4 tries, the API answers 503 with Retry-After, the
    // client's retry meets two more refusals that the SDK absorbs, and the job is accepted.
    const before = proxy.stats().failed;
    proxy.fail({ mode: 'status', status: 503, count: 6, match: JOBS_INSERT });
    const slow = await postJobRetrying(stack, fastSpec('fault-h-2'));
    expect(slow.statuses).toEqual([503, 202]);
    expect(proxy.stats().failed - before).toBe(6);

    // The insert reached storage but its answer was lost: the SDK's retry meets the row it wrote (409),
    // which intake reads as a repeat of the same job and still starts the orchestration (200, not 202).
    proxy.fail({ mode: 'lostResponse', count: 1, match: JOBS_INSERT });
    const lost = await postJobRetrying(stack, fastSpec('fault-h-3'));
    expect(lost.statuses).toEqual([200]);
    expect(lost.body.job?.id).toBe('fault-h-3');
    proxy.heal();

    const rows = await waitAllTerminal(stack, 'fault-h-', 3, 60_000);
    expect(rows.map((r) => `${r.id}=${r.state}`).sort()).toEqual(['fault-h-1=Failed', 'fault-h-2=Failed', 'fault-h-3=Failed']);
    for (const id of ['fault-h-1', 'fault-h-2', 'fault-h-3']) expect(await instancesOf(id)).toHaveLength(1);
  }, 90_000);

  it('queue: the function throws while storage is down, the host redelivers, and the job is accepted exactly once', async () => {
    // 8 refusals = two whole deliveries (4 SDK tries each); the third delivery succeeds.
    const before = proxy.stats().failed;
    proxy.fail({ mode: 'status', status: 503, count: 8, match: JOBS_INSERT });
    const queue = submissionsQueue(stack);
    await enqueue(queue, fastSpec('fault-q-1'));
    await enqueue(queue, fastSpec('fault-q-1')); // and a duplicate delivery on top
    const rows = await waitAllTerminal(stack, 'fault-q-', 1, 80_000);
    proxy.heal();
    expect(proxy.stats().failed - before).toBe(8);
    expect(rows.map((r) => `${r.id}=${r.state}`)).toEqual(['fault-q-1=Failed']);
    expect(await instancesOf('fault-q-1')).toHaveLength(1);
    await eventually('the queue to drain', 20_000, async () => ((await queue.getProperties()).approximateMessagesCount === 0 ? true : undefined));
  }, 120_000);
});

describe('a queue message that can never be processed', () => {
  it('moves to the poison queue with its body intact after maxDequeueCount (5) attempts', async () => {
    // Storage refuses every table request (a permission problem: 403 is not retried by the SDK, so each
    // delivery fails at once) while this message is being processed.
    const spec = fastSpec('fault-poison-1');
    const text = JSON.stringify(spec);
    const poison = submissionsQueue(stack, POISON_QUEUE);
    proxy.fail({ mode: 'status', status: 403, forMs: 120_000 });
    await enqueue(submissionsQueue(stack), text);
    const poisoned = await eventually('the message in the poison queue', 75_000, async () => {
      if (!(await poison.exists())) return undefined;
      const peeked = (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems;
      return peeked.find((m) => Buffer.from(m.messageText, 'base64').toString('utf8').includes('fault-poison-1'));
    });
    proxy.heal();
    expect(Buffer.from(poisoned.messageText, 'base64').toString('utf8')).toBe(text);
    // Five deliveries, each failing on the Jobs table.
    expect(logLines(/Message has reached MaxDequeueCount of 5/).length).toBeGreaterThanOrEqual(1);

    // With every table request refused there is no row to mark Failed (the insert never happened), and
    // nothing marks it later: the poison message is the record. Once storage is back, resubmitting the
    // poisoned body unchanged is accepted as a new job.
    expect((await getJob('fault-poison-1')).status).toBe(404);
    expect(await instancesOf('fault-poison-1')).toEqual([]);
    await enqueue(submissionsQueue(stack), Buffer.from(poisoned.messageText, 'base64').toString('utf8'));
    const rows = await waitAllTerminal(stack, 'fault-poison-', 1, 60_000);
    expect(rows.map((r) => r.id)).toEqual(['fault-poison-1']);
  }, 180_000);

  it('marks the job Failed with the reason on the last attempt when its row could be written', async () => {
    // A job that depends on another: intake writes its row, then the dependents index (JobDependents), then starts
    // it. Only the JobDependents writes are refused, so the row is inserted on the first delivery and every delivery
    // fails before the start: the orchestration is never started. On the 5th delivery intake moves the row to Failed.
    // (Intake writes no event with the row: a fault on JobEvents no longer stops a delivery before its start.)
    const queue = submissionsQueue(stack);
    await enqueue(queue, fastSpec('fault-parent-2'));
    await eventually('the parent job row', 30_000, async () => ((await getJob('fault-parent-2')).status === 200 ? true : undefined));
    const spec = { ...fastSpec('fault-poison-2'), dependsOn: [{ job: 'fault-parent-2' }] };
    const text = JSON.stringify(spec);
    proxy.fail({ mode: 'status', status: 403, forMs: 120_000, match: /^(POST|PUT|PATCH|MERGE|DELETE) \/[^/]+\/JobDependents/ });
    try {
      await enqueue(queue, text);
      const poison = submissionsQueue(stack, POISON_QUEUE);
      const poisoned = await eventually('the message in the poison queue', 75_000, async () => {
        const peeked = (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems;
        return peeked.find((m) => Buffer.from(m.messageText, 'base64').toString('utf8').includes('fault-poison-2'));
      });
      expect(Buffer.from(poisoned.messageText, 'base64').toString('utf8')).toBe(text);
    } finally {
      proxy.heal();
    }
    const job = await getJob('fault-poison-2');
    expect(job.body.state).toBe('Failed');
    expect(job.body.error?.code).toBe('IntakeFailed');
    expect(job.body.error?.message).toMatch(/403|fault proxy/);
    expect(await instancesOf('fault-poison-2')).toEqual([]);
  }, 150_000);
});

describe('invalid submissions', () => {
  it('queue: an invalid message with an id is rejected once, recorded as a Failed job with the errors, and removed', async () => {
    const queue = submissionsQueue(stack);
    await enqueue(queue, { id: 'fault-invalid-1', name: 'bad', pool: { nodes: 0 } });
    const job = await eventually('the rejected job row', 30_000, async () => {
      const j = await getJob('fault-invalid-1');
      return j.status === 200 && j.body.state === 'Failed' ? j.body : undefined;
    });
    expect(job.error?.code).toBe('InvalidSpec');
    const paths = (job.error?.details ?? []).map((d) => d.path).sort();
    expect(paths).toEqual(expect.arrayContaining(['mpi', 'pool.nodes']));
    expect(job.error?.message).toMatch(/pool\.nodes/);
    await eventually('the queue to drain', 20_000, async () => ((await queue.getProperties()).approximateMessagesCount === 0 ? true : undefined));
    // Handled on its first delivery and never again: one rejection logged for this message id (the log
    // file is written asynchronously, so wait for the line), and it was not a redelivery.
    // (Matched by its errors, not its message id: a JSON message's own `id` property shadows the queue
    // message id in triggerMetadata, so the app logs the job id there.)
    const rejected = await eventually('the rejection in the log', 20_000, async () => {
      const found = logLines(/rejected queue message \S+: invalid job spec \(recorded\): pool\.nodes: must be at least 1/);
      return found.length > 0 ? found : undefined;
    });
    expect(rejected).toHaveLength(1);
    expect(await instancesOf('fault-invalid-1')).toEqual([]);
  }, 60_000);

  it('queue: an invalid message without an id is logged and removed, and writes nothing', async () => {
    const queue = submissionsQueue(stack);
    const rowsBefore = (await jobRows(stack, '')).length;
    const sent = await queue.sendMessage(Buffer.from(JSON.stringify({ name: 'no-id', pool: {} })).toString('base64'));
    await eventually('the rejection in the log', 30_000, async () =>
      logLines(new RegExp(`rejected queue message ${sent.messageId}`)).length > 0 ? true : undefined,
    );
    expect(logLines(new RegExp(`rejected queue message ${sent.messageId}: invalid job spec \\(no id\\)`))).toHaveLength(1);
    await eventually('the queue to drain', 20_000, async () => ((await queue.getProperties()).approximateMessagesCount === 0 ? true : undefined));
    expect((await jobRows(stack, '')).length).toBe(rowsBefore);
  }, 60_000);

  it('HTTP: an invalid spec answers 400 with the field paths and writes nothing', async () => {
    const rowsBefore = (await jobRows(stack, '')).length;
    const res = await postJob(stack, {
      id: 'fault-invalid-h',
      name: 'bad',
      pool: { nodes: 0, vmSize: 'Standard_HB120rs_v3' },
      mpi: { runtime: 'openmpi', command: '' },
    });
    expect(res.status).toBe(400);
    expect((res.body.errors ?? []).map((e) => e.path).sort()).toEqual(['mpi.command', 'pool.nodes']);
    expect((await jobRows(stack, '')).length).toBe(rowsBefore);
    expect((await getJob('fault-invalid-h')).status).toBe(404);
  }, 30_000);
});
