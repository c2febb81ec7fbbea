/**
 * Admission, queues, dependencies and arrays on the real stack (one stack for the file): Azurite and the Batch
 * emulator in this process, the Functions host + Durable engine as a child process that is SIGKILLed and restarted in
 * the middle of the burst (as tests/e2e/crash.test.ts does).
 *
 * Burst (issue 14 acceptance): 200 trivial jobs (1 node, native `true`; 24 by default, see BURST) against an account core quota that fits 5
 * pools; a few fail on purpose, a few can never fit, a few are cancelled while queued, some have a higher priority.
 * The emulator is sampled every 50 ms: never more than 5 pools at once; every job ends in its right final state with
 * exactly one grant; grants keep first-come-first-served within a priority and priority across them; nothing leaks.
 *
 * Soak sizes by hand: ADMISSION_BURST_JOBS=200 ADMISSION_ARRAY_SIZE=20 runs the issue's numbers.
 *
 * Arrays and dependencies (acceptance): an array of 20 (6 by default, see ARRAY) that depends on a job, a job that depends on the array, a job
 * that depends on a failing job (cancelled with the reason) and one that only waits for it to finish.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { localAppSettings, REPO_ROOT } from '../../local/stack';
import { AdmissionStore } from '../../shared/adapters/scheduling/admissionStore';
import { ChildHost } from '../helpers/childHost';

let azurite: AzuriteHandle;
let batch: BatchEmulatorHandle;
let host: ChildHost | undefined;
let log: WriteStream;
let settings: Record<string, string>;
let sampler: NodeJS.Timeout | undefined;
const samples = { maxPools: 0, maxCores: 0, count: 0, over: [] as string[][] };
const poolCreates: string[] = [];

const KEYS = { functionKey: 'admission-test-function-key', masterKey: 'admission-test-master-key' };
/**
 * The issue's burst is 200 jobs (ADMISSION_BURST_JOBS=200: 4.5 minutes on 2 shared cores at load 9). Every job runs the
 * pipeline (without preflight and kept logs, see spec()), 5 at a time, so the suite runs a slice of it by default:
 * the claims need a backlog, not a number. 24 jobs are still 18 that run against the 5 pools the quota fits (more than
 * three waves, so the capacity is filled and a queue forms behind it), 3 urgent ones (i % 10 = 3) to pass the default
 * queue, the crash at 40% with jobs still waiting, two that fail, and three each that never fit or are cancelled while
 * queued (late in the submission order, so they are still waiting when cancelled). The jobs' steps are CPU-bound on the
 * shared machine (each episode waits its turn, not a timer): fewer jobs is what shortens the file (60 took 166 s).
 */
const BURST = Number(process.env.ADMISSION_BURST_JOBS ?? 24);
if (!Number.isInteger(BURST) || BURST < 24) throw new Error(`ADMISSION_BURST_JOBS must be an integer of at least 24, got ${process.env.ADMISSION_BURST_JOBS}`);
/**
 * The array's size: 6 children are more than the 5 pools the quota fits (a child waits for another's pool, as the
 * issue's 20 did), each with its own index and parameter; ADMISSION_ARRAY_SIZE=20 runs the acceptance's size.
 */
const ARRAY = Number(process.env.ADMISSION_ARRAY_SIZE ?? 6);
if (!Number.isInteger(ARRAY) || ARRAY < 6) throw new Error(`ADMISSION_ARRAY_SIZE must be an integer of at least 6, got ${process.env.ADMISSION_ARRAY_SIZE}`);

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  log = createWriteStream(path.join(logs, 'e2e-admission-host.log'), { flags: 'w' });
  azurite = await startAzurite({ inMemory: true });
  // Standard_D2s_v5 has 2 cores (standardDSv5Family): 10 cores is 5 one-node pools.
  batch = await startBatchEmulator({
    nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')],
    timing: { allocateMs: 40, bootMs: 40, leaveMs: 30, poolDeleteMs: 80, jobDeleteMs: 80, startTaskPollMs: 50 },
    quota: { perFamily: { standardDSv5Family: 10 } },
    onExchange: (ex) => {
      if (ex.method === 'POST' && ex.path === '/pools' && ex.status === 201) poolCreates.push(String((ex.requestBody as { id?: string }).id));
    },
  });
  settings = {
    ...localAppSettings(azurite, batch),
    POLL_INITIAL_MS: '250',
    POLL_MAX_MS: '1000',
    ADMISSION_CORE_QUOTA: '{"standardDSv5Family":10}',
    ADMISSION_QUEUES: '[{"name":"default","priority":0},{"name":"urgent","priority":10}]',
    ADMISSION_POLL_SECONDS: '20',
    OPERATOR_API_KEYS: KEYS.functionKey,
  };
  sampler = setInterval(() => {
    const pools = batch.pools();
    samples.count++;
    samples.maxPools = Math.max(samples.maxPools, pools.length);
    if (pools.length > 5 && samples.over.length < 5) samples.over.push(pools.map((p) => `${p.id} ${p.state} ${p.nodes}`));
    samples.maxCores = Math.max(
      samples.maxCores,
      pools.reduce((n, p) => n + 2 * p.nodes, 0),
    );
  }, 50);
  host = await startHost(0);
}, 120_000);

