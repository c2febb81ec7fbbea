/**
 * JobStore against a real Azurite (tables): creation races, ETag conflicts between writers, the
 * timeline, large specs split over properties, and list filters with continuation paging.
 */
import { TableClient } from '@azure/data-tables';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { parseJobSpec, specHash, type JobSpec } from '../../shared/core/spec';
import {
  IllegalTransitionError,
  InvalidContinuationTokenError,
  JobNotFoundError,
  JobStore,
  recordSubmission,
  requestCancel,
  type JobRecord,
  type JobState,
} from '../../shared/adapters/state';

let azurite: AzuriteHandle;
let tableCounter = 0;

function makeSpec(overrides: Record<string, unknown> = {}): JobSpec {
  const r = parseJobSpec({
    name: 'store-test',
    pool: { vmSize: 'Standard_HB120rs_v3', nodes: 2 },
    mpi: { runtime: 'openmpi', command: './app --steps 10' },
    ...overrides,
  });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

/** Each test gets its own pair of tables so tests do not see each other's rows. */
async function newStore(now?: () => Date): Promise<JobStore> {
  tableCounter += 1;
  const suffix = `${process.pid}x${tableCounter}`;
  const store = JobStore.fromConnectionString(azurite.connectionString(), {
    jobsTable: `Jobs${suffix}`,
    eventsTable: `JobEvents${suffix}`,
    ...(now ? { now } : {}),
  });
  await store.ensureTables();
  return store;
}

async function create(store: JobStore, id: string, spec = makeSpec()): Promise<JobRecord> {
  const { job } = await store.createIfAbsent({ id, spec, specHash: specHash(spec), owner: 'tester' });
  return job;
}

beforeAll(async () => {
  azurite = await startAzurite();
});

afterAll(async () => {
  await azurite?.stop();
});

test('createIfAbsent: 20 concurrent creates of one id give exactly one created row and one creation event', async () => {
  const store = await newStore();
  const spec = makeSpec();
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) => store.createIfAbsent({ id: 'race-1', spec, specHash: specHash(spec), owner: `writer-${i}` })),
  );
  expect(results.filter((r) => r.created)).toHaveLength(1);
  const winner = results.find((r) => r.created)!.job;
  for (const r of results) {
    expect(r.job.id).toBe('race-1');
    expect(r.job.owner).toBe(winner.owner); // losers see the winner's row, not their own
  }
  const events = await store.events('race-1');
  expect(events).toHaveLength(1);
  expect(events[0]).toMatchObject({ kind: 'transition', from: null, to: 'Submitted', seq: 1 });
});

test('get round-trips every field, and returns undefined for an unknown id', async () => {
  const store = await newStore();
  const spec = makeSpec({ tags: { project: 'cfd', 'team.name': 'hpc-1' } });
  await create(store, 'roundtrip', spec);
  await store.update('roundtrip', {
    batchPoolId: 'pool-roundtrip',
    batchJobId: 'job-roundtrip',
    progress: { pulled: 3, of: 4 },
    stage: 'pulled 3/4',
  });
  const got = await store.get('roundtrip');
  expect(got).toMatchObject({
    id: 'roundtrip',
    name: 'store-test',
    owner: 'tester',
    state: 'Submitted',
    stage: 'pulled 3/4',
    tags: { project: 'cfd', 'team.name': 'hpc-1' },
    batchPoolId: 'pool-roundtrip',
    batchJobId: 'job-roundtrip',
    progress: { pulled: 3, of: 4 },
    specHash: specHash(spec),
  });
  expect(got!.spec).toEqual(spec);
  expect(await store.get('nope')).toBeUndefined();
});

test('a spec larger than one 64 KiB property is split and read back intact', async () => {
  const store = await newStore();
  const env: Record<string, string> = {};
  for (let i = 0; i < 100; i++) env[`VAR_${i}`] = 'x'.repeat(1500); // ~150 000 characters of JSON
  const spec = makeSpec({ mpi: { runtime: 'openmpi', command: './app', env } });
  await create(store, 'big-spec', spec);
  const got = await store.get('big-spec');
  expect(got!.spec).toEqual(spec);
  // A later, smaller write must not leave stale chunks behind (Replace, not Merge).
  await store.update('big-spec', { result: { exitCode: 0, timings: {} } });
  expect((await store.get('big-spec'))!.spec).toEqual(spec);
});

