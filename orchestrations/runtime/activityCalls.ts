/**
 * Typed access to the activity contract (shared/core/contract/activities.ts): activities register through
 * `registerActivity` and the orchestrator schedules them through `scheduleActivity`/`resultOf`, so the compiler
 * checks the name, the input and the result of every call and no call site casts.
 */
import * as df from 'durable-functions';
import type { OrchestrationContext, RetryOptions, Task } from 'durable-functions';
import type { ActivityInput, ActivityName, ActivityOutput } from '../../shared/core/contract';

/** A scheduled activity that remembers which one it is, so its result has the contract's type. */
export interface ActivityTask<N extends ActivityName> {
  readonly name: N;
  readonly task: Task;
}

/** The field a placed job's activity inputs carry: the Batch account admission placed it on. */
const BATCH_ACCOUNT_FIELD = 'batchAccount';

/** The input with the job's Batch account added (an object input; anything else is left as it is). */
export function withBatchAccount<T>(input: T, account: string): T {
  return input !== null && typeof input === 'object' && !Array.isArray(input) ? { ...input, [BATCH_ACCOUNT_FIELD]: account } : input;
}

/** The Batch account an activity input names, if any. */
export function batchAccountOf(input: unknown): string | undefined {
  const v = input !== null && typeof input === 'object' ? (input as Record<string, unknown>)[BATCH_ACCOUNT_FIELD] : undefined;
  return typeof v === 'string' && v ? v : undefined;
}

export function scheduleActivity<N extends ActivityName>(ctx: OrchestrationContext, name: N, input: ActivityInput<N>, retry: RetryOptions): ActivityTask<N> {
  return { name, task: ctx.df.callActivityWithRetry(name, retry, input) };
}

/**
 * The result of a completed activity task. The one place the history's JSON meets the contract: Durable hands
 * back exactly what the registered handler returned (serialised), and registerActivity only accepts handlers
 * returning the contract's output type.
 */
export function resultOf<N extends ActivityName>(t: ActivityTask<N>): ActivityOutput<N> {
  return t.task.result as ActivityOutput<N>;
}

/** Durable retry options: `attempts` tries in all, the first retry after `firstRetryMs`, doubling. */
export function retryOptions(firstRetryMs: number, attempts: number): RetryOptions {
  const r = new df.RetryOptions(firstRetryMs, attempts);
  r.backoffCoefficient = 2;
  return r;
}

/**
 * What a failed activity call says, for a job's reason: one line, the failure's first. durable-functions builds the
 * error of a failed task as `${Reason} \n ${Details}`, and Details is the activity's stack trace (our engine) or the
 * host's exception dump (Azure): that belongs in the log, not on the job row. The service's request id, which support
 * asks for, is kept: Batch errors carry it in their first line already (`[request-id …]`), Azure Storage errors on a
 * later `RequestId:` line, from where it is brought up.
 */
export function activityFailureMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const first = text.split('\n')[0].trim();
  if (/request-id /.test(first)) return first;
  const storageRequest = /^RequestId:\s*([0-9a-fA-F-]{8,})\s*$/m.exec(text)?.[1];
  return storageRequest ? `${first} [request-id ${storageRequest}]` : first;
}
