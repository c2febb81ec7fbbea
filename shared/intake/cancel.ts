import type { JobRecord, JobStore } from '../state';
import { isTerminal } from '../state';

export interface CancelSignal {
  /** Raises the orchestration's "cancel" event; false when the instance is gone or already finished. */
  raiseCancel(jobId: string, reason: string): Promise<boolean>;
}

export type CancelOutcome =
  | { kind: 'notFound' }
  | { kind: 'alreadyFinished'; job: JobRecord }
  | { kind: 'requested'; job: JobRecord };

/**
 * Cancel goes through the pipeline, not around it: the orchestration receives the event at its next wait,
 * runs cleanup (terminate the Batch job, delete the pool and staged data) and ends the job Cancelled.
 */
export async function cancelJob(store: JobStore, signal: CancelSignal, jobId: string, reason: string): Promise<CancelOutcome> {
  const job = await store.get(jobId);
  if (!job) return { kind: 'notFound' };
  if (isTerminal(job.state)) return { kind: 'alreadyFinished', job };
  const updated = job.cancelRequestedAt ? job : await store.update(jobId, { cancelRequestedAt: new Date().toISOString() });
  await store.appendEvent(jobId, { reason: `cancel requested: ${reason}` });
  await signal.raiseCancel(jobId, reason);
  return { kind: 'requested', job: updated };
}
