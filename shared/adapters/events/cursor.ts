/**
 * The delivery cursor's arithmetic, pure (tested by properties in tests/unit/eventsCursor.test.ts).
 *
 * The outbox is the job's own timeline: the job row numbers transitions (eventSeq) and the store writes every
 * transition to JobEvents, the latest one also kept on the row (lastEvent) in case the process died between the row
 * write and the event write. Per job and endpoint a cursor holds the highest seq delivered; what is due is every seq
 * after it up to the row's eventSeq, in order.
 */
import type { JobEvent } from '../state';
import { backoffCeilingMs } from '../../core/planning/backoff';

export interface CursorState {
  /** Highest seq delivered (or given up on) to this endpoint: everything up to it is done. 0 = nothing yet. */
  delivered: number;
  /** Failed tries of seq delivered + 1 so far. */
  attempt: number;
  /** When the next try of seq delivered + 1 is due (ISO); absent = now. */
  nextAttemptAt?: string;
  /** Last failure, for people reading the cursor. */
  lastError?: string;
}

export const INITIAL_CURSOR: CursorState = { delivered: 0, attempt: 0 };

export type PendingItem = { seq: number; event: JobEvent } | { seq: number; missing: true };

/**
 * The transitions due after `delivered`, in seq order, contiguous up to the row's eventSeq. A seq that is in neither
 * the timeline nor the row's lastEvent is reported missing (a timeline damaged before the store wrote the previous
 * event ahead of each transition): the deliverer records it and moves past it rather than wait forever.
 */
export function pendingTransitions(timeline: readonly JobEvent[], row: { eventSeq: number; lastEvent?: JobEvent }, delivered: number): PendingItem[] {
  const bySeq = new Map<number, JobEvent>();
  for (const e of timeline) if (e.kind === 'transition' && e.seq !== undefined && !bySeq.has(e.seq)) bySeq.set(e.seq, e);
  const last = row.lastEvent;
  if (last?.kind === 'transition' && last.seq !== undefined && !bySeq.has(last.seq)) bySeq.set(last.seq, last);
  const out: PendingItem[] = [];
  for (let seq = Math.max(0, delivered) + 1; seq <= row.eventSeq; seq++) {
    const event = bySeq.get(seq);
    out.push(event ? { seq, event } : { seq, missing: true });
  }
  return out;
}

export interface RetryPolicy {
  maxAttempts: number;
  initialMs: number;
  maxMs: number;
}

/** Delay before try `attempt + 1` after `attempt` failures: doubling from initialMs, capped at maxMs, no jitter needed (one sender per cursor). */
export function retryDelayMs(failures: number, policy: RetryPolicy): number {
  return backoffCeilingMs(Math.max(1, failures), { baseMs: policy.initialMs, maxMs: policy.maxMs, factor: 2 });
}

export type AttemptVerdict =
  { outcome: 'delivered'; cursor: CursorState } | { outcome: 'retry'; cursor: CursorState; delayMs: number } | { outcome: 'abandoned'; cursor: CursorState };

/**
 * The cursor after one try of seq `cursor.delivered + 1`: delivered moves it on; a failure schedules the next try,
 * or after policy.maxAttempts tries gives the event up (recorded) so the job's later events are not held forever.
 */
export function afterAttempt(cursor: CursorState, ok: boolean, error: string | undefined, now: Date, policy: RetryPolicy): AttemptVerdict {
  const seq = cursor.delivered + 1;
  if (ok) return { outcome: 'delivered', cursor: { delivered: seq, attempt: 0 } };
  const failures = cursor.attempt + 1;
  const lastError = (error ?? 'failed').slice(0, 500);
  if (failures >= policy.maxAttempts) return { outcome: 'abandoned', cursor: { delivered: seq, attempt: 0, lastError } };
  const delayMs = retryDelayMs(failures, policy);
  return {
    outcome: 'retry',
    delayMs,
    cursor: { delivered: cursor.delivered, attempt: failures, nextAttemptAt: new Date(now.getTime() + delayMs).toISOString(), lastError },
  };
}

/**
 * The relay's next watermark: it looks again at every job row updated since then. It may move up to `now - margin`
 * (writers' clocks and write latency), but never past a job it saw with transitions due that it could not settle
 * (another sender held it, storage failed): that job is looked at again next time. Jobs waiting for a scheduled retry
 * are settled: the relay finds them by their cursor's nextAttemptAt.
 */
export function nextWatermark(now: Date, marginMs: number, unsettledUpdatedAt: readonly string[], previous?: string): string {
  let t = now.getTime() - marginMs;
  for (const u of unsettledUpdatedAt) {
    const ms = Date.parse(u);
    if (Number.isFinite(ms)) t = Math.min(t, ms - 1);
  }
  const prev = previous === undefined ? Number.NEGATIVE_INFINITY : Date.parse(previous);
  // Only unsettled jobs pull it back; otherwise it never moves backwards.
  if (unsettledUpdatedAt.length === 0 && Number.isFinite(prev)) t = Math.max(t, prev);
  return new Date(t).toISOString();
}