test('transition follows the state machine, records events in order, and rejects illegal moves', async () => {
  let t = Date.parse('2026-01-01T00:00:00.000Z');
  const store = await newStore(() => new Date((t += 1000)));
  await create(store, 'walk');
  const path: JobState[] = ['Provisioning', 'StagingData', 'Running', 'CleaningUp', 'Succeeded'];
  for (const to of path) {
    const out = await store.transition('walk', to, `to ${to}`, to === 'Provisioning' ? { batchPoolId: 'pool-walk' } : undefined);
    expect(out.applied).toBe(true);
    expect(out.job.state).toBe(to);
  }
  const job = await store.get('walk');
  expect(job).toMatchObject({ state: 'Succeeded', batchPoolId: 'pool-walk', eventSeq: 6 });
  const events = await store.events('walk');
  expect(events.map((e) => e.to)).toEqual(['Submitted', ...path]);
  expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6]);

  await expect(store.transition('walk', 'Running', 'resurrect')).rejects.toThrow(IllegalTransitionError);
  await expect(store.transition('walk', 'Running', 'resurrect')).rejects.toThrow(/Succeeded → Running/);
  expect((await store.get('walk'))!.state).toBe('Succeeded'); // nothing overwritten
  await expect(store.transition('ghost', 'Provisioning', 'x')).rejects.toThrow(JobNotFoundError);
});

test('a repeated transition to the current state is a no-op, not an error and not a second event', async () => {
  const store = await newStore();
  await create(store, 'repeat');
  await store.transition('repeat', 'Provisioning', 'first');
  const again = await store.transition('repeat', 'Provisioning', 'retried activity');
  expect(again.applied).toBe(false);
  expect((await store.events('repeat')).filter((e) => e.to === 'Provisioning')).toHaveLength(1);
});

test('two writers racing: each transition is applied once, on the state it was checked against', async () => {
  const store = await newStore();
  await create(store, 'duel');
  await store.transition('duel', 'Provisioning', 'go');
  // Writer A moves forward, writer B fails the job: both start from Provisioning. Whichever commits
  // second re-reads; Running → CleaningUp is legal, and CleaningUp → Running is not.
  const [a, b] = await Promise.allSettled([store.transition('duel', 'Running', 'writer A'), store.transition('duel', 'CleaningUp', 'writer B')]);
  const final = (await store.get('duel'))!;
  expect(final.state).toBe('CleaningUp');
  expect(b.status).toBe('fulfilled');
  const events = await store.events('duel');
  const seqs = events.filter((e) => e.kind === 'transition').map((e) => e.seq);
  expect(seqs).toEqual(seqs.map((_, i) => i + 1)); // no gap, no duplicate
  if (a.status === 'rejected') {
    expect(a.reason).toBeInstanceOf(IllegalTransitionError); // B won first; A re-checked and refused
    expect(events.map((e) => e.to)).toEqual(['Submitted', 'Provisioning', 'CleaningUp']);
  } else {
    expect(events.map((e) => e.to)).toEqual(['Submitted', 'Provisioning', 'Running', 'CleaningUp']);
  }
});

test('concurrent updates with function patches lose no increment (ETag retry re-evaluates the patch)', async () => {
  const store = await newStore();
  await create(store, 'counter');
  await Promise.all(
    Array.from({ length: 8 }, () => store.update('counter', (job) => ({ progress: { n: ((job.progress as { n?: number } | null)?.n ?? 0) + 1 } }))),
  );
  expect((await store.get('counter'))!.progress).toEqual({ n: 8 });
});

test('appendEvent with an eventId and time is idempotent and interleaves with transitions by time', async () => {
  let t = Date.parse('2026-02-01T00:00:00.000Z');
  const store = await newStore(() => new Date((t += 1000)));
  await create(store, 'notes');
  const at = new Date(t + 500).toISOString();
  await store.appendEvent('notes', { reason: 'pulled 1/2', at, eventId: 'pull-1', data: { node: 'n1' } });
  await store.appendEvent('notes', { reason: 'pulled 1/2', at, eventId: 'pull-1', data: { node: 'n1' } });
  await store.transition('notes', 'Provisioning', 'go');
  const events = await store.events('notes');
  expect(events.map((e) => e.kind)).toEqual(['transition', 'note', 'transition']);
  expect(events[1]).toMatchObject({ reason: 'pulled 1/2', data: { node: 'n1' }, eventId: 'pull-1' });
});

