import fc from 'fast-check';
import {
  DEFAULT_POLL_SCHEDULE,
  backoffCeilingMs,
  classifyError,
  delayMs,
  pollDelayMs,
  pollSchedule,
} from '../../shared/planning/backoff';
import { deterministicRand01, fnv1a32 } from '../../shared/planning/hash';

const optsArb = fc
  .record({ baseMs: fc.integer({ min: 1, max: 10_000 }), extra: fc.integer({ min: 0, max: 1_000_000 }), factor: fc.double({ min: 1, max: 4, noNaN: true }) })
  .map(({ baseMs, extra, factor }) => ({ baseMs, maxMs: baseMs + extra, factor }));

describe('delayMs', () => {
  it('stays within [ceiling/2, ceiling] and the ceiling never exceeds maxMs', () => {
    fc.assert(
      fc.property(optsArb, fc.integer({ min: 1, max: 10_000 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (opts, attempt, r) => {
        const ceiling = backoffCeilingMs(attempt, opts);
        expect(ceiling).toBeLessThanOrEqual(opts.maxMs);
        const d = delayMs(attempt, opts, r);
        expect(Number.isInteger(d)).toBe(true);
        expect(d).toBeGreaterThanOrEqual(Math.floor(ceiling / 2));
        expect(d).toBeLessThanOrEqual(Math.ceil(ceiling));
      }),
    );
  });

  it('grows with the attempt for a fixed random draw (until the cap)', () => {
    fc.assert(
      fc.property(optsArb, fc.integer({ min: 1, max: 60 }), fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }), (opts, attempt, r) => {
        expect(delayMs(attempt + 1, opts, r)).toBeGreaterThanOrEqual(delayMs(attempt, opts, r));
      }),
    );
  });

  it('doubles from 4 s and caps at 300 s by default-like options', () => {
    const opts = { baseMs: 4_000, maxMs: 300_000, factor: 2 };
    expect([1, 2, 3, 7, 8, 50].map((a) => backoffCeilingMs(a, opts))).toEqual([4_000, 8_000, 16_000, 256_000, 300_000, 300_000]);
    expect(delayMs(1, opts, 0)).toBe(2_000);
    expect(delayMs(1, opts, 0.999999)).toBe(4_000);
  });

  it('refuses a random value outside [0, 1) and inconsistent options', () => {
    expect(() => delayMs(1, { baseMs: 1, maxMs: 2, factor: 2 }, 1)).toThrow(/rand01/);
    expect(() => delayMs(1, { baseMs: 5, maxMs: 2, factor: 2 }, 0)).toThrow(/invalid backoff/);
  });
});

describe('deterministic randomness', () => {
  it('gives the same value for the same seed, in [0, 1), and spreads seeds out', () => {
    fc.assert(
      fc.property(fc.string(), (seed) => {
        const v = deterministicRand01(seed);
        expect(v).toBe(deterministicRand01(seed));
        expect(v).toBeGreaterThanOrEqual(0);
        expect(v).toBeLessThan(1);
      }),
    );
    const values = Array.from({ length: 1000 }, (_, i) => deterministicRand01(`job-1:tvm-${i}:1`));
    const buckets = new Array(10).fill(0);
    for (const v of values) buckets[Math.floor(v * 10)]++;
    for (const b of buckets) expect(b).toBeGreaterThan(60);
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c); // published FNV-1a test vector
  });
});

describe('poll schedule', () => {
  it('starts short, grows, and settles at the cap', () => {
    const delays = [0, 1, 2, 3, 4, 5, 6, 7, 8, 20].map((i) => pollDelayMs(i));
    expect(delays[0]).toBe(DEFAULT_POLL_SCHEDULE.initialMs);
    for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1]);
    expect(delays[delays.length - 1]).toBe(DEFAULT_POLL_SCHEDULE.maxMs);
  });

  it('fills a budget exactly', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 3_600_000 }), (budget) => {
        const s = pollSchedule(budget);
        expect(s.reduce((a, b) => a + b, 0)).toBe(budget);
        expect(s.every((d) => d > 0)).toBe(true);
      }),
      { numRuns: 50 },
    );
  });
});

describe('classifyError', () => {
  it.each([
    ['toomanyrequests: You have reached your pull rate limit', 'transient'],
    ['Error response from daemon: received unexpected HTTP status: 503 Service Unavailable', 'transient'],
    ['Get "https://r/v2/": read tcp 10.0.0.4:5000: read: connection reset by peer', 'transient'],
    ['net/http: TLS handshake timeout', 'transient'],
    ['dial tcp: ETIMEDOUT', 'transient'],
    ['Error response from daemon: manifest unknown: manifest unknown', 'permanent'],
    ['unauthorized: authentication required', 'permanent'],
    ['pull access denied for x, repository does not exist', 'permanent'],
    ['Error: No such image: foo', 'permanent'],
    ['image not found', 'permanent'],
    ['no space left on device', 'unknown'],
  ])('%s → %s', (message, expected) => {
    expect(classifyError(message)).toBe(expected);
  });

  it('uses HTTP status and error codes', () => {
    expect(classifyError({ status: 429 })).toBe('transient');
    expect(classifyError({ status: 503, message: 'blob not found in cache' })).toBe('transient');
    expect(classifyError({ status: 404 })).toBe('permanent');
    expect(classifyError({ code: 'ECONNRESET' })).toBe('transient');
    expect(classifyError({ status: 500 })).toBe('unknown');
  });
});
