/**
 * A fuzz campaign against the real local stack: 10,000 generated job specs through POST /api/jobs and 2,000 queue
 * messages through the job-submissions queue (fast-check, seeded; the seed is printed and FUZZ_SEED replays it).
 * The documents are valid specs with one field made hostile (wrong types, control and bidi characters, prototype
 * keys, deep nesting, huge values), random JSON values and random text, as JSON or YAML. Afterwards: no answer was a
 * 5xx, the host still answers, no queue message went to the poison queue (a message whose handling threw five
 * times), every message was consumed, and the sweep runs every rule over whatever rows the campaign left.
 *
 * Valid documents would start real pipelines; so that the campaign stays a test of the door and not a load test, a
 * valid spec is sent with an input in storage jobs may not name (refused after full validation, 400), except one in
 * fifty, which runs on a pool that does not exist (accepted, ends Failed at its first Batch call).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { runSweep } from '../../shared/ops/sweep';
import { sweepDeps } from '../ops/helpers';
import { enqueue, submissionsQueue, POISON_QUEUE } from '../intake/support';
import { validSpecInput } from '../helpers/specArbitraries';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2_147_483_647);
const HTTP_CASES = 10_000;
const QUEUE_CASES = 2_000;
let stack: Stack;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  stack = await startStack({ port: 0, demoImage: false, logDestination: path.join(LOGS, 'security-fuzz-host.log'), logLevel: 'warn', env: { SWEEP_SCHEDULE: '0 0 0 1 1 *' } });
  await submissionsQueue(stack).createIfNotExists();
  console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED})`);
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

type Obj = Record<string, unknown>;

const nested = (depth: number): unknown => (depth === 0 ? 'x' : depth % 2 ? [nested(depth - 1)] : { a: nested(depth - 1) });
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('\u2028', '\u2029', '\u0085', '\u202e', '\u2066', '\u0000', 'a\nb', '$(id)', '`id`', '../../etc/passwd', '__proto__', '', ' ', '-rf',
    'users/', 'users/queue/', 'users/queue/../operator/', 'users/operator', 'users//queue/', '/users/queue/x'),
  fc.integer(), fc.double(), fc.constantFrom(Number.MAX_SAFE_INTEGER, -0, 1e308), fc.boolean(), fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 1, max: 40 }).map(nested),
  fc.integer({ min: 1_000, max: 150_000 }).map((n) => 'y'.repeat(n)),
  fc.constant(JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}') as unknown),
);
const FIELD_PATHS = [
  ['id'], ['name'], ['tags'], ['tags', 'k'], ['pool'], ['pool', 'nodes'], ['pool', 'vmSize'], ['pool', 'poolId'], ['pool', 'image'], ['pool', 'startTask'],
  ['pool', 'startTask', 'command'], ['container'], ['container', 'runtime'], ['container', 'images'], ['container', 'registry'], ['data'], ['data', 'inputs'],
  ['data', 'inputs', '0'], ['data', 'destination'], ['data', 'stagingAccounts'], ['mpi'], ['mpi', 'command'], ['mpi', 'env'], ['mpi', 'options'],
  ['mpi', 'processesPerNode'], ['limits'], ['limits', 'maxWallClock'], ['cleanup'], ['__proto__'], ['constructor'], ['prototype'], ['extra'],
  // The data-area rule's inputs (issue 23): paths in and around users/<ownerKey>/.
  ['data', 'inputs', '0', 'prefix'], ['outputs'], ['outputs', 'prefix'], ['files'], ['files', '0'], ['files', '0', 'prefix'], ['files', '0', 'blob'],
];

function setPath(spec: Obj, keys: string[], value: unknown): Obj {
  const out = JSON.parse(JSON.stringify(spec)) as Obj;
  let cur = out;
  for (const k of keys.slice(0, -1)) {
    if (typeof cur[k] !== 'object' || cur[k] === null) Object.defineProperty(cur, k, { value: {}, enumerable: true, writable: true, configurable: true });
    cur = cur[k] as Obj;
  }
  // defineProperty, so "__proto__" becomes an own key, as it is when a client's JSON says so.
  Object.defineProperty(cur, keys[keys.length - 1], { value, enumerable: true, writable: true, configurable: true });
  return out;
}

/** A spec accepted by the schema, made cheap: refused by the data-access rule, or (rarely) run on no pool. */
const cheapValid = fc.tuple(validSpecInput, fc.integer({ min: 0, max: 49 })).map(([spec, dice]): Obj => {
  if (dice === 0) {
    const id = typeof spec.id === 'string' ? spec.id : undefined;
    return { ...spec, ...(id ? { id: `fz-${id}`.slice(0, 64) } : {}), pool: { poolId: 'fuzz-no-such-pool', nodes: 1 }, container: { runtime: 'none' }, data: { inputs: [] }, cleanup: undefined };
  }
  return { ...spec, data: { ...(spec.data as Obj | undefined), inputs: [{ account: 'devstoreaccount1', container: 'azure-webjobs-hosts' }] } };
});

const documentArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(cheapValid, fc.constantFrom(...FIELD_PATHS), hostileValue).map(([spec, keys, v]) => setPath(spec, keys, v)) },
  { weight: 2, arbitrary: cheapValid },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 300 }) },
);

interface Case {
  body: string;
  contentType: string;
}

const caseArb: fc.Arbitrary<Case> = fc.tuple(documentArb, fc.constantFrom('application/json', 'application/yaml', 'text/plain')).map(([doc, contentType]) => {
  if (typeof doc === 'string') return { body: doc, contentType };
  let body: string;
  try {
    body = contentType === 'application/json' ? JSON.stringify(doc) ?? 'null' : stringify(doc);
  } catch {
    body = JSON.stringify(doc) ?? 'null';
  }
  return { body, contentType };
});

async function inPool<T>(items: T[], width: number, each: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < items.length) {
      const i = next++;
      await each(items[i], i);
    }
  }));
}

it(`${HTTP_CASES} generated documents through POST /api/jobs: no 5xx, the host keeps answering`, async () => {
  const cases = fc.sample(caseArb, { numRuns: HTTP_CASES, seed: SEED });
  const statuses = new Map<number, number>();
  const serverErrors: { status: number; body: string; sent: string }[] = [];
  await inPool(cases, 8, async (c) => {
    const res = await fetch(`${stack.baseUrl}/api/jobs`, {
      method: 'POST',
      headers: { 'content-type': c.contentType, 'x-functions-key': stack.host.keys.functionKey },
      body: c.body,
    });
    const text = await res.text();
    statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    if (res.status >= 500) serverErrors.push({ status: res.status, body: text.slice(0, 300), sent: c.body.slice(0, 300) });
  });
  console.log(`fuzz HTTP answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
  expect(serverErrors).toEqual([]);
  expect([...statuses.keys()].every((s) => [200, 202, 400, 403, 409, 413].includes(s))).toBe(true);
  expect((await fetch(`${stack.baseUrl}/api/health`)).status).toBe(200);
}, 600_000);

it(`${QUEUE_CASES} generated queue messages: each consumed, none poisoned, and the sweep stays healthy`, async () => {
  const queue = submissionsQueue(stack);
  // Every fourth message claims an id, so rejected submissions leave rows for the sweep to read.
  const docs = fc.sample(fc.tuple(documentArb, fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 1_000_000 })), { numRuns: QUEUE_CASES, seed: SEED + 1 })
    .map(([doc, dice, n]) => (dice === 0 && doc && typeof doc === 'object' && !Array.isArray(doc) ? { ...(doc as Obj), id: `fq-${n}` } : doc));
  // A queue message is at most 64 KiB, base64-encoded: larger documents cannot be sent at all.
  const texts = docs.map((doc) => (typeof doc === 'string' ? doc : JSON.stringify(doc) ?? 'null')).filter((t) => Buffer.byteLength(t) <= 48_000);
  expect(texts.length).toBeGreaterThan(QUEUE_CASES * 0.9);
  await inPool(texts, 8, async (text) => {
    await enqueue(queue, text);
  });
  const deadline = Date.now() + 300_000;
  for (;;) {
    const left = (await queue.getProperties()).approximateMessagesCount ?? 0;
    if (left === 0) break;
    if (Date.now() > deadline) throw new Error(`${left} fuzz messages still queued after 5 minutes`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  const poison = submissionsQueue(stack, POISON_QUEUE);
  const poisoned = (await poison.exists()) ? (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => Buffer.from(m.messageText, 'base64').toString('utf8').slice(0, 200)) : [];
  expect(poisoned).toEqual([]);
  expect((await fetch(`${stack.baseUrl}/api/health`)).status).toBe(200);

  const report = await runSweep(sweepDeps(stack, { stallLimitMs: 30 * 60_000, graceMs: 10 * 60_000, stagingRetentionMs: 24 * 3_600_000 }));
  expect(report.ran).toBe(true);
  expect(report.skipped).toEqual([]);
  expect(report.actions.filter((a) => !a.ok)).toEqual([]);
  expect(report.observed.jobs).toBeGreaterThan(100);
}, 600_000);
