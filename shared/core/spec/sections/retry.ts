/**
 * The `retry` section of the job spec: the control plane's own retries, by failure class, each attempt on nodes that
 * replace the failed ones (docs/scheduling.md). Distinct from `limits.maxRetries`, which is Batch's task retry
 * (maxTaskRetryCount): Batch reruns the MPI task on the same nodes, which helps a flaky application and never a
 * broken node.
 */
import { z } from 'zod';
import { ISO_DURATION_PATTERN, parseIsoDuration } from '../duration';

/** Failure classes a job may retry (the application's own failures are retried only by listed exit codes). */
export const RETRY_ON = ['nodeFailure', 'allocationFailure', 'preflightFailure'] as const;
export type RetryOn = (typeof RETRY_ON)[number];

export const RETRY_LIMITS = { maxAttempts: 10, maxExitCodes: 32, maxBackoffMs: 60 * 60_000 } as const;

const duration = (what: string, maxMs: number, maxText: string) =>
  z
    .string({ error: `must be an ISO 8601 duration such as "PT30S": ${what}` })
    .refine((v) => parseIsoDuration(v) !== undefined && ISO_DURATION_PATTERN.test(v), {
      error: `must be an ISO 8601 duration such as "PT30S" or "PT2M": ${what}`,
    })
    .refine((v) => (parseIsoDuration(v) ?? 0) <= maxMs, { error: `must be at most ${maxText}` });

export const RetryBackoffSchema = z
  .strictObject({
    initial: duration('the wait before the second attempt', RETRY_LIMITS.maxBackoffMs, 'PT1H')
      .default('PT30S')
      .meta({ description: 'Wait before the second attempt (a durable timer; the pool is kept and billed meanwhile). Doubles for each later attempt.' }),
    max: duration('the longest wait between attempts', RETRY_LIMITS.maxBackoffMs, 'PT1H')
      .default('PT10M')
      .meta({ description: 'Longest wait between two attempts.' }),
  })
  .meta({ description: 'Backoff between attempts: initial, doubled per attempt, capped at max.' });

export const RetrySchema = z
  .strictObject({
    maxAttempts: z
      .number({ error: 'must be a number: attempts in all, the first included' })
      .int({ error: 'must be a whole number' })
      .min(1, { error: 'must be at least 1 (1 = no retry)' })
      .max(RETRY_LIMITS.maxAttempts, { error: `must be at most ${RETRY_LIMITS.maxAttempts}` })
      .default(1)
      .meta({
        description: 'Attempts in all, the first included; 1 = no retry (the default: a retry doubles the node-hours of a failed run, so it is opted into).',
      }),
    on: z
      .array(z.enum(RETRY_ON, { error: `must be one of ${RETRY_ON.map((c) => `"${c}"`).join(', ')}` }), { error: 'must be a list of failure classes' })
      .max(RETRY_ON.length)
      .refine((l) => new Set(l).size === l.length, { error: 'must not list a failure class twice' })
      .default([...RETRY_ON])
      .meta({
        description:
          'Failure classes that start another attempt. nodeFailure: Batch marked a node of the attempt unusable, or requeued the MPI task because a node went away; allocationFailure: the pool could not get its nodes (resize error or timeout); preflightFailure: the check before MPI kept finding bad nodes.',
      }),
    exitCodes: z
      .array(
        z
          .number({ error: 'must be a number: an exit code' })
          .int({ error: 'must be a whole number' })
          .min(-2_147_483_648)
          .max(2_147_483_647)
          .refine((c) => c !== 0, { error: 'must not be 0: exit code 0 is success' }),
        { error: 'must be a list of exit codes' },
      )
      .max(RETRY_LIMITS.maxExitCodes, { error: `must list at most ${RETRY_LIMITS.maxExitCodes} exit codes` })
      .refine((l) => new Set(l).size === l.length, { error: 'must not list an exit code twice' })
      .default([])
      .meta({
        description:
          'Exit codes of the MPI task that start another attempt (e.g. a code the application uses for "transient, try again"). Any other non-zero exit is the application\'s own failure and is not retried.',
      }),
    backoff: RetryBackoffSchema.prefault({}),
  })
  .refine((r) => (parseIsoDuration(r.backoff.initial) ?? 0) <= (parseIsoDuration(r.backoff.max) ?? 0), {
    error: 'backoff.initial must not exceed backoff.max',
    path: ['backoff', 'initial'],
  })
  .meta({
    description:
      "The control plane's retries by failure class: each attempt runs on nodes that replace the failed ones (docs/scheduling.md). Not Batch's task retry (limits.maxRetries), which reruns on the same nodes.",
  });

export type RetrySpec = z.output<typeof RetrySchema>;
