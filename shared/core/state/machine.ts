/** The pure state machine: one function, no I/O, used by the store and testable on its own. */
import { IllegalTransitionError } from './errors';
import type { JobEvent } from './record';
import { canTransition, JobState } from './states';

/** The part of a job row the machine reads and writes. */
export interface TransitionableRow {
  id: string;
  state: JobState;
  stage: string;
  updatedAt: string;
  eventSeq: number;
  lastEvent?: JobEvent;
}

export interface TransitionResult<R extends TransitionableRow> {
  row: R;
  event: JobEvent;
}

/**
 * Move `row` to state `to`. Returns a new row (the input is not modified) and the event to append, or
 * throws IllegalTransitionError naming from/to. The stage text resets to the new state's name.
 */
export function transition<R extends TransitionableRow>(row: R, to: JobState, reason: string, at: Date | string): TransitionResult<R> {
  if (!canTransition(row.state, to)) throw new IllegalTransitionError(row.id, row.state, to, reason);
  const when = typeof at === 'string' ? at : at.toISOString();
  const event: JobEvent = { jobId: row.id, at: when, kind: 'transition', seq: row.eventSeq + 1, from: row.state, to, reason };
  return { row: { ...row, state: to, stage: to, updatedAt: when, eventSeq: event.seq!, lastEvent: event }, event };
}
