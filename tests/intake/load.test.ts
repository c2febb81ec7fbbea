/**
 * Intake under load on the local stack (GitHub issue 5): 500 submissions over HTTP from 32 concurrent
 * clients (30% duplicates, 5% conflicts) and 500 through the job-submissions queue (duplicate deliveries),
 * scaled by INTAKE_LOAD_SCALE (default 0.1, see SCALE below; INTAKE_LOAD_SCALE=1 runs the numbers),
 * then: one Jobs row and one Durable orchestration per distinct id, every duplicate got the original job,
 * every conflict got 409, nothing accepted is missing, and every job reached a terminal state. The burst holds
 * the Durable engine at its floor while the listeners are busy (checked), so this is also the exactly-once check of
 * that path.
 * Every spec reuses a pool that does not exist, so each real mpiJob orchestration fails Provisioning at
 * once and ends Failed after cleanup: hundreds of pipelines finish in seconds without Batch pools.
 * Needs the compiled app (dist/).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import {
  durableInstances,
  enqueue,
  eventually,
  fastSpec,
  jobRows,
  postJobRetrying,
  runPool,
  submissionsQueue,
  waitAllTerminal,
  type HttpAnswer,
} from './support';

type RetriedAnswer = HttpAnswer & { statuses: number[] };

/**
 * The claim: intake is exactly-once under concurrency: with 32 clients racing duplicates and conflicts of the same
 * ids over HTTP while the queue delivers duplicates, each distinct id gets one row and one orchestration, every
 * duplicate gets the original job, every conflict 409, and this holds while the burst keeps the Durable engine at its
 * floor. That needs the races, not the volume: more HTTP submissions than clients (so every client races others on
 * shared ids), duplicates and conflicts of each kind, and a burst long enough to hold the engine at its floor
 * (asserted below, so a scale too small to prove it fails rather than passing vacuously).
 * The issue asked for 500 + 500 (INTAKE_LOAD_SCALE=1: 675 pipelines, 5-6 minutes here); the default suite ran 0.3
 * (202 pipelines, ~3 minutes under load). 0.1 keeps every ratio (50 HTTP submissions from 32 clients: 32 ids, 15
 * duplicates, 3 conflicts; 50 queue messages over 35 ids) with 67 pipelines; INTAKE_LOAD_SCALE runs a soak of any size.
 */
const SCALE = Number(process.env.INTAKE_LOAD_SCALE ?? 0.1);
const HTTP_SUBMISSIONS = Math.round(500 * SCALE);
const HTTP_CLIENTS = 32;
const DUPLICATE_SHARE = 0.3;
const CONFLICT_SHARE = 0.05;
const QUEUE_MESSAGES = Math.round(500 * SCALE);
const QUEUE_DUPLICATE_SHARE = 0.3;
/**
 * How long every pipeline may take to end, from the last HTTP answer: a bound for a hung run, not a measurement. Not
 * cut with the scale: under the load of other test runs on this machine the last pipelines of even a small burst
 * spend minutes in CleaningUp (seen at 0.1: 10 of 32 still there after 120 s at a load average of 19).
 */
const TERMINAL_WAIT_MS = 300_000 + 600_000 * SCALE;

let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'intake-load-host.log'), demoImage: false, logLevel: 'warn' });
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

/** A deterministic shuffle (mulberry32), so a failing order can be replayed. */
function shuffled<T>(items: T[], seed: number): T[] {
  let a = seed;
  const rand = () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}

type Kind = 'first' | 'duplicate' | 'conflict';
interface Submission {
  id: string;
  kind: Kind;
  spec: Record<string, unknown>;
}

/**
 * 500 submissions over `distinct` ids: each id once with its spec, duplicates (same spec) and conflicts
 * (same id, different mpi.command) spread over the ids. In the shuffled order the first submission of an
 * id is always the one with the original spec, so a conflict can wait for it without a deadlock.
 */
function httpPlan(): Submission[] {
  const duplicates = Math.round(HTTP_SUBMISSIONS * DUPLICATE_SHARE);
  const conflicts = Math.round(HTTP_SUBMISSIONS * CONFLICT_SHARE);
  const distinct = HTTP_SUBMISSIONS - duplicates - conflicts;
  const ids = Array.from({ length: distinct }, (_, i) => `load-h-${String(i).padStart(4, '0')}`);
  const plan: Submission[] = ids.map((id) => ({ id, kind: 'first', spec: fastSpec(id) }));
  for (let i = 0; i < duplicates; i++) {
    const id = ids[(i * 7) % distinct] as string;
    plan.push({ id, kind: 'duplicate', spec: fastSpec(id) });
  }
  for (let i = 0; i < conflicts; i++) {
    const id = ids[(i * 13 + 5) % distinct] as string;
    plan.push({ id, kind: 'conflict', spec: fastSpec(id, `echo conflicting ${i}`) });
  }
  const order = shuffled(plan, 20260521);
  const seen = new Set<string>();
  // Give the "first" role to the first occurrence of each id in the shuffled order.
  for (let i = 0; i < order.length; i++) {
    const s = order[i] as Submission;
    if (seen.has(s.id)) continue;
    seen.add(s.id);
    if (s.kind !== 'first') {
      const j = order.findIndex((o, k) => k > i && o.id === s.id && o.kind === 'first');
      [order[i], order[j]] = [order[j] as Submission, s];
    }
  }
  return order;
}

