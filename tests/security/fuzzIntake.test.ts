/**
 * The fuzz campaign of both doors, in process: the documents of tests/helpers/fuzzCases.ts (4,000 HTTP bodies and
 * 800 queue messages by default, ~40 CPU-seconds with the store on Azurite; 10,000 is the soak size; FUZZ_RUNS sets
 * the HTTP count, the queue gets a fifth of it; FUZZ_SEED replays a
 * printed seed) through intake itself (shared/adapters/intake/submit.ts) over the real JobStore on Azurite, with the local
 * stack's data-access, container and shared-area settings (loadConfig of localAppSettings), without an HTTP host.
 *
 * The properties are the full-stack campaign's (tests/security/fuzz.test.ts, which keeps a few hundred cases through
 * the real doors): intake never throws on any document (a throw is the door's 5xx, or a queue message retried into
 * the poison queue); each outcome is one the door answers with a 4xx or a 2xx; every refusal names its problems
 * (a path and a message each), none an internal validation error; an accepted job is recorded and started once. The
 * queue door's handling of a refusal (functions/jobsQueue.ts: a rejected message that claims an id is recorded as a
 * Failed job) runs on every refusal too and must not throw either.
 */
import { TableClient } from '@azure/data-tables';
import fc from 'fast-check';
import { parse as parseYaml } from 'yaml';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { localAppSettings } from '../../local/stack';
import type { BatchEmulatorHandle } from '../../local/batch';
import { loadConfig } from '../../shared/adapters/config';
import { OPERATOR, QUEUE_DATA_CALLER, QUEUE_OWNER, dataCallerOf } from '../../shared/adapters/auth';
import { submitJob, type OrchestrationStarter, type SubmitOutcome, type SubmitRequest } from '../../shared/adapters/intake/submit';
import { dataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { containerPolicy } from '../../shared/core/intake/containerPolicy';
import { poolCallerOf, queuePoolCaller, type PoolCaller, type PoolGate } from '../../shared/core/intake/poolAccess';
import { claimedJobId, recordRejectedSubmission } from '../../shared/adapters/intake/rejected';
import { DATA_AREA_FORBIDDEN } from '../../shared/adapters/intake/dataAreas';
import { DependentsStore } from '../../shared/adapters/scheduling/dependentsStore';
import type { SchedulingPolicy } from '../../shared/core/scheduling/intake';
import { DEFAULT_QUEUE } from '../../shared/core/spec/sections/scheduling';
import { JobStore } from '../../shared/adapters/state';
import { toJobView } from '../../shared/core/state/view';
import { fuzzCount, fuzzSeed, httpCaseArb, inPool, queueTexts } from '../helpers/fuzzCases';

const SEED = fuzzSeed();
const HTTP_CASES = fuzzCount('FUZZ_RUNS', 4_000);
const QUEUE_CASES = Math.max(1, Math.round(HTTP_CASES / 5));

let azurite: AzuriteHandle;
let store: JobStore;
let scheduling: SchedulingPolicy;
let policy: Pick<SubmitRequest, 'dataAccess' | 'containers'>;
const started = new Map<string, number>();

/** The Durable client's part of intake: records each start (a second start of one id would be a bug). */
const starter: OrchestrationStarter = {
  async ensureStarted(id) {
    started.set(id, (started.get(id) ?? 0) + 1);
    return started.get(id) === 1 ? 'started' : 'exists';
  },
};

/** The campaign's specs name no existing pool (cheapValid's is `fuzz-no-such-pool`): the pool gate finds none. */
const noPools = (caller: PoolCaller): PoolGate => ({
  caller,
  shared: [],
  lookup: { inspect: async () => ({ exists: false }), jobOwner: async () => undefined },
});

beforeAll(async () => {
  azurite = await startAzurite();
  // The local stack's settings, so the data-access rule and the shared areas are the ones the stack campaign meets.
  const batch = { url: 'http://127.0.0.1:9', accountName: 'fuzzbatch', accountKey: Buffer.from('fuzz').toString('base64') } as BatchEmulatorHandle;
  const cfg = loadConfig(localAppSettings(azurite, batch));
  policy = { dataAccess: dataAccessPolicy(cfg), containers: containerPolicy(cfg) };
  const cs = azurite.connectionString();
  const table = (name: string) => TableClient.fromConnectionString(cs, name, { allowInsecureConnection: true });
  store = new JobStore(table('FuzzJobs'), table('FuzzJobEvents'));
  await store.ensureTables();
  const dependents = table('FuzzJobDependents');
  await dependents.createTable();
  scheduling = { queues: [DEFAULT_QUEUE], dependents: new DependentsStore(dependents) };
  console.log(`fuzz seed ${SEED} (replay with FUZZ_SEED=${SEED}), ${HTTP_CASES} HTTP and ${QUEUE_CASES} queue cases in process`);
}, 60_000);
afterAll(async () => {
  await azurite?.stop();
});

/** What is wrong with an outcome as a door would answer it (empty: nothing). */
async function problemsOf(outcome: SubmitOutcome): Promise<string[]> {
  switch (outcome.kind) {
    case 'invalid':
    case 'forbidden':
    case 'poolForbidden':
      if (outcome.errors.length === 0) return [`${outcome.kind} without a reason`];
      return outcome.errors
        .filter((e) => typeof e.path !== 'string' || typeof e.message !== 'string' || !e.message || e.message.startsWith('internal validation error'))
        .map((e) => `${outcome.kind}: ${JSON.stringify(e).slice(0, 300)}`);
    case 'accepted': {
      // The answer renders the job; the row is there and its orchestration was started once.
      toJobView(outcome.job, { baseUrl: 'http://fuzz.invalid' });
      const row = await store.get(outcome.job.id);
      if (!row) return [`accepted ${outcome.job.id} without a row`];
      if (outcome.orchestration !== 'skipped' && (started.get(outcome.job.id) ?? 0) < 1) return [`accepted ${outcome.job.id} without a start`];
      return [];
    }
    case 'conflict':
    case 'taken':
      return [];
  }
}

/** A connection to Azurite that broke (seen under heavy load: EPIPE): the door answers 503 and the client retries. */
const TRANSPORT_CODES = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT', 'REQUEST_SEND_ERROR']);
function transient(err: unknown): boolean {
  const e = err as { code?: unknown; statusCode?: unknown };
  return typeof e?.code === 'string' && TRANSPORT_CODES.has(e.code) && e.statusCode === undefined;
}

/**
 * A storage step of a door, retried (as a client retries a 503 and the queue redelivers) only when the connection to
 * Azurite broke: a repeat is safe (intake is idempotent), and anything else thrown is what the campaign looks for.
 */
async function retrying<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (attempt >= 4 || !transient(err)) throw err;
      await new Promise((r) => setTimeout(r, 100 * attempt));
    }
  }
}

