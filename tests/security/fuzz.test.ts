/**
 * The doors' fuzz campaign against the real local stack: generated job specs through POST /api/jobs and queue messages
 * through the job-submissions queue (tests/helpers/fuzzCases.ts: fast-check, seeded; the seed is printed and FUZZ_SEED
 * replays it). Afterwards: no answer was a 5xx, the host still answers, no queue message went to the poison queue (a
 * message whose handling threw five times), every message was consumed, and the sweep runs every rule over whatever
 * rows the campaign left.
 *
 * The many-case campaign of the same documents runs in process (tests/security/fuzzIntake.test.ts: intake over
 * Azurite, no HTTP host); this one proves the doors themselves (the host's body handling, content types, status
 * mapping, the queue trigger and its poison handling) with a few hundred cases. It once sent 10,000 + 2,000 through
 * the stack with a Date.now seed (7-10 minutes of the suite's time); FUZZ_STACK_RUNS / FUZZ_STACK_QUEUE_RUNS (and
 * FUZZ_SEED) still run a soak of any size.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { runSweep } from '../../shared/adapters/ops/sweep';
import { sweepDeps } from '../ops/helpers';
import { enqueue, submissionsQueue, POISON_QUEUE } from '../intake/support';
import { fuzzCount, fuzzSeed, httpCaseArb, inPool, queueTexts } from '../helpers/fuzzCases';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
const SEED = fuzzSeed();
const HTTP_CASES = fuzzCount('FUZZ_STACK_RUNS', 300);
const QUEUE_CASES = fuzzCount('FUZZ_STACK_QUEUE_RUNS', 200);
let stack: Stack;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImage: false,
    logDestination: path.join(LOGS, 'security-fuzz-host.log'),
    logLevel: 'warn',
    env: { SWEEP_SCHEDULE: '0 0 0 1 1 *' },
  });
  await submissionsQueue(stack).createIfNotExists();
  console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${HTTP_CASES} HTTP and ${QUEUE_CASES} queue cases`);
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

it(`${HTTP_CASES} generated documents through POST /api/jobs: no 5xx, the host keeps answering`, async () => {
  const cases = fc.sample(httpCaseArb, { numRuns: HTTP_CASES, seed: SEED });
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
  const texts = queueTexts(QUEUE_CASES, SEED + 1);
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
  const poisoned = (await poison.exists())
    ? (await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems.map((m) => Buffer.from(m.messageText, 'base64').toString('utf8').slice(0, 200))
    : [];
  expect(poisoned).toEqual([]);
  expect((await fetch(`${stack.baseUrl}/api/health`)).status).toBe(200);

  const report = await runSweep(sweepDeps(stack, { stallLimitMs: 30 * 60_000, graceMs: 10 * 60_000, stagingRetentionMs: 24 * 3_600_000 }));
  expect(report.ran).toBe(true);
  expect(report.skipped).toEqual([]);
  expect(report.actions.filter((a) => !a.ok)).toEqual([]);
  expect(report.observed.jobs).toBeGreaterThan(QUEUE_CASES / 10);
}, 600_000);