describe('intake under load', () => {
  it(
    'records each distinct job once and starts one orchestration per job, over HTTP and the queue',
    async () => {
      const plan = httpPlan();
      const distinctHttp = new Set(plan.map((s) => s.id));
      const firstAnswer = new Map<string, Promise<RetriedAnswer>>();
      const answers: { s: Submission; a: RetriedAnswer }[] = [];

      const queueDistinct = Math.round(QUEUE_MESSAGES * (1 - QUEUE_DUPLICATE_SHARE));
      const queueIds = Array.from({ length: queueDistinct }, (_, i) => `load-q-${String(i).padStart(4, '0')}`);
      const messages = shuffled([...queueIds, ...queueIds.slice(0, QUEUE_MESSAGES - queueDistinct)], 7);
      const queue = submissionsQueue(stack);
      await queue.createIfNotExists();

      const t0 = performance.now();
      // Both doors at once, as in production: the queue is filled while the HTTP clients run.
      await Promise.all([
        runPool(plan, HTTP_CLIENTS, async (s) => {
          // A conflict is only a conflict once the original is recorded; duplicates are left to race it.
          if (s.kind === 'conflict') await firstAnswer.get(s.id);
          const pending = postJobRetrying(stack, s.spec);
          if (s.kind === 'first') firstAnswer.set(s.id, pending);
          answers.push({ s, a: await pending });
        }),
        runPool(messages, 8, async (id) => enqueue(queue, fastSpec(id))),
      ]);

      // HTTP answers: per id one 202 (whichever same-spec submission won), the other same-spec submissions
      // 200 with that same job, every conflict 409 naming the differing field. A 503 means "outcome unknown,
      // retry" (the row may be written, the orchestration start failed): the retry then gets 200, so an id
      // whose winner saw a 503 has no 202 at all, never two.
      const unexpected = answers.filter(({ s, a }) => (s.kind === 'conflict' ? a.status !== 409 : a.status !== 202 && a.status !== 200));
      expect(unexpected.map(({ s, a }) => `${s.kind} ${s.id}: ${a.status} ${JSON.stringify(a.body)}`)).toEqual([]);
      for (const id of distinctHttp) {
        const same = answers.filter(({ s }) => s.id === id && s.kind !== 'conflict');
        const created = same.filter(({ a }) => a.status === 202).length;
        const saw503 = same.some(({ a }) => a.statuses.includes(503));
        expect({ id, created, saw503 }).toEqual({ id, created: saw503 ? expect.any(Number) : 1, saw503 });
        expect(created).toBeLessThanOrEqual(1);
        expect(new Set(same.map(({ a }) => `${a.body.job?.id}@${a.body.job?.createdAt}`)).size).toBe(1);
        expect(same[0]?.a.body.job?.id).toBe(id);
      }
      const conflicts = answers.filter(({ s }) => s.kind === 'conflict');
      expect(conflicts).toHaveLength(Math.round(HTTP_SUBMISSIONS * CONFLICT_SHARE));
      for (const { a } of conflicts) expect(a.body.differingPaths).toEqual(['mpi.command']);

      // The burst held the Durable engine at its floor (the listeners come first, local/durable/hostLoad.ts): what
      // follows checks that nothing was lost or doubled on that path.
      const engine = stack.durable.stats()!;
      expect(engine.peakEpisodesAtFloor).toBeGreaterThanOrEqual(1);
      expect(engine.peakEpisodesAtFloor).toBeLessThanOrEqual(stack.durable.options()!.maxConcurrentWhileHostBusy);

      const retried = answers.filter(({ a }) => a.statuses.length > 1).length;
      process.stdout.write(`intake load: ${answers.length} HTTP answers in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${retried} retried after 503\n`);

      // Rows and orchestrations: exactly the distinct ids, each once, all terminal.
      const httpRows = await waitAllTerminal(stack, 'load-h-', distinctHttp.size, TERMINAL_WAIT_MS);
      const queueRows = await waitAllTerminal(stack, 'load-q-', queueDistinct, TERMINAL_WAIT_MS);
      expect(httpRows.map((r) => r.id).sort()).toEqual([...distinctHttp].sort());
      expect(queueRows.map((r) => r.id).sort()).toEqual([...queueIds].sort());
      expect(new Set([...httpRows, ...queueRows].map((r) => r.state))).toEqual(new Set(['Failed']));

      // The job row turns Failed in the pipeline's last activity; the orchestration completes an episode later.
      const instances = await eventually('every load- orchestration to finish', 60_000, async () => {
        const all = (await durableInstances(stack)).filter((i) => i.instanceId.startsWith('load-'));
        return all.every((i) => ['Completed', 'Failed', 'Terminated'].includes(i.runtimeStatus)) ? all : undefined;
      });
      const instanceIds = instances.map((i) => i.instanceId).sort();
      expect(instanceIds).toEqual([...distinctHttp, ...queueIds].sort());
      process.stdout.write(`intake load: all ${instanceIds.length} jobs and orchestrations terminal after ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

      // The queue is drained and nothing was poisoned.
      await eventually('the submissions queue to drain', 30_000, async () => ((await queue.getProperties()).approximateMessagesCount === 0 ? true : undefined));
      const poison = submissionsQueue(stack, 'job-submissions-poison');
      if (await poison.exists()) expect((await poison.peekMessages({ numberOfMessages: 32 })).peekedMessageItems).toEqual([]);

      // The rows are still exactly one per id (jobRows reads by PartitionKey range, so a second row would show).
      expect((await jobRows(stack, 'load-')).length).toBe(distinctHttp.size + queueDistinct);
    },
    2 * TERMINAL_WAIT_MS + 300_000,
  );
});