test('list filters by state, tag and creation range, and pages with continuation tokens', async () => {
  let t = Date.parse('2026-03-01T00:00:00.000Z');
  const store = await newStore(() => new Date((t += 60_000)));
  for (let i = 0; i < 12; i++) {
    const id = `list-${String(i).padStart(2, '0')}`;
    await create(store, id, makeSpec({ tags: { parity: i % 2 === 0 ? 'even' : 'odd', ...(i < 3 ? { vip: 'yes' } : {}) } }));
    if (i % 3 === 0) await store.transition(id, 'Provisioning', 'go');
  }
  // Paging with top=5 walks all 12 rows exactly once.
  const seen: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const page = await store.list({ top: 5, continuationToken: token });
    expect(page.jobs.length).toBeLessThanOrEqual(5);
    seen.push(...page.jobs.map((j) => j.id));
    token = page.continuationToken;
    pages += 1;
  } while (token && pages < 10);
  expect(seen.sort()).toEqual(Array.from({ length: 12 }, (_, i) => `list-${String(i).padStart(2, '0')}`));
  expect(pages).toBeGreaterThanOrEqual(3);

  const provisioning = await store.list({ state: 'Provisioning' });
  expect(provisioning.jobs.map((j) => j.id).sort()).toEqual(['list-00', 'list-03', 'list-06', 'list-09']);
  const either = await store.list({ state: ['Provisioning', 'Submitted'] });
  expect(either.jobs).toHaveLength(12);

  const odd = await store.list({ tag: { key: 'parity', value: 'odd' } });
  expect(odd.jobs.map((j) => j.id)).toEqual(['list-01', 'list-03', 'list-05', 'list-07', 'list-09', 'list-11']);
  const vip = await store.list({ tag: { key: 'vip' } });
  expect(vip.jobs.map((j) => j.id)).toEqual(['list-00', 'list-01', 'list-02']);

  const all = (await store.list()).jobs;
  const from = all.find((j) => j.id === 'list-04')!.createdAt;
  const to = all.find((j) => j.id === 'list-08')!.createdAt;
  const range = await store.list({ createdFrom: from, createdTo: to });
  expect(range.jobs.map((j) => j.id)).toEqual(['list-04', 'list-05', 'list-06', 'list-07']);

  // Filters and paging together: a filtered scan with top=1 still finds every match.
  const oddPaged: string[] = [];
  token = undefined;
  do {
    const page = await store.list({ tag: { key: 'parity', value: 'odd' }, top: 1, continuationToken: token });
    oddPaged.push(...page.jobs.map((j) => j.id));
    token = page.continuationToken;
  } while (token);
  expect(oddPaged).toEqual(odd.jobs.map((j) => j.id));

  await expect(store.list({ continuationToken: 'not-a-token' })).rejects.toThrow(InvalidContinuationTokenError);
});

test('row layout: PartitionKey = job id, RowKey "job", one tag_<hex key> property per tag', async () => {
  const store = await newStore();
  await create(store, 'named', makeSpec({ tags: { project: 'cfd' } }));
  const jobs = TableClient.fromConnectionString(azurite.connectionString(), `Jobs${process.pid}x${tableCounter}`, { allowInsecureConnection: true });
  const entity = await jobs.getEntity('named', 'job');
  expect(entity.state).toBe('Submitted');
  expect(entity[`tag_${Buffer.from('project').toString('hex')}`]).toBe('cfd');
});

