import type { JobFinishInput, JobNoteInput, JobTransitionInput } from '../../shared/core/contract';
import { jobStore } from '../../shared/services';
import { registerActivity } from './registration';
import { jobError } from '../../shared/core/planning/failureExplain';

/**
 * Records a stage change on the job row. Run again (Durable runs activities at least once), it changes nothing;
 * a row that has already moved past the stage (or finished) is left alone, so a replayed step never rewinds it.
 */
export async function jobTransition(input: JobTransitionInput): Promise<void> {
  const store = await jobStore();
  const patch = Object.fromEntries(Object.entries(input.patch ?? {}).filter(([, v]) => v !== undefined));
  await store.advance(input.jobId, input.to, input.reason, { stage: input.to, ...patch });
}

/**
 * Records the final state, the result (exit codes, logs, timings, node-minutes) and the error if any. A job that
 * already ended keeps the end it recorded first (a second run of the pipeline that comes to a different end, e.g.
 * because Batch forgot the task after cleanup, is written to the timeline, not over the result).
 */
export async function jobFinish(input: JobFinishInput): Promise<void> {
  const store = await jobStore();
  const { outcome } = input;
  const error = jobError(outcome);
  const done = await store.advance(input.jobId, outcome.state, outcome.reason ?? outcome.state, { stage: outcome.state, result: outcome.result, error });
  if (done.stale && done.job.state !== outcome.state) {
    await store.appendEvent(input.jobId, {
      reason: `a repeated run of the pipeline ended ${outcome.state}${outcome.reason ? ` (${outcome.reason})` : ''}; the recorded ${done.job.state} stands`,
      eventId: `finish-repeated-${outcome.state}`,
      at: done.job.updatedAt,
    });
  }
}

/** Appends a note to the job's timeline; the event id makes a repeated call (Durable's at-least-once) write it once. */
export async function jobNote(input: JobNoteInput): Promise<void> {
  const store = await jobStore();
  await store.appendEvent(input.jobId, {
    reason: input.reason,
    eventId: input.eventId,
    at: input.at,
    ...(input.data !== undefined ? { data: input.data } : {}),
  });
}

registerActivity('jobTransition', jobTransition);
registerActivity('jobNote', jobNote);
registerActivity('jobFinish', jobFinish);
