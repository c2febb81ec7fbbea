/**
 * Admission against a real Azurite table: many admitters at once (requests, releases and passes interleaved, as
 * activities on several hosts make them) never over-commit and never grant a job twice; the ledger survives its
 * JSON growing past one property; a stale waiting row of a granted job is not granted again.
 */
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { AdmissionStore } from '../../shared/adapters/scheduling/admissionStore';
import { admissionPass, reconcileAdmission, releaseAdmission, requestAdmission, type AdmissionDeps } from '../../shared/adapters/scheduling/admissionService';
import type { AdmissionLimits } from '../../shared/core/scheduling/admission';
import { parseJobSpec } from '../../shared/core/spec';
import { JobStore, type JobRecord } from '../../shared/adapters/state';
import { schedulingHousekeeping } from '../../shared/adapters/scheduling/housekeeping';
import { DependentsStore } from '../../shared/adapters/scheduling/dependentsStore';

let azurite: AzuriteHandle;
let tables = 0;

beforeAll(async () => {
  azurite = await startAzurite();
}, 60_000);

afterAll(async () => {
  await azurite?.stop();
});

async function newStore(): Promise<AdmissionStore> {
  const store = AdmissionStore.fromConnectionString(azurite.connectionString(), `Admission${process.pid}x${++tables}`);
  await store.ensureTable();
  return store;
}

const spec = (nodes: number) => {
  const r = parseJobSpec({ name: 'adm', pool: { vmSize: 'Standard_D2s_v5', nodes }, mpi: { runtime: 'openmpi', command: 'true' } });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
};

/** A job row as the admission activities read it (only the fields admission looks at). */
function row(id: string, i: number, nodes = 1, owner = 'alice'): JobRecord {
  return {
    id,
    name: id,
    owner,
    tags: {},
    specHash: 'h',
    spec: spec(nodes),
    state: 'Queued',
    stage: 'Queued',
    progress: null,
    createdAt: new Date(Date.parse('2030-01-01T00:00:00.000Z') + i).toISOString(),
    updatedAt: '',
    eventSeq: 2,
  };
}

// Standard_D2s_v5: 2 cores per node, family standardDSv5Family. 10 cores: five 1-node jobs at once.
const limits: AdmissionLimits = { queues: [{ name: 'default', priority: 0 }], coreQuota: { families: { standardDSv5Family: 10 } }, backfillLimit: 0 };