afterAll(async () => {
  if (sampler) clearInterval(sampler);
  await host?.kill();
  await batch?.stop();
  await azurite?.stop();
  await new Promise((r) => log?.end(r));
}, 60_000);

function startHost(port: number): Promise<ChildHost> {
  return ChildHost.start({ appDir: REPO_ROOT, storage: azurite.connectionString(), port, settings, keys: KEYS, log, timeoutMs: 90_000 });
}

const base = (): string => host!.baseUrl;

interface View {
  id: string;
  state: string;
  createdAt: string;
  updatedAt: string;
  error?: { message: string };
  queue?: { state: string; position?: number; positionOverall?: number; reason?: string };
  progress?: { array?: { size: number; counts: Record<string, number> } } | null;
  result?: { mpi?: { stdoutTail?: string } };
  timeline?: { kind: string; to?: string; at: string; reason: string; data?: { grant?: number; grantedAt?: string; waitingSince?: string } }[];
}

function spec(id: string, extra: Record<string, unknown> = {}, command = 'true', nodes = 1): string {
  return stringify({
    id,
    name: id,
    tags: { suite: 'admission' },
    pool: { vmSize: 'Standard_D2s_v5', nodes },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command },
    limits: { maxWallClock: 'PT10M' },
    // Admission, queues, dependencies and arrays are what this file proves. The preflight check (tests/e2e/health,
    // preflightInputs, pipeline) and the default outputs' kept logs (tests/e2e/shipyardRecipes, ui/dashboardOutputs)
    // are proven elsewhere and would only add steps and node tasks to each of the ~40 jobs here; the job view still
    // keeps the stdout tail the array test reads.
    preflight: { enabled: false },
    cleanup: { keepLogs: false },
    ...extra,
  });
}

