import fc from 'fast-check';
import { backoffCeilingMs, classifyError, delayMs } from '../../shared/core/planning/backoff';
import { retryDelayMs as mpiRetryDelayMs } from '../../shared/core/planning/retryPolicy';
import { retryDelayMs as eventRetryDelayMs } from '../../shared/adapters/events/cursor';
import { backoffDelay } from '../../shared/adapters/batch/retry';
import { deterministicRand01, fnv1a32 } from '../../shared/core/planning/hash';

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

describe('one backoff: every user takes its delays from backoffCeilingMs', () => {
  const caps = fc
    .record({ initialMs: fc.integer({ min: 1, max: 60_000 }), extra: fc.integer({ min: 0, max: 3_600_000 }) })
    .map(({ initialMs, extra }) => ({ initialMs, maxMs: initialMs + extra }));

  it('starts at the base, never shrinks, and settles at the cap', () => {
    fc.assert(
      fc.property(optsArb, (opts) => {
        const delays = [1, 2, 3, 5, 8, 13, 200].map((a) => backoffCeilingMs(a, opts));
        expect(delays[0]).toBe(opts.baseMs);
        for (let i = 1; i < delays.length; i++) expect(delays[i]).toBeGreaterThanOrEqual(delays[i - 1]);
        expect(delays.every((d) => Number.isInteger(d) && d <= opts.maxMs)).toBe(true);
        // Attempt 200 is at the cap once the growth has passed it (1 ms × 1.01^199 is 7.3 ms: a cap of 8 is not reached).
        if (opts.baseMs * opts.factor ** 199 >= opts.maxMs) expect(delays[delays.length - 1]).toBe(opts.maxMs);
        else expect(delays[delays.length - 1]).toBe(Math.round(opts.baseMs * opts.factor ** 199));
      }),
    );
  });

  it('a slow growth below its cap stays below it (counterexample of a CI run: base 1, cap 8, factor 1.01)', () => {
    expect(backoffCeilingMs(200, { baseMs: 1, maxMs: 8, factor: 1.01 })).toBe(7);
    expect(backoffCeilingMs(210, { baseMs: 1, maxMs: 8, factor: 1.01 })).toBe(8);
  });

  it('MPI attempt retries (attempt n waits the (n-1)-th doubling) and event deliveries (after f failures) agree with it', () => {
    fc.assert(
      fc.property(caps, fc.integer({ min: 1, max: 40 }), ({ initialMs, maxMs }, n) => {
        const doubling = { baseMs: initialMs, maxMs, factor: 2 };
        expect(mpiRetryDelayMs({ maxAttempts: 50, on: [], exitCodes: [], backoff: { initialMs, maxMs } }, n + 1)).toBe(backoffCeilingMs(n, doubling));
        expect(eventRetryDelayMs(n, { maxAttempts: 50, initialMs, maxMs })).toBe(backoffCeilingMs(n, doubling));
      }),
    );
  });

  it('Batch call retries jitter around it, capped, and never wait less than Retry-After', () => {
    fc.assert(
      fc.property(
        caps,
        fc.integer({ min: 1, max: 20 }),
        fc.double({ min: 0, max: 0.999, noNaN: true }),
        fc.option(fc.integer({ min: 0, max: 120_000 }), { nil: undefined }),
        ({ initialMs, maxMs }, attempt, r, retryAfterMs) => {
          const policy = { initialMs, maxMs, multiplier: 2, jitter: 0.5, maxAttempts: 5 };
          const ceiling = backoffCeilingMs(attempt, { baseMs: initialMs, maxMs, factor: 2 });
          const d = backoffDelay(attempt, policy, () => r, retryAfterMs);
          expect(d).toBeGreaterThanOrEqual(Math.max(Math.floor(ceiling * 0.5), Math.ceil(retryAfterMs ?? 0)));
          expect(d).toBeLessThanOrEqual(Math.max(Math.min(maxMs, Math.round(ceiling * 1.5)), Math.ceil(retryAfterMs ?? 0)));
        },
      ),
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