test('a damaged row never fails a list: it is left out and named, the others are listed', async () => {
  const store = await newStore();
  await create(store, 'good-a');
  await create(store, 'good-b');
  const jobs = TableClient.fromConnectionString(azurite.connectionString(), `Jobs${process.pid}x${tableCounter}`, { allowInsecureConnection: true });
  await jobs.createEntity({ partitionKey: 'damaged', rowKey: 'job', id: 'damaged', state: 'Exploded', spec: '{not json' });
  const page = await store.list({});
  expect(page.jobs.map((j) => j.id).sort()).toEqual(['good-a', 'good-b']);
  expect(page.unreadable).toEqual([{ id: 'damaged', error: expect.stringMatching(/not a job state/) }]);
});

/**
 * Deterministic ETag conflicts: writer A's table client is the real one, but its first replace waits
 * until writer B has committed, so A's write carries a stale ETag and Azurite answers 412.
 */
async function pausedWriter(jobsTable: string, eventsTable: string): Promise<{ store: JobStore; reachedWrite: Promise<void>; release: () => void }> {
  const conn = azurite.connectionString();
  const real = TableClient.fromConnectionString(conn, jobsTable, { allowInsecureConnection: true });
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let reached!: () => void;
  const reachedWrite = new Promise<void>((r) => (reached = r));
  let paused = false;
  const gated = new Proxy(real, {
    get(target, prop, receiver) {
      if (prop === 'updateEntity') {
        return async (...args: Parameters<TableClient['updateEntity']>) => {
          if (!paused) {
            paused = true;
            reached();
            await gate;
          }
          return target.updateEntity(...args);
        };
      }
      const v = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  const events = TableClient.fromConnectionString(conn, eventsTable, { allowInsecureConnection: true });
  return { store: new JobStore(gated, events), reachedWrite, release };
}

test('ETag conflict: the loser re-reads and is refused when its move is no longer legal', async () => {
  const b = await newStore();
  const names = [`Jobs${process.pid}x${tableCounter}`, `JobEvents${process.pid}x${tableCounter}`] as const;
  await create(b, 'stale-1');
  await b.transition('stale-1', 'Provisioning', 'go');
  const a = await pausedWriter(...names);
  const aMove = a.store.transition('stale-1', 'Running', 'writer A');
  await a.reachedWrite; // A has read Provisioning and computed Provisioning → Running
  await b.transition('stale-1', 'CleaningUp', 'writer B: cancel');
  a.release();
  await expect(aMove).rejects.toThrow(/CleaningUp → Running/);
  const events = await b.events('stale-1');
  expect(events.map((e) => e.to)).toEqual(['Submitted', 'Provisioning', 'CleaningUp']);
});

test('ETag conflict: the loser re-reads and re-applies when its move is still legal', async () => {
  const b = await newStore();
  const names = [`Jobs${process.pid}x${tableCounter}`, `JobEvents${process.pid}x${tableCounter}`] as const;
  await create(b, 'stale-2');
  await b.transition('stale-2', 'Provisioning', 'go');
  const a = await pausedWriter(...names);
  const aMove = a.store.transition('stale-2', 'CleaningUp', 'writer A: failure', { error: { code: 'X', message: 'boom' } });
  await a.reachedWrite;
  await b.transition('stale-2', 'Running', 'writer B');
  a.release();
  const out = await aMove;
  expect(out).toMatchObject({ applied: true, job: { state: 'CleaningUp', error: { code: 'X' } } });
  expect(out.event).toMatchObject({ from: 'Running', to: 'CleaningUp', seq: 4 });
  const events = await b.events('stale-2');
  expect(events.map((e) => e.to)).toEqual(['Submitted', 'Provisioning', 'Running', 'CleaningUp']);
});

test('recordSubmission: created once, repeats recognised, a different spec under the same id is a conflict with paths', async () => {
  const store = await newStore();
  const spec = makeSpec({ id: 'sub-1' });
  const first = await recordSubmission(store, { spec, owner: 'alice' });
  expect(first.outcome).toBe('created');
  const again = await recordSubmission(store, { spec, owner: 'alice' });
  expect(again).toMatchObject({ outcome: 'repeat', job: { id: 'sub-1' } });
  const changed = makeSpec({ id: 'sub-1', pool: { vmSize: 'Standard_HB120rs_v3', nodes: 3 } });
  const conflict = await recordSubmission(store, { spec: changed, owner: 'alice' });
  expect(conflict).toMatchObject({ outcome: 'conflict', differingPaths: ['pool.nodes'] });
  // Another owner under the same id learns nothing of the job, whether its spec is the same or not.
  expect(await recordSubmission(store, { spec, owner: 'bob' })).toEqual({ outcome: 'taken', id: 'sub-1' });
  expect(await recordSubmission(store, { spec: changed, owner: 'bob' })).toEqual({ outcome: 'taken', id: 'sub-1' });
  expect((await store.get('sub-1'))!.owner).toBe('alice'); // nothing overwritten

  // Queue redelivery: no id in the spec, the message id is the idempotency key.
  const anon = makeSpec();
  const [a, b] = await Promise.all([
    recordSubmission(store, { spec: anon, idempotencyKey: 'msg-42', owner: 'queue' }),
    recordSubmission(store, { spec: anon, idempotencyKey: 'msg-42', owner: 'queue' }),
  ]);
  expect([a.outcome, b.outcome].sort()).toEqual(['created', 'repeat']);
  if (a.outcome === 'taken' || b.outcome === 'taken') throw new Error('same owner: never taken');
  expect(a.job.id).toBe(b.job.id);
  expect(a.job.id).toMatch(/^k-[a-f0-9]{32}$/);

  // HTTP submissions derive ids per owner: two callers' identical specs are two jobs, each repeatable by its owner.
  const mine = await recordSubmission(store, { spec: anon, owner: 't/alice', ownerName: 'Alice', idScope: 't/alice' });
  const theirs = await recordSubmission(store, { spec: anon, owner: 't/bob', idScope: 't/bob' });
  if (mine.outcome !== 'created' || theirs.outcome !== 'created') throw new Error(`expected two new jobs, got ${mine.outcome} and ${theirs.outcome}`);
  expect(mine.job.id).toMatch(/^h-[a-f0-9]{32}$/);
  expect(theirs.job.id).not.toBe(mine.job.id);
  expect(mine.job).toMatchObject({ owner: 't/alice', ownerName: 'Alice' });
  expect((await store.get(mine.job.id))!.ownerName).toBe('Alice');
  expect(await recordSubmission(store, { spec: anon, owner: 't/alice', idScope: 't/alice' })).toMatchObject({ outcome: 'repeat', job: { id: mine.job.id } });
});

test('list filters by owner on the server (the tenancy filter)', async () => {
  const store = await newStore();
  const spec = makeSpec();
  for (const [id, owner] of [
    ['own-a1', 't/a'],
    ['own-a2', 't/a'],
    ['own-b1', 't/b'],
    ['own-q1', "it's 'quoted'"],
  ] as const) {
    await store.createIfAbsent({ id, spec, specHash: specHash(spec), owner });
  }
  const ids = async (owner?: string) =>
    (await store.list({ owner, top: 1000 })).jobs
      .map((j) => j.id)
      .filter((id) => id.startsWith('own-'))
      .sort();
  expect(await ids('t/a')).toEqual(['own-a1', 'own-a2']);
  expect(await ids('t/b')).toEqual(['own-b1']);
  expect(await ids("it's 'quoted'")).toEqual(['own-q1']);
  expect(await ids("t/a' or owner ne '")).toEqual([]);
  expect(await ids()).toEqual(['own-a1', 'own-a2', 'own-b1', 'own-q1']);
});

test('requestCancel: marks once, keeps the first time, reports finished jobs and unknown ids', async () => {
  const store = await newStore();
  await create(store, 'cancel-me');
  const first = await requestCancel(store, 'cancel-me', new Date('2026-05-01T00:00:00.000Z'));
  expect(first).toMatchObject({ outcome: 'requested', job: { cancelRequestedAt: '2026-05-01T00:00:00.000Z' } });
  const second = await requestCancel(store, 'cancel-me', new Date('2026-05-01T00:05:00.000Z'));
  expect(second).toMatchObject({ outcome: 'requested', job: { cancelRequestedAt: '2026-05-01T00:00:00.000Z' } });
  await store.transition('cancel-me', 'Cancelled', 'cancelled before provisioning');
  expect((await requestCancel(store, 'cancel-me')).outcome).toBe('finished');
  expect((await requestCancel(store, 'nobody')).outcome).toBe('notFound');
});