async function post(body: string): Promise<{ status: number; body: { job?: { id: string }; errors?: { path: string; message: string }[] } }> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(`${base()}/api/jobs`, {
        method: 'POST',
        headers: { 'content-type': 'application/yaml', 'x-functions-key': KEYS.functionKey },
        body,
      });
      return { status: res.status, body: (await res.json()) as never };
    } catch (err) {
      if (attempt >= 20) throw err; // the host is being restarted
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function get<T>(route: string): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(`${base()}${route}`, { headers: { 'x-functions-key': KEYS.functionKey } });
      if (res.status === 200) return (await res.json()) as T;
      if (attempt >= 20) throw new Error(`GET ${route}: ${res.status} ${await res.text()}`);
    } catch (err) {
      if (attempt >= 20) throw err;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function cancel(id: string): Promise<void> {
  const res = await fetch(`${base()}/api/jobs/${id}`, { method: 'DELETE', headers: { 'x-functions-key': KEYS.functionKey } });
  expect(res.status).toBe(202);
}

const TERMINAL = new Set(['Succeeded', 'Failed', 'Cancelled']);

/** Waits until every listed job is terminal; returns the list's views by id. */
async function waitAll(ids: string[], timeoutMs: number, onProgress?: (done: number) => Promise<void>): Promise<Map<string, View>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const byId = new Map<string, View>();
    let token: string | undefined;
    do {
      const page = await get<{ jobs: View[]; continuationToken?: string }>(
        `/api/jobs?tag=suite=admission&top=1000${token ? `&continuationToken=${encodeURIComponent(token)}` : ''}`,
      );
      for (const j of page.jobs) byId.set(j.id, j);
      token = page.continuationToken;
    } while (token);
    const done = ids.filter((id) => TERMINAL.has(byId.get(id)?.state ?? '')).length;
    await onProgress?.(done);
    if (done === ids.length) return byId;
    if (Date.now() > deadline)
      throw new Error(
        `${ids.length - done} jobs not finished: ${ids
          .filter((id) => !TERMINAL.has(byId.get(id)?.state ?? ''))
          .slice(0, 10)
          .map((id) => `${id} ${byId.get(id)?.state}`)
          .join(', ')}`,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const at = (v: View, to: string) => v.timeline?.find((e) => e.kind === 'transition' && e.to === to)?.at;
const transitions = (v: View) => (v.timeline ?? []).filter((e) => e.kind === 'transition').map((e) => e.to);

test(`burst of ${BURST} jobs against a quota of 5 pools, the host SIGKILLed in the middle`, async () => {
  const id = (i: number) => `burst-${String(i).padStart(3, '0')}`;
  const failing = new Set([7, 12, 37, 57, 107, 157].filter((i) => i < BURST));
  const tooBig = new Set([BURST - 10, BURST - 9, BURST - 8]);
  // Late in the submission order, behind the backlog: still waiting when they are cancelled (20-22 of 40 were).
  const cancelled = new Set([BURST - 7, BURST - 6, BURST - 5]);
  const urgent = (i: number) => i % 10 === 3;
  const ids = Array.from({ length: BURST }, (_, i) => id(i));
  const started = Date.now();

  // Submitted in order, a few at a time: first come first served is judged on submission order.
  for (let i = 0; i < BURST; i += 4) {
    await Promise.all(
      [i, i + 1, i + 2, i + 3]
        .filter((k) => k < BURST)
        .map(async (k) => {
          const extra = urgent(k) ? { priority: 5 } : {};
          const r = await post(spec(id(k), extra, failing.has(k) ? 'exit 3' : 'true', tooBig.has(k) ? 6 : 1));
          expect(r.status).toBe(202);
          if (cancelled.has(k)) await cancel(id(k));
        }),
    );
  }
  console.log(`submitted ${BURST} jobs in ${Math.round((Date.now() - started) / 1000)} s`);

  // A job deep in the queue shows its place; the queues show the depth and the reserved cores.
  const deep = await get<View>(`/api/jobs/${id(BURST - 1)}`);
  if (deep.state === 'Queued' && deep.queue?.state === 'waiting') expect(deep.queue.position).toBeGreaterThan(0);
  const queues = await get<{ queues: { name: string; waiting: number; running: number; reservedCores: Record<string, number> }[]; totals: { cores: number } }>(
    '/api/queues',
  );
  expect(queues.queues.map((q) => q.name).sort()).toEqual(['default', 'urgent']);
  expect(queues.totals.cores).toBeLessThanOrEqual(10);

  let killed = false;
  const views = await waitAll(ids, 900_000, async (done) => {
    if (!killed && done >= BURST * 0.4) {
      killed = true;
      const port = host!.port;
      await host!.kill();
      console.log(`host SIGKILLed with ${done}/${BURST} jobs done after ${Math.round((Date.now() - started) / 1000)} s`);
      host = await startHost(port);
    }
  });
  expect(killed).toBe(true);
  console.log(
    `${BURST} jobs done in ${Math.round((Date.now() - started) / 1000)} s; ${samples.count} samples, at most ${samples.maxPools} pools and ${samples.maxCores} cores at once`,
  );

  // Never more than 5 pools, never more than the quota; and the capacity was used.
  expect({ maxPools: samples.maxPools, over: samples.over }).toEqual({ maxPools: expect.any(Number), over: [] });
  expect(samples.maxPools).toBeLessThanOrEqual(5);
  expect(samples.maxCores).toBeLessThanOrEqual(10);
  expect(samples.maxPools).toBeGreaterThanOrEqual(4);

  // Every job in its right final state.
  const expected = (i: number) => (cancelled.has(i) ? 'Cancelled' : failing.has(i) || tooBig.has(i) ? 'Failed' : 'Succeeded');
  expect(ids.map((j) => `${j} ${views.get(j)?.state}`)).toEqual(ids.map((j, i) => `${j} ${expected(i)}`));

  // Details from each job's own view (timeline with the grant note).
  const full = new Map<string, View>();
  for (let i = 0; i < ids.length; i += 10) {
    for (const v of await Promise.all(ids.slice(i, i + 10).map((j) => get<View>(`/api/jobs/${j}`)))) full.set(v.id, v);
  }
  for (const i of tooBig) {
    expect(full.get(id(i))!.error?.message).toMatch(
      /^refused at admission: the job needs 12 standardDSv5Family cores; the Batch account's quota for that family is 10/,
    );
    expect(transitions(full.get(id(i))!)).toEqual(['Submitted', 'Queued', 'Failed']);
  }
  for (const i of cancelled) {
    expect(transitions(full.get(id(i))!)).toEqual(['Submitted', 'Queued', 'Cancelled']);
    expect(poolCreates).not.toContain(`hpc-${id(i)}`);
  }
  // Exactly one grant per job that ran, numbers unique: none lost, none admitted twice across the crash.
  const grants = new Map<string, { grant: number; grantedAt: string; waitingSince: string }>();
  for (const [j, v] of full) {
    const notes = (v.timeline ?? []).filter((e) => e.kind === 'note' && e.data?.grant !== undefined);
    const ran = !tooBig.has(Number(j.slice(6))) && !cancelled.has(Number(j.slice(6)));
    expect({ j, grants: notes.length }).toEqual({ j, grants: ran ? 1 : 0 });
    if (notes[0]) grants.set(j, notes[0].data as { grant: number; grantedAt: string; waitingSince: string });
  }
  expect(new Set([...grants.values()].map((g) => g.grant)).size).toBe(grants.size);
  expect(new Set(poolCreates.filter((p) => p.startsWith('hpc-burst-'))).size).toBe(poolCreates.filter((p) => p.startsWith('hpc-burst-')).length);

  // Order: a job granted before another that was already waiting must come first in (priority, submission) order.
  // A grant is dated when its pass read the partition; a job counts as waiting then if its waiting row was written
  // (waitingSince: just before the insert) more than 2 s earlier: an insert still in flight during the read is not seen.
  const rank = (j: string) => [urgent(Number(j.slice(6))) ? 0 : 1, full.get(j)!.createdAt, j] as const;
  const before = (a: string, b: string) => {
    const [ra, rb] = [rank(a), rank(b)];
    return ra[0] !== rb[0] ? ra[0] < rb[0] : ra[1] !== rb[1] ? ra[1] < rb[1] : ra[2] < rb[2];
  };
  const inversions: string[] = [];
  for (const [a, ga] of grants) {
    for (const [b, gb] of grants) {
      // b granted before a although a was already waiting and comes first: an inversion.
      if (gb.grant < ga.grant && before(a, b) && Date.parse(ga.waitingSince) + 2_000 < Date.parse(gb.grantedAt))
        inversions.push(`${b} (grant ${gb.grant}) before ${a} (grant ${ga.grant})`);
    }
  }
  expect(inversions).toEqual([]);

  // Nothing left behind: no pool, no reservation, no waiting row.
  await waitFor('pools gone', async () => batch.pools().length === 0);
  const admission = await AdmissionStore.fromConnectionString(azurite.connectionString()).read();
  expect(Object.keys(admission.ledger.reservations)).toEqual([]);
  expect(admission.waiting).toEqual([]);
}, 1_200_000);

async function waitFor(what: string, pred: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test(`an array of ${ARRAY} with dependencies: it starts after its parent succeeded; a failed parent cancels its dependent with the reason`, async () => {
  // Refused at intake, with the path: an unknown parent.
  const unknown = await post(spec('dep-on-nothing', { dependsOn: [{ job: 'no-such-job' }] }));
  expect(unknown.status).toBe(400);
  expect(unknown.body.errors).toEqual([{ path: 'dependsOn[0].job', message: 'no job no-such-job: a job can only depend on existing jobs of its own owner' }]);

  expect((await post(spec('arr-prep', {}, 'sleep 2'))).status).toBe(202);
  expect((await post(spec('arr-bad', {}, 'exit 2'))).status).toBe(202);
  const sweep = await post(
    spec(
      'sweep',
      { array: { range: { from: 100, to: 100 + 10 * (ARRAY - 1), step: 10 } }, dependsOn: [{ job: 'arr-prep', condition: 'succeeded' }] },
      'echo "idx=$MPIJOB_ARRAY_INDEX param=$MPIJOB_ARRAY_PARAM"',
    ),
  );
  expect(sweep.status).toBe(202);
  expect(sweep.body.job?.id).toBe('sweep');
  expect((await post(spec('after-sweep', { dependsOn: [{ job: 'sweep' }] }))).status).toBe(202);
  expect((await post(spec('after-bad', { dependsOn: [{ job: 'arr-bad', condition: 'succeeded' }] }))).status).toBe(202);
  expect((await post(spec('after-bad-finished', { dependsOn: [{ job: 'arr-bad', condition: 'finished' }] }))).status).toBe(202);
  const children = Array.from({ length: ARRAY }, (_, i) => `sweep-${i}`);

  // While it waits for its parent, a child says so.
  const waiting = await get<View>(`/api/jobs/sweep-${ARRAY - 1}`);
  if (waiting.state === 'Queued') expect(waiting.queue?.state).toMatch(/notQueued|waiting/);

  const all = ['arr-prep', 'arr-bad', 'sweep', ...children, 'after-sweep', 'after-bad', 'after-bad-finished'];
  await waitAll(all, 300_000);
  const v = new Map<string, View>();
  for (const id of all) v.set(id, await get<View>(`/api/jobs/${id}`));

  expect(v.get('arr-prep')!.state).toBe('Succeeded');
  const prepDone = Date.parse(at(v.get('arr-prep')!, 'Succeeded')!);
  for (const [i, c] of children.entries()) {
    const job = v.get(c)!;
    expect({ c, state: job.state }).toEqual({ c, state: 'Succeeded' });
    expect(Date.parse(at(job, 'Provisioning')!)).toBeGreaterThanOrEqual(prepDone);
    expect(job.result?.mpi?.stdoutTail).toContain(`idx=${i} param=${100 + 10 * i}`);
  }
  const array = v.get('sweep')!;
  expect(array.state).toBe('Succeeded');
  expect(array.progress?.array).toMatchObject({ size: ARRAY, counts: { Succeeded: ARRAY } });
  expect(transitions(array)).toEqual(['Submitted', 'Queued', 'Running', 'CleaningUp', 'Succeeded']);
  const lastChild = Math.max(...children.map((c) => Date.parse(at(v.get(c)!, 'Succeeded')!)));
  expect(v.get('after-sweep')!.state).toBe('Succeeded');
  expect(Date.parse(at(v.get('after-sweep')!, 'Provisioning')!)).toBeGreaterThanOrEqual(lastChild);

  expect(v.get('arr-bad')!.state).toBe('Failed');
  expect(v.get('after-bad')!.state).toBe('Cancelled');
  expect(v.get('after-bad')!.error?.message).toMatch(
    /^dependency arr-bad ended Failed: Running: MPI task exited with code 2.*\(this job needed it to succeed\)$/,
  );
  expect(transitions(v.get('after-bad')!)).toEqual(['Submitted', 'Queued', 'Cancelled']);
  expect(v.get('after-bad-finished')!.state).toBe('Succeeded');
  expect(Date.parse(at(v.get('after-bad-finished')!, 'Provisioning')!)).toBeGreaterThanOrEqual(Date.parse(at(v.get('arr-bad')!, 'Failed')!));

  // Cancelling an array cancels its jobs; the array's row follows them.
  expect((await post(spec('slow', {}, 'sleep 60'))).status).toBe(202);
  expect((await post(spec('doomed', { array: { parameters: ['a', 'b', 'c'] }, dependsOn: [{ job: 'slow' }] }))).status).toBe(202);
  await cancel('doomed');
  await cancel('slow');
  const ended = await waitAll(['slow', 'doomed', 'doomed-0', 'doomed-1', 'doomed-2'], 120_000);
  expect(['doomed', 'doomed-0', 'doomed-1', 'doomed-2', 'slow'].map((id) => ended.get(id)!.state)).toEqual([
    'Cancelled',
    'Cancelled',
    'Cancelled',
    'Cancelled',
    'Cancelled',
  ]);
  expect(poolCreates.filter((p) => p.startsWith('hpc-doomed'))).toEqual([]);
}, 600_000);
