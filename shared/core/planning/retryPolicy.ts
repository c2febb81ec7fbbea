/**
 * Whether a failed attempt is followed by another, and after how long. Pure: the orchestrator classifies the
 * attempt (failureClass.ts), asks here, records the answer and waits on a durable timer.
 */
import type { JobSpec } from '../spec/schema';
import { parseIsoDuration } from '../spec/duration';
import type { RetryOn } from '../spec/sections/retry';
import type { AttemptVerdict, FailureClass } from './failureClass';
import { backoffCeilingMs } from './backoff';

export interface RetryPolicy {
  /** Attempts in all, the first included. */
  maxAttempts: number;
  on: readonly RetryOn[];
  exitCodes: readonly number[];
  backoff: { initialMs: number; maxMs: number };
}

export function retryPolicyFor(spec: Pick<JobSpec, 'retry'>): RetryPolicy {
  const r = spec.retry;
  return {
    maxAttempts: r.maxAttempts,
    on: [...r.on],
    exitCodes: [...r.exitCodes],
    backoff: { initialMs: parseIsoDuration(r.backoff.initial) ?? 30_000, maxMs: parseIsoDuration(r.backoff.max) ?? 600_000 },
  };
}

export type RetryDecision = { retry: true; delayMs: number; reason: string } | { retry: false; reason: string };

/** The wait before attempt `next` (2, 3, …): initial, doubled per attempt, capped. Not jittered: one job, one pool. */
export function retryDelayMs(policy: RetryPolicy, next: number): number {
  return backoffCeilingMs(Math.max(2, Math.floor(next)) - 1, { baseMs: policy.backoff.initialMs, maxMs: policy.backoff.maxMs, factor: 2 });
}

/** Whether the policy retries this class at all (exitCode means: the exit code was one of retry.exitCodes). */
export function retriesClass(policy: RetryPolicy, failureClass: FailureClass): boolean {
  if (failureClass === 'exitCode') return policy.exitCodes.length > 0;
  // Without pool.spot (a reused pool with Spot nodes) a preemption is a lost node like any other.
  if (failureClass === 'preemption') return (policy.on as readonly string[]).includes('nodeFailure');
  return (policy.on as readonly string[]).includes(failureClass);
}

/** After attempt `attempt` (1-based) failed with `verdict`: another attempt, or the job's end, and why. */
export function decideRetry(policy: RetryPolicy, attempt: number, verdict: Extract<AttemptVerdict, { outcome: 'failed' }>): RetryDecision {
  if (!retriesClass(policy, verdict.failureClass)) {
    return { retry: false, reason: notRetriedBecause(verdict) };
  }
  if (attempt >= policy.maxAttempts) {
    return { retry: false, reason: policy.maxAttempts === 1 ? 'retry.maxAttempts is 1 (no retry)' : `no attempts left (${attempt} of ${policy.maxAttempts})` };
  }
  const delayMs = retryDelayMs(policy, attempt + 1);
  return {
    retry: true,
    delayMs,
    reason: `${verdict.failureClass} is retried: attempt ${attempt + 1} of ${policy.maxAttempts} in ${Math.round(delayMs / 1000)} s`,
  };
}

function notRetriedBecause(v: Extract<AttemptVerdict, { outcome: 'failed' }>): string {
  switch (v.failureClass) {
    case 'application':
      return v.exitCode !== undefined ? `the application's exit code ${v.exitCode} is not in retry.exitCodes` : 'the application failed';
    case 'stage':
      return 'a pipeline stage failed for a reason that is not a node, allocation or preflight failure';
    default:
      return `${v.failureClass} is not in retry.on`;
  }
}
