/**
 * A cancel that comes too late is told so over HTTP: a job in CleaningUp answers 409 JobFinishing with the state
 * cleanup will end it in (the pipeline records it on entering CleaningUp), and no cancel is recorded on it; a job
 * that already ended keeps its 200 `cancelRequested: false`. On the old API the CleaningUp job answered 202
 * `cancelRequested: true` and then ended Succeeded.
 */
import { startStack, type Stack } from '../../local/stack';
import { parseJobSpec } from '../../shared/core/spec';
import { JobStore, type JobState, type TerminalState } from '../../shared/adapters/state';

let stack: Stack;
let store: JobStore;

beforeAll(async () => {
  stack = await startStack({ port: 0, demoImage: false, sharedKeys: true, logDestination: '/dev/null' });
  store = JobStore.fromConnectionString(stack.azurite.connectionString());
  await store.ensureTables();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

const spec = (() => {
  const r = parseJobSpec({ name: 'finishing', pool: { vmSize: 'Standard_D2s_v5', nodes: 1 }, mpi: { runtime: 'openmpi', command: 'true' } });
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
})();

/** A job row walked to `to` the way the pipeline walks it (no orchestration behind it: none is needed to answer). */
async function jobIn(id: string, to: JobState, endingAs?: TerminalState): Promise<void> {
  await store.createIfAbsent({ id, spec, specHash: 'x', owner: 'operator' });
  for (const s of ['Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp'] as const) {
    await store.transition(id, s, s === 'CleaningUp' ? (endingAs ?? 'cleanup') : s, s === 'CleaningUp' && endingAs ? { endingAs } : undefined);
    if (s === to) return;
  }
  await store.transition(id, to, 'ended');
}

async function cancel(id: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${stack.baseUrl}/api/jobs/${id}`, { method: 'DELETE', headers: { 'x-functions-key': stack.host.keys.functionKey } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

test('a job in CleaningUp: 409 JobFinishing with the state it will end in, and no cancel recorded', async () => {
  await jobIn('finishing-ok', 'CleaningUp', 'Succeeded');
  const answer = await cancel('finishing-ok');
  expect(answer.status).toBe(409);
  expect(answer.body).toMatchObject({ error: 'JobFinishing', endsAs: 'Succeeded', cancelRequested: false, job: { id: 'finishing-ok', state: 'CleaningUp' } });
  expect(answer.body.message).toBe('job finishing-ok is cleaning up and it will end Succeeded: too late to cancel');
  expect((await store.get('finishing-ok'))?.cancelRequestedAt).toBeUndefined();
}, 60_000);

test('a job in CleaningUp whose end was not recorded: 409 JobFinishing without endsAs', async () => {
  await jobIn('finishing-unknown', 'CleaningUp');
  const answer = await cancel('finishing-unknown');
  expect(answer.status).toBe(409);
  expect(answer.body.error).toBe('JobFinishing');
  expect(answer.body.endsAs).toBeUndefined();
}, 60_000);

test('a job that already ended: 200 with cancelRequested false, as before', async () => {
  await jobIn('finished-ok', 'Succeeded', 'Succeeded');
  const answer = await cancel('finished-ok');
  expect(answer.status).toBe(200);
  expect(answer.body).toMatchObject({ cancelRequested: false, job: { id: 'finished-ok', state: 'Succeeded' } });
}, 60_000);
