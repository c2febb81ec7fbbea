/**
 * Backoff arithmetic and error classification shared by the orchestrator and activities.
 * Pure: randomness comes in as a number so a replayed orchestration computes the same delays.
 */

export interface BackoffOptions {
  /** Delay ceiling for the first retry (attempt 1), in ms. */
  baseMs: number;
  /** Upper bound for any single delay, in ms. */
  maxMs: number;
  /** Growth per attempt (2 = doubling). */
  factor: number;
}

/** Registry pulls: Shipyard's cascade starts at 2–5 s and caps at 300 s; we use the same envelope. */
export const DEFAULT_PULL_BACKOFF: BackoffOptions = { baseMs: 4_000, maxMs: 300_000, factor: 2 };

function assertBackoff(opts: BackoffOptions): void {
  if (!(opts.baseMs >= 0) || !(opts.maxMs >= opts.baseMs) || !(opts.factor >= 1)) {
    throw new RangeError(`invalid backoff options: expected 0 <= baseMs <= maxMs and factor >= 1, got ${JSON.stringify(opts)}`);
  }
}

/**
 * The one exponential backoff of the project, un-jittered: min(maxMs, baseMs * factor^(attempt-1)) for `attempt`
 * (1-based), in whole milliseconds. The orchestrator's polling, the MPI retries, the event deliveries and the Batch
 * calls' retries all take their delays from here; each adds only its own jitter (or none) and its own inputs.
 */
export function backoffCeilingMs(attempt: number, opts: BackoffOptions): number {
  assertBackoff(opts);
  const n = Math.max(1, Math.floor(attempt));
  if (opts.baseMs === 0) return 0;
  // factor ** huge is Infinity, which min() turns into maxMs: no overflow handling needed.
  return Math.min(opts.maxMs, Math.round(opts.baseMs * opts.factor ** (n - 1)));
}

/**
 * Jittered exponential backoff ("equal jitter"): a delay in [ceiling/2, ceiling], so retries of many nodes that were
 * throttled together spread out but never collapse to zero. `rand01` must be in [0, 1); derive it with
 * `deterministicRand01` inside orchestrators.
 */
export function delayMs(attempt: number, opts: BackoffOptions, rand01: number): number {
  if (!(rand01 >= 0 && rand01 < 1)) throw new RangeError(`rand01 must be in [0, 1), got ${rand01}`);
  const ceiling = backoffCeilingMs(attempt, opts);
  return Math.round(ceiling / 2 + (rand01 * ceiling) / 2);
}

export type ErrorClass = 'transient' | 'permanent' | 'unknown';

const TRANSIENT_PATTERNS: RegExp[] = [
  /toomanyrequests/i,
  /too many requests/i,
  /\b429\b/,
  /\b50[234]\b/,
  /service unavailable/i,
  /server ?busy/i,
  /operation ?timed? ?out/i,
  /ECONNRESET/,
  /ETIMEDOUT/,
  /ECONNREFUSED/,
  /EAI_AGAIN/,
  /connection reset/i,
  /tls handshake timeout/i,
  /i\/o timeout/i,
  /net\/http: request canceled/i,
  /unexpected EOF/i,
];

const PERMANENT_PATTERNS: RegExp[] = [
  /manifest unknown/i,
  /manifest for .* not found/i,
  /\bunauthorized\b/i,
  /authentication required/i,
  /denied/i,
  /not found/i,
  /\b40[134]\b/,
  /invalid reference format/i,
  /no such image/i,
  /repository .* does not exist/i,
];

/**
 * Classify a registry/service error. Transient wins over permanent when both match ("503 ... not found in cache" is
 * still a 503). Accepts a message, an HTTP status, or an error code like `ECONNRESET`.
 */
export function classifyError(error: { message?: string; status?: number; code?: string } | string): ErrorClass {
  const e = typeof error === 'string' ? { message: error } : error;
  if (e.status === 429 || e.status === 502 || e.status === 503 || e.status === 504) return 'transient';
  const text = [e.code ?? '', e.message ?? ''].join(' ');
  if (TRANSIENT_PATTERNS.some((p) => p.test(text))) return 'transient';
  if (e.status === 400 || e.status === 401 || e.status === 403 || e.status === 404) return 'permanent';
  if (PERMANENT_PATTERNS.some((p) => p.test(text))) return 'permanent';
  return 'unknown';
}