function describeThrow(err: unknown, sent: string): string {
  return `threw ${err instanceof Error ? err.stack?.split('\n').slice(0, 4).join(' | ') : String(err)} on ${sent.slice(0, 200)}`;
}

it(`${HTTP_CASES} generated POST /api/jobs bodies through intake: none throws, each answered with a reason`, async () => {
  const cases = fc.sample(httpCaseArb, { numRuns: HTTP_CASES, seed: SEED });
  const kinds = new Map<string, number>();
  const problems: string[] = [];
  await inPool(cases, 8, async (c) => {
    // The HTTP door answers an empty body 400 itself, before intake (functions/jobsHttp.ts).
    if (!c.body.trim()) return void kinds.set('empty', (kinds.get('empty') ?? 0) + 1);
    try {
      const outcome = await retrying(() =>
        submitJob(store, starter, {
          body: c.body,
          contentType: c.contentType,
          ...policy,
          owner: OPERATOR.id,
          ownerName: OPERATOR.name,
          idScope: OPERATOR.id,
          caller: dataCallerOf(OPERATOR),
          scheduling,
          pools: noPools(poolCallerOf(OPERATOR)),
        }),
      );
      kinds.set(outcome.kind, (kinds.get(outcome.kind) ?? 0) + 1);
      problems.push(...(await problemsOf(outcome)));
    } catch (err) {
      problems.push(describeThrow(err, c.body));
    }
  });
  console.log(`fuzz intake (HTTP door) outcomes: ${JSON.stringify(Object.fromEntries(kinds))}`);
  expect(problems).toEqual([]);
  // The campaign reaches both sides of the door: refusals and (the cheap) accepted jobs.
  expect(kinds.get('invalid') ?? 0).toBeGreaterThan(HTTP_CASES / 2);
  if (HTTP_CASES >= 1_000) expect(kinds.get('accepted') ?? 0).toBeGreaterThan(0);
}, 600_000);

/** The queue trigger's text → value: JSON is handed over decoded (as the Functions host does), anything else as text. */
function queueMessageValue(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

it(`${QUEUE_CASES} generated queue messages through intake: none throws, refusals that claim an id are recorded`, async () => {
  const texts = queueTexts(QUEUE_CASES, SEED + 1);
  expect(texts.length).toBeGreaterThan(QUEUE_CASES * 0.9);
  const kinds = new Map<string, number>();
  const problems: string[] = [];
  const recorded: string[] = [];
  await inPool(texts, 8, async (text) => {
    const message = queueMessageValue(text);
    try {
      const outcome = await retrying(() =>
        submitJob(store, starter, {
          body: message,
          ...policy,
          owner: QUEUE_OWNER,
          caller: QUEUE_DATA_CALLER,
          scheduling,
          pools: noPools(queuePoolCaller(QUEUE_OWNER)),
        }),
      );
      kinds.set(outcome.kind, (kinds.get(outcome.kind) ?? 0) + 1);
      problems.push(...(await problemsOf(outcome)));
      if (outcome.kind === 'invalid' || outcome.kind === 'forbidden') {
        // As the queue door does (functions/jobsQueue.ts): a refusal that claims an id is recorded as a Failed job.
        const raw = typeof message === 'string' ? tryYaml(message) : message;
        const id = claimedJobId(raw);
        const code = outcome.kind === 'forbidden' ? DATA_AREA_FORBIDDEN : 'InvalidSpec';
        if (id && (await retrying(() => recordRejectedSubmission(store, id, raw, outcome.errors, 'queue', code))) === 'recorded') recorded.push(id);
      }
    } catch (err) {
      problems.push(describeThrow(err, text));
    }
  });
  console.log(`fuzz intake (queue door) outcomes: ${JSON.stringify(Object.fromEntries(kinds))}, ${recorded.length} refusals recorded`);
  expect(problems).toEqual([]);
  // Every recorded refusal is a Failed job with its reason.
  const rows = await Promise.all(recorded.slice(0, 50).map((id) => store.get(id)));
  expect(rows.map((r) => r?.state)).toEqual(rows.map(() => 'Failed'));
  if (QUEUE_CASES >= 200) expect(recorded.length).toBeGreaterThan(0);
}, 600_000);

function tryYaml(text: string): unknown {
  try {
    return parseYaml(text) as unknown;
  } catch {
    return undefined;
  }
}
