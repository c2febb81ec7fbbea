import type { JobFinishInput, JobTransitionInput } from '../../shared/contract';
import { jobStore } from '../../shared/services';
import { registerActivity } from '../runtime/activityCalls';

/** Records a stage change on the job row (a repeated call for the same state changes nothing). */
export async function jobTransition(input: JobTransitionInput): Promise<void> {
  const store = await jobStore();
  const patch = Object.fromEntries(Object.entries(input.patch ?? {}).filter(([, v]) => v !== undefined));
  await store.transition(input.jobId, input.to, input.reason, { stage: input.to, ...patch });
}

/** Records the final state, the result (exit codes, logs, timings, node-minutes) and the error if any. */
export async function jobFinish(input: JobFinishInput): Promise<void> {
  const store = await jobStore();
  const { outcome } = input;
  const error = outcome.state === 'Succeeded' ? undefined : { code: outcome.state === 'Cancelled' ? 'Cancelled' : 'PipelineFailed', message: outcome.reason ?? outcome.state };
  await store.transition(input.jobId, outcome.state, outcome.reason ?? outcome.state, { stage: outcome.state, result: outcome.result, error });
}

registerActivity('jobTransition', jobTransition);
registerActivity('jobFinish', jobFinish);
