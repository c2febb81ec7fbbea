import * as df from 'durable-functions';
import { Activities, JobFinishInput, JobTransitionInput } from '../contracts';
import { jobStore } from './services';
import type { JsonValue } from '../../shared/state';

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
  const result = JSON.parse(JSON.stringify({
    exitCode: outcome.exitCode,
    timings: outcome.timings,
    nodeMinutes: outcome.nodeMinutes,
    cost: outcome.cost,
    logs: outcome.logs,
    mpi: outcome.result,
  })) as JsonValue;
  const error = outcome.state === 'Succeeded' ? undefined : { code: outcome.state === 'Cancelled' ? 'Cancelled' : 'PipelineFailed', message: outcome.reason ?? outcome.state };
  await store.transition(input.jobId, outcome.state, outcome.reason ?? outcome.state, { stage: outcome.state, result, error });
}

df.app.activity(Activities.jobTransition, { handler: jobTransition });
df.app.activity(Activities.jobFinish, { handler: jobFinish });
