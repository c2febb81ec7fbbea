/**
 * The fuzz campaigns' documents (tests/security/fuzz.test.ts through the full stack, tests/security/fuzzIntake.test.ts
 * in process): valid specs with one field made hostile (wrong types, control and bidi characters, prototype keys, deep
 * nesting, huge values), random JSON values and random text, sent as JSON or YAML.
 *
 * Seeded: FUZZ_SEED replays a campaign (default: a fixed seed, so a run is reproducible without it and a failure found
 * by a run with another seed is replayed by printing it). The counts are settings of each file (FUZZ_RUNS,
 * FUZZ_STACK_RUNS), so a soak run can ask for more than the default suite runs.
 */
import fc from 'fast-check';
import { stringify } from 'yaml';
import { validSpecInput } from './specArbitraries';

/** The default seed: fixed, so the default suite runs the same cases every time. */
export const DEFAULT_FUZZ_SEED = 20_261_127;

/** FUZZ_SEED, or the fixed default. */
export function fuzzSeed(): number {
  const raw = process.env.FUZZ_SEED;
  if (raw === undefined || raw === '') return DEFAULT_FUZZ_SEED;
  const seed = Number(raw);
  if (!Number.isInteger(seed)) throw new Error(`FUZZ_SEED must be an integer, got ${JSON.stringify(raw)}`);
  return seed;
}

/** A positive integer count from the environment variable `name`, or `fallback`. */
export function fuzzCount(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

export type Obj = Record<string, unknown>;

const nested = (depth: number): unknown => (depth === 0 ? 'x' : depth % 2 ? [nested(depth - 1)] : { a: nested(depth - 1) });
const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom(
    '\u2028',
    '\u2029',
    '\u0085',
    '\u202e',
    '\u2066',
    '\u0000',
    'a\nb',
    '$(id)',
    '`id`',
    '../../etc/passwd',
    '__proto__',
    '',
    ' ',
    '-rf',
    'users/',
    'users/queue/',
    'users/queue/../operator/',
    'users/operator',
    'users//queue/',
    '/users/queue/x',
  ),
  fc.integer(),
  fc.double(),
  fc.constantFrom(Number.MAX_SAFE_INTEGER, -0, 1e308),
  fc.boolean(),
  fc.constant(null),
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 1, max: 40 }).map(nested),
  fc.integer({ min: 1_000, max: 150_000 }).map((n) => 'y'.repeat(n)),
  fc.constant(JSON.parse('{"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}') as unknown),
);
const FIELD_PATHS = [
  ['id'],
  ['name'],
  ['tags'],
  ['tags', 'k'],
  ['pool'],
  ['pool', 'nodes'],
  ['pool', 'vmSize'],
  ['pool', 'poolId'],
  ['pool', 'image'],
  ['pool', 'startTask'],
  ['pool', 'startTask', 'command'],
  ['container'],
  ['container', 'runtime'],
  ['container', 'images'],
  ['container', 'registry'],
  ['data'],
  ['data', 'inputs'],
  ['data', 'inputs', '0'],
  ['data', 'destination'],
  ['data', 'stagingAccounts'],
  ['mpi'],
  ['mpi', 'command'],
  ['mpi', 'env'],
  ['mpi', 'options'],
  ['mpi', 'processesPerNode'],
  ['limits'],
  ['limits', 'maxWallClock'],
  ['cleanup'],
  ['__proto__'],
  ['constructor'],
  ['prototype'],
  ['extra'],
  // The data-area rule's inputs (issue 23): paths in and around users/<ownerKey>/.
  ['data', 'inputs', '0', 'prefix'],
  ['outputs'],
  ['outputs', 'prefix'],
  ['files'],
  ['files', '0'],
  ['files', '0', 'prefix'],
  ['files', '0', 'blob'],
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

/**
 * A spec accepted by the schema, made cheap: valid documents would start real pipelines, so that a campaign stays a
 * test of the door and not a load test, a valid spec names an input in storage jobs may not name (the host storage:
 * refused after full validation, 400), except one in fifty, which runs on a pool that does not exist (accepted, ends
 * Failed at its first Batch call).
 */
const cheapValid = fc.tuple(validSpecInput, fc.integer({ min: 0, max: 49 })).map(([spec, dice]): Obj => {
  if (dice === 0) {
    const id = typeof spec.id === 'string' ? spec.id : undefined;
    return {
      ...spec,
      ...(id ? { id: `fz-${id}`.slice(0, 64) } : {}),
      pool: { poolId: 'fuzz-no-such-pool', nodes: 1 },
      container: { runtime: 'none' },
      data: { inputs: [] },
      cleanup: undefined,
    };
  }
  return { ...spec, data: { ...(spec.data as Obj | undefined), inputs: [{ account: 'devstoreaccount1', container: 'azure-webjobs-hosts' }] } };
});

/** One document: mostly a valid spec with one hostile field, some valid specs, random JSON and random text. */
export const documentArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(cheapValid, fc.constantFrom(...FIELD_PATHS), hostileValue).map(([spec, keys, v]) => setPath(spec, keys, v)) },
  { weight: 2, arbitrary: cheapValid },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }) },
  { weight: 1, arbitrary: fc.string({ maxLength: 300 }) },
);

/** An HTTP submission: the body as sent and its content type. */
export interface HttpCase {
  body: string;
  contentType: string;
}

export const httpCaseArb: fc.Arbitrary<HttpCase> = fc
  .tuple(documentArb, fc.constantFrom('application/json', 'application/yaml', 'text/plain'))
  .map(([doc, contentType]) => {
    if (typeof doc === 'string') return { body: doc, contentType };
    let body: string;
    try {
      body = contentType === 'application/json' ? (JSON.stringify(doc) ?? 'null') : stringify(doc);
    } catch {
      body = JSON.stringify(doc) ?? 'null';
    }
    return { body, contentType };
  });

/** Largest queue message text the campaigns send: a queue message is at most 64 KiB, base64-encoded. */
export const MAX_QUEUE_TEXT_BYTES = 48_000;

/**
 * Queue message texts: every fourth document claims an id (`fq-<n>`), so rejected submissions leave rows (for the
 * sweep to read); documents too large for a queue message are left out (they cannot be sent at all).
 */
export function queueTexts(runs: number, seed: number): string[] {
  const docs = fc
    .sample(fc.tuple(documentArb, fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 1_000_000 })), { numRuns: runs, seed })
    .map(([doc, dice, n]) => (dice === 0 && doc && typeof doc === 'object' && !Array.isArray(doc) ? { ...(doc as Obj), id: `fq-${n}` } : doc));
  return docs.map((doc) => (typeof doc === 'string' ? doc : (JSON.stringify(doc) ?? 'null'))).filter((t) => Buffer.byteLength(t) <= MAX_QUEUE_TEXT_BYTES);
}

/** Runs `each` over `items`, `width` at a time. */
export async function inPool<T>(items: T[], width: number, each: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await each(items[i], i);
      }
    }),
  );
}
