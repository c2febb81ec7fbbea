/**
 * The storage calls intake makes (shared/adapters/intake/submit.ts over the real JobStore and Azurite tables; the table
 * clients are observed, not replaced, and the orchestration starter is a recording stand-in for the Durable client,
 * whose own calls tests/durable/hostBusy.test.ts counts):
 *  - a new job is one insert and one start: no read, no event write, no announcement (fails on the old intake:
 *    it wrote the creation event and announced it before starting);
 *  - the creation event is on the timeline through the row until the first transition writes it, which is announced
 *    and whose delivery carries both;
 *  - a repeat reads the existing row and asks for the start only if it is missing; a conflict starts nothing.
 */
import { TableClient } from '@azure/data-tables';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { submitJob, type OrchestrationStarter } from '../../shared/adapters/intake/submit';
import { queuePoolCaller, type PoolGate } from '../../shared/core/intake/poolAccess';
import type { DataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { JobStore, type JobEvent } from '../../shared/adapters/state';
import { pendingTransitions } from '../../shared/adapters/events/cursor';
import { DependentsStore } from '../../shared/adapters/scheduling/dependentsStore';
import type { SchedulingPolicy } from '../../shared/core/scheduling/intake';
import { DEFAULT_QUEUE } from '../../shared/core/spec/sections/scheduling';
import { fastSpec } from './support';

let azurite: AzuriteHandle;
let n = 0;

beforeAll(async () => {
  azurite = await startAzurite();
}, 60_000);
afterAll(async () => {
  await azurite?.stop();
});

const POLICY: DataAccessPolicy = { accounts: [], stagingAccounts: [] };

/** A TableClient whose method calls are logged as "<table>.<method>" (each still goes to Azurite). */
function observed(client: TableClient, log: string[]): TableClient {
  return new Proxy(client, {
    get(target, prop, recv) {
      const v = Reflect.get(target, prop, recv) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        if (typeof prop === 'string' && !['constructor'].includes(prop)) log.push(`${target.tableName}.${prop}`);
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function setup() {
  n += 1;
  const cs = azurite.connectionString();
  const calls: string[] = [];
  const announced: JobEvent[] = [];
  const jobs = TableClient.fromConnectionString(cs, `Jobs${n}`, { allowInsecureConnection: true });
  const events = TableClient.fromConnectionString(cs, `JobEvents${n}`, { allowInsecureConnection: true });
  const store = new JobStore(observed(jobs, calls), observed(events, calls), { onTransition: async (e) => void announced.push(e) });
  await store.ensureTables();
  const dependentsTable = TableClient.fromConnectionString(cs, `JobDependents${n}`, { allowInsecureConnection: true });
  await dependentsTable.createTable();
  const scheduling: SchedulingPolicy = { queues: [DEFAULT_QUEUE], dependents: new DependentsStore(observed(dependentsTable, calls)) };
  calls.length = 0;
  const starts: { id: string; justCreated: boolean }[] = [];
  const started = new Set<string>();
  const starter: OrchestrationStarter = {
    async ensureStarted(id, _spec, justCreated) {
      starts.push({ id, justCreated });
      if (started.has(id)) return 'exists';
      started.add(id);
      return 'started';
    },
  };
  return { store, calls, announced, starts, starter, scheduling, jobsTable: `Jobs${n}`, eventsTable: `JobEvents${n}` };
}

/** The pool gate of a queue submission on a deployment without pools (the specs name a pool that does not exist): no Batch pool, no job row read. */
const NO_POOLS: PoolGate = {
  caller: queuePoolCaller('queue'),
  shared: [],
  lookup: { inspect: async () => ({ exists: false }), jobOwner: async () => undefined },
};

test('a new job: one insert and one start, nothing read, no event written or announced', async () => {
  const { store, calls, announced, starts, starter, scheduling, jobsTable } = await setup();
  const outcome = await submitJob(store, starter, { body: fastSpec('calls-new'), owner: 'queue', dataAccess: POLICY, scheduling, pools: NO_POOLS });
  expect(outcome).toMatchObject({ kind: 'accepted', created: true, orchestration: 'started', job: { id: 'calls-new', state: 'Submitted' } });
  expect(calls).toEqual([`${jobsTable}.createEntity`]);
  expect(starts).toEqual([{ id: 'calls-new', justCreated: true }]);
  expect(announced).toEqual([]);
});

test('the creation event: on the timeline through the row, then written and delivered with the first transition', async () => {
  const { store, announced, starter, scheduling } = await setup();
  const outcome = await submitJob(store, starter, { body: fastSpec('calls-timeline'), owner: 'queue', dataAccess: POLICY, scheduling, pools: NO_POOLS });
  if (outcome.kind !== 'accepted') throw new Error(outcome.kind);
  expect(await store.events('calls-timeline')).toEqual([]);
  const job = (await store.get('calls-timeline'))!;
  expect((await store.events('calls-timeline', job)).map((e) => [e.seq, e.to])).toEqual([[1, 'Submitted']]);
  // What the event relay would send now (from the row's lastEvent): seq 1.
  expect(pendingTransitions(await store.events('calls-timeline'), job, 0).map((p) => p.seq)).toEqual([1]);

  await store.transition('calls-timeline', 'Provisioning', 'pool requested');
  expect(announced.map((e) => e.seq)).toEqual([2]);
  const after = (await store.get('calls-timeline'))!;
  const timeline = await store.events('calls-timeline');
  expect(timeline.map((e) => [e.seq, e.to])).toEqual([
    [1, 'Submitted'],
    [2, 'Provisioning'],
  ]);
  // The announcement of seq 2 makes its sender deliver everything due: seq 1 with it.
  expect(pendingTransitions(timeline, after, 0).map((p) => ('event' in p ? p.event.to : 'missing'))).toEqual(['Submitted', 'Provisioning']);
  // Given the row, the timeline has no duplicate.
  expect((await store.events('calls-timeline', after)).map((e) => e.seq)).toEqual([1, 2]);
});

test('a repeat reads the row and repairs its last event; a started job is not started again; a conflict starts nothing', async () => {
  const { store, calls, starts, starter, scheduling, jobsTable, eventsTable } = await setup();
  await submitJob(store, starter, { body: fastSpec('calls-repeat'), owner: 'queue', dataAccess: POLICY, scheduling, pools: NO_POOLS });
  calls.length = 0;
  const again = await submitJob(store, starter, { body: fastSpec('calls-repeat'), owner: 'queue', dataAccess: POLICY, scheduling, pools: NO_POOLS });
  expect(again).toMatchObject({ kind: 'accepted', created: false, orchestration: 'exists' });
  expect(calls).toEqual([`${jobsTable}.createEntity`, `${jobsTable}.getEntity`, `${eventsTable}.upsertEntity`]);
  expect(starts.map((s) => s.justCreated)).toEqual([true, false]);
  // The repair wrote the creation event: the timeline has it without the row.
  expect((await store.events('calls-repeat')).map((e) => e.seq)).toEqual([1]);

  calls.length = 0;
  const conflict = await submitJob(store, starter, {
    body: fastSpec('calls-repeat', 'false'),
    owner: 'queue',
    dataAccess: POLICY,
    scheduling,
    pools: NO_POOLS,
  });
  expect(conflict).toMatchObject({ kind: 'conflict', differingPaths: ['mpi.command'] });
  expect(calls).toEqual([`${jobsTable}.createEntity`, `${jobsTable}.getEntity`, `${eventsTable}.upsertEntity`]);
  expect(starts).toHaveLength(2);
});

test('an invalid spec touches no table', async () => {
  const { store, calls, starts, starter, scheduling } = await setup();
  const outcome = await submitJob(store, starter, { body: { name: 'x' }, owner: 'queue', dataAccess: POLICY, scheduling, pools: NO_POOLS });
  expect(outcome.kind).toBe('invalid');
  expect(calls).toEqual([]);
  expect(starts).toEqual([]);
});
