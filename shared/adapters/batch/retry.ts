/**
 * Retrying Batch calls inside one activity: jittered exponential backoff that honours Retry-After.
 *
 * What may be retried depends on whether a failed call can have taken effect:
 * - 429 and 503 mean the service refused the call, so any call may be sent again;
 * - 500/502/504/408 and broken connections leave the outcome unknown, so only calls that are safe to
 *   repeat are retried. Creates are made safe by their callers ("exists" = look and compare), deletes
 *   by treating "not found / being deleted" as done; calls marked `unsafe` are never repeated then.
 *
 * The SDK's own retry policies are switched off (see client.ts) so this is the only retry layer and
 * every retry is counted and reported.
 */
import type { RetryConfig } from '../config';
import { BatchError, describeSdkError, type SdkFailure } from './errors';
import { backoffCeilingMs } from '../../core/planning/backoff';

export type RetryPolicy = RetryConfig;

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 6, initialMs: 500, maxMs: 30_000, multiplier: 2, jitter: 0.5 };

/** `idempotent`: repeating it cannot do harm. `unsafe`: only repeat when the service refused it (429/503). */
export type CallSafety = 'idempotent' | 'unsafe';

export interface RetryEvent {
  operation: string;
  resource: string;
  /** The attempt that failed (1 = first call). */
  attempt: number;
  delayMs: number;
  status?: number;
  code: string;
  retryAfterMs?: number;
}

export interface RetryRuntime {
  policy: RetryPolicy;
  /** Injected so unit tests need not wait; defaults to a real timer. */
  sleep?: (ms: number) => Promise<void>;
  /** Injected for deterministic jitter in tests; defaults to Math.random. */
  random?: () => number;
  /** Observes every retry (logging, counting in tests). */
  onRetry?: (event: RetryEvent) => void;
}

const REFUSED = new Set([429, 503]);
const UNCERTAIN_STATUS = new Set([408, 500, 502, 504]);
const TRANSPORT_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'REQUEST_SEND_ERROR',
  'REQUEST_ABORTED_ERROR',
]);

/** Whether a failure may be retried for a call of the given safety. */
export function isRetryable(f: SdkFailure, safety: CallSafety): boolean {
  if (f.status !== undefined && REFUSED.has(f.status)) return true;
  if (safety === 'unsafe') return false;
  if (f.status !== undefined) return UNCERTAIN_STATUS.has(f.status);
  return TRANSPORT_CODES.has(f.code);
}

/**
 * The wait before attempt `attempt + 1`: exponential in the attempt, +-jitter, capped at maxMs,
 * and never shorter than what the service asked for with Retry-After.
 */
export function backoffDelay(attempt: number, policy: RetryPolicy, random: () => number, retryAfterMs?: number): number {
  const exponential = backoffCeilingMs(attempt, { baseMs: policy.initialMs, maxMs: policy.maxMs, factor: policy.multiplier });
  const factor = 1 - policy.jitter + 2 * policy.jitter * random();
  const jittered = Math.min(policy.maxMs, Math.round(exponential * factor));
  return Math.max(jittered, Math.ceil(retryAfterMs ?? 0));
}

const realSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs `call`, retrying as described above; failures come out as BatchError with the operation,
 * resource, Batch code, status, request id and attempt count.
 */
export async function callWithRetry<T>(
  runtime: RetryRuntime,
  what: { operation: string; resource: string; safety?: CallSafety },
  call: () => Promise<T>,
): Promise<T> {
  const safety = what.safety ?? 'idempotent';
  const sleep = runtime.sleep ?? realSleep;
  const random = runtime.random ?? Math.random;
  const { maxAttempts, maxMs } = runtime.policy;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const f = describeSdkError(err);
      const fail = (extra: { retryAfterMs?: number } = {}) =>
        new BatchError({ ...f, operation: what.operation, resource: what.resource, attempts: attempt, ...extra });
      if (!isRetryable(f, safety) || attempt >= maxAttempts) throw fail();
      // A wait longer than we would ever sleep in-process is handed to the caller, who can wait durably.
      if (f.retryAfterMs !== undefined && f.retryAfterMs > maxMs) throw fail({ retryAfterMs: f.retryAfterMs });
      const delayMs = backoffDelay(attempt, runtime.policy, random, f.retryAfterMs);
      runtime.onRetry?.({
        operation: what.operation,
        resource: what.resource,
        attempt,
        delayMs,
        status: f.status,
        code: f.code,
        retryAfterMs: f.retryAfterMs,
      });
      await sleep(delayMs);
    }
  }
}
