import { requestCancel, type JobRecord, type JobStore } from '../state';
import { childIds } from '../../core/scheduling/arrays';
import { refreshArrayRow } from '../../core/scheduling/arrayRow';

export interface CancelSignal {
  /** Raises the orchestration's "cancel" event; false when the instance is gone or already finished. */
  raiseCancel(jobId: string, reason: string): Promise<boolean>;
}

export type CancelOutcome =
  | { kind: 'notFound' }
  | { kind: 'alreadyFinished'; job: JobRecord }
  /**
   * Too late: the job is cleaning up after a run whose end is already decided (`job.endingAs` when the pipeline
   * recorded it); cleanup ends it in that state whatever a cancel says, so none is sent.
   */
  | { kind: 'finishing'; job: JobRecord }
  /**
   * `pipeline`: 'notified' when the running orchestration got the cancel event (it cleans up and ends the job
   * Cancelled); 'gone' when no orchestration was left to tell (terminated or lost): the sweep then removes the job's
   * resources and ends it Cancelled at its next run, without the grace it gives lost runs.
   */
  | { kind: 'requested'; job: JobRecord; pipeline: 'notified' | 'gone' };

/**
 * Cancel goes through the pipeline, not around it: the orchestration receives the event at its next wait,
 * runs cleanup (terminate the Batch job, delete the pool and staged data) and ends the job Cancelled.
 * A job whose orchestration never started (intake died after recording it) is cancelled directly.
 */
export async function cancelJob(store: JobStore, signal: CancelSignal, jobId: string, reason: string): Promise<CancelOutcome> {
  const requested = await requestCancel(store, jobId);
  if (requested.outcome === 'notFound') return { kind: 'notFound' };
  if (requested.outcome === 'finished') return { kind: 'alreadyFinished', job: requested.job };
  if (requested.outcome === 'finishing') return { kind: 'finishing', job: requested.job };
  await store.appendEvent(jobId, { reason: `cancel requested: ${reason}` });
  if (requested.job.spec?.array) return cancelArray(store, signal, requested.job, reason);
  const delivered = await signal.raiseCancel(jobId, reason);
  if (delivered) return { kind: 'requested', job: requested.job, pipeline: 'notified' };
  if (requested.job.state === 'Submitted') {
    const { job } = await store.transition(jobId, 'Cancelled', `cancelled before the pipeline started: ${reason}`);
    return { kind: 'requested', job, pipeline: 'notified' };
  }
  await store.appendEvent(jobId, {
    reason: "the job's orchestration has already ended: the sweep removes its resources and ends it Cancelled at its next run",
  });
  return { kind: 'requested', job: requested.job, pipeline: 'gone' };
}

/**
 * An array is cancelled through its jobs: each gets the cancel (and ends Cancelled, cleaning up what it created); the
 * array's row follows their summary. An array whose jobs were never created (its intake stopped early) ends at once.
 */
async function cancelArray(store: JobStore, signal: CancelSignal, array: JobRecord, reason: string): Promise<CancelOutcome> {
  const ids = childIds(array.id, array.spec!);
  let found = 0;
  for (let i = 0; i < ids.length; i += 16) {
    const outcomes = await Promise.all(ids.slice(i, i + 16).map((id) => cancelJob(store, signal, id, `array ${array.id} cancelled: ${reason}`)));
    found += outcomes.filter((o) => o.kind !== 'notFound').length;
  }
  if (found === 0) {
    const { job } = await store.advance(array.id, 'Cancelled', `cancelled before its jobs were created: ${reason}`, {
      stage: 'Cancelled',
      error: { code: 'Cancelled', message: reason },
    });
    return { kind: 'requested', job, pipeline: 'notified' };
  }
  const job = (await refreshArrayRow(store, array.id)) ?? array;
  return { kind: 'requested', job, pipeline: 'notified' };
}