test('60 jobs asking at once, releases and passes interleaved: never more than 5 reserved, each job granted exactly once, grants in order', async () => {
  const store = await newStore();
  const deps: AdmissionDeps = { store, limits };
  const jobs = Array.from({ length: 60 }, (_, i) => row(`job-${String(i).padStart(2, '0')}`, i));
  const grants = new Map<string, number>();
  let maxHeld = 0;
  const watchHeld = async () => {
    const s = await store.read();
    const held = Object.values(s.ledger.reservations);
    maxHeld = Math.max(maxHeld, held.length);
    expect(held.reduce((n, r) => n + r.cores, 0)).toBeLessThanOrEqual(10);
  };
  const record = (id: string, grant: number) => {
    const earlier = grants.get(id);
    if (earlier !== undefined) expect({ id, grant }).toEqual({ id, grant: earlier });
    grants.set(id, grant);
  };

  // Every job asks (enqueue + pass); then, until all are done, granted jobs release (+ pass) and waiting ones ask again.
  const asked = await Promise.all(jobs.map((j) => requestAdmission(deps, j)));
  for (const [k, a] of asked.entries()) if (a.status.state === 'granted') record(jobs[k].id, a.status.grant);
  // Grants made while the 60 were still asking went to whoever had asked by then (a pass orders only the jobs waiting
  // at that moment); from here on every job waits, so the rest must come in submission order.
  const grantedWhileAsking = new Set(Object.keys((await store.read()).ledger.reservations));
  await watchHeld();
  const done = new Set<string>();
  for (let round = 0; done.size < jobs.length && round < 200; round++) {
    const snap = await store.read();
    const running = Object.keys(snap.ledger.reservations);
    await Promise.all([
      ...running.map(async (id) => {
        await releaseAdmission(deps, id);
        done.add(id);
      }),
      ...jobs
        .filter((j) => !done.has(j.id) && !running.includes(j.id))
        .slice(0, 20)
        .map(async (j) => {
          const a = await requestAdmission(deps, j);
          if (a.status.state === 'granted') record(j.id, a.status.grant);
        }),
      admissionPass(deps),
      admissionPass(deps),
    ]);
    const after = await store.read();
    for (const r of Object.values(after.ledger.reservations)) record(r.jobId, r.grant);
    await watchHeld();
  }
  expect(done.size).toBe(60);
  expect(maxHeld).toBe(5);
  // One grant per job, numbered 1..60 without gaps; once all had asked, in submission order (one queue, one
  // priority, no backfill).
  const order = [...grants.entries()].sort((a, b) => a[1] - b[1]).map(([id]) => id);
  expect([...grants.values()].sort((a, b) => a - b)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
  expect(grantedWhileAsking.size).toBeLessThanOrEqual(5);
  expect(new Set(order.slice(0, grantedWhileAsking.size))).toEqual(grantedWhileAsking);
  expect(order.slice(grantedWhileAsking.size)).toEqual(jobs.map((j) => j.id).filter((id) => !grantedWhileAsking.has(id)));
  const end = await store.read();
  expect(end.waiting).toEqual([]);
  expect(end.ledger.reservations).toEqual({});
}, 120_000);

test('a job that can never fit is refused once with the reason; its retried request keeps the refusal', async () => {
  const store = await newStore();
  const deps: AdmissionDeps = { store, limits };
  const big = row('too-big', 0, 6); // 12 cores of a 10-core family
  const a = await requestAdmission(deps, big);
  expect(a.status).toEqual({ state: 'refused', reason: expect.stringMatching(/needs 12 standardDSv5Family cores.*quota for that family is 10/) });
  expect((await requestAdmission(deps, big)).status.state).toBe('refused');
  expect((await store.read()).waiting).toEqual([]);
});

test('a stale waiting row (a request retried after its grant) is dropped, not granted again; reconciliation frees what ended jobs hold; a late request of an ended job queues nothing', async () => {
  const store = await newStore();
  const deps: AdmissionDeps = { store, limits };
  const a = row('job-a', 0);
  const first = await requestAdmission(deps, a);
  expect(first.status).toMatchObject({ state: 'granted', grant: 1 });
  await store.enqueue({
    jobId: 'job-a',
    owner: 'alice',
    queue: 'default',
    priority: 0,
    order: 'x',
    family: 'standardDSv5Family',
    cores: 2,
    nodes: 1,
    pools: 1,
    enqueuedAt: '',
  });
  const pass = await admissionPass(deps);
  expect(pass.admitted).toEqual([]);
  expect((await store.read()).waiting).toEqual([]);
  expect((await requestAdmission(deps, a)).status).toMatchObject({ state: 'granted', grant: 1 });

  const b = row('job-b', 1);
  await requestAdmission(deps, b);
  const rows = new Map<string, JobRecord>([
    ['job-a', { ...a, state: 'Failed' }],
    ['job-b', b],
  ]);
  const r = await reconcileAdmission(deps, { get: async (id) => rows.get(id) });
  expect(r.dropped).toEqual(['job-a']);
  expect(Object.keys((await store.read()).ledger.reservations)).toEqual(['job-b']);
  // A late repeat of job-a's request (its run has ended) does not queue it again.
  expect((await requestAdmission(deps, { ...a, state: 'Succeeded' })).status).toEqual({ state: 'absent' });
  expect((await store.read()).waiting).toEqual([]);
});

test('the ledger keeps hundreds of reservations (its JSON split over properties)', async () => {
  const store = await newStore();
  const wide: AdmissionLimits = { queues: [{ name: 'default', priority: 0 }], coreQuota: { families: {} }, backfillLimit: 0 };
  const deps: AdmissionDeps = { store, limits: wide };
  const jobs = Array.from({ length: 300 }, (_, i) => row(`wide-job-with-a-longer-name-${String(i).padStart(3, '0')}`, i));
  for (let i = 0; i < jobs.length; i += 50)
    await Promise.all(
      jobs.slice(i, i + 50).map((j) =>
        store.enqueue({
          jobId: j.id,
          owner: j.owner,
          queue: 'default',
          priority: 0,
          order: j.createdAt,
          family: 'f',
          cores: 2,
          nodes: 1,
          pools: 1,
          enqueuedAt: '',
        }),
      ),
    );
  // 90 grants per pass at most (one transaction): four passes admit all 300.
  for (let i = 0; i < 4; i++) await admissionPass(deps);
  const s = await store.read();
  expect(Object.keys(s.ledger.reservations)).toHaveLength(300);
  expect(s.ledger.grantSeq).toBe(300);
  expect(s.waiting).toEqual([]);
}, 60_000);

test("the sweep's housekeeping frees what a crashed run held, re-sends its grants, and brings an array's row up to date", async () => {
  const store = await newStore();
  const deps: AdmissionDeps = { store, limits, resendAfterMs: 0 };
  const n = ++tables;
  const jobs = JobStore.fromConnectionString(azurite.connectionString(), { jobsTable: `HkJobs${n}`, eventsTable: `HkEvents${n}` });
  await jobs.ensureTables();
  const dependents = DependentsStore.fromConnectionString(azurite.connectionString(), `HkDeps${n}`);
  await dependents.ensureTable();
  // "crashed" holds 4 of the 10 cores but its row says Failed (its run was terminated); "waiting" asks 8: it fits only
  // once the crashed run's reservation is dropped.
  const add = async (id: string, nodes: number) => {
    const { job } = await jobs.createIfAbsent({ id, spec: spec(nodes), specHash: id, owner: 'alice' });
    await jobs.transition(id, 'Queued', 'waiting');
    return { ...job, state: 'Queued' as const };
  };
  const crashed = await add('hk-crashed', 2);
  const waiting = await add('hk-waiting', 4);
  expect((await requestAdmission(deps, crashed)).status.state).toBe('granted');
  expect((await requestAdmission(deps, waiting)).status.state).toBe('waiting');
  await jobs.transition('hk-crashed', 'Failed', 'terminated by hand');
  // An array of two whose jobs both succeeded while nobody announced it.
  const arr = (await jobs.createIfAbsent({ id: 'hk-arr', spec: { ...spec(1), array: { parameters: ['a', 'b'] } }, specHash: 'arr', owner: 'alice' })).job;
  await jobs.transition('hk-arr', 'Queued', 'array of 2 jobs');
  for (const i of [0, 1]) {
    await jobs.createIfAbsent({
      id: `hk-arr-${i}`,
      spec: spec(1),
      specHash: `c${i}`,
      owner: 'alice',
      array: { parent: arr.id, index: i, submittedAt: arr.createdAt },
    });
    for (const to of ['Queued', 'Running', 'CleaningUp', 'Succeeded'] as const) await jobs.transition(`hk-arr-${i}`, to, to);
  }
  await dependents.add('hk-arr', 'hk-after-arr');
  const woken: { admitted: string[]; dependents: string[] } = { admitted: [], dependents: [] };
  const report = await schedulingHousekeeping({
    store: jobs,
    admission: deps,
    dependents,
    wakeAdmitted: async (ids) => void woken.admitted.push(...ids),
    wakeDependents: async (ids) => void woken.dependents.push(...ids),
  });
  expect(report).toMatchObject({ dropped: ['hk-crashed'], admitted: 1, arraysRefreshed: 1, arraysEnded: ['hk-arr'], errors: [] });
  expect(woken).toEqual({ admitted: ['hk-waiting'], dependents: ['hk-after-arr'] });
  expect(Object.keys((await store.read()).ledger.reservations)).toEqual(['hk-waiting']);
  expect((await jobs.get('hk-arr'))?.state).toBe('Succeeded');
});
