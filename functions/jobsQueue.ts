/**
 * The queue door: messages on `job-submissions` carry a job spec (JSON or YAML), the same as POST /api/jobs.
 * - an invalid spec is rejected once (logged, and recorded as a Failed job when it names an id) and removed;
 * - a conflicting repeat (same id, different spec) is logged on that job's timeline and removed;
 * - anything else that fails (storage, Durable) throws, so the host retries it and after maxDequeueCount
 *   moves it to `job-submissions-poison`; on that last attempt the job is marked Failed with the reason.
 */
import { DATA_AREA_FORBIDDEN } from '../shared/adapters/intake/dataAreas';
import { app, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { parse as parseYaml } from 'yaml';
import { parseJobSpec, deriveJobId } from '../shared/core/spec';
import { submitJob } from '../shared/adapters/intake/submit';
import { claimedJobId, recordRejectedSubmission } from '../shared/adapters/intake/rejected';
import { isTerminal } from '../shared/adapters/state';
import { appConfig, jobStore, poolGate, schedulingPolicy, submissionFacts } from '../shared/services';
import { queuePoolCaller } from '../shared/core/intake/poolAccess';
import { durableClientOf, orchestrationStarter } from './lib/durable';
import { dataAccessPolicy } from '../shared/core/intake/dataAccess';
import { QUEUE_DATA_CALLER, QUEUE_OWNER } from '../shared/adapters/auth';
import { containerPolicy } from '../shared/core/intake/containerPolicy';

export const SUBMISSIONS_QUEUE = 'job-submissions';

export async function jobSubmissionFromQueue(message: unknown, context: InvocationContext): Promise<void> {
  const dequeueCount = Number(context.triggerMetadata?.dequeueCount ?? 1);
  const messageId = String(context.triggerMetadata?.id ?? 'unknown');
  try {
    const store = await jobStore();
    const outcome = await submitJob(store, orchestrationStarter(durableClientOf(context)), {
      body: message,
      owner: QUEUE_OWNER,
      caller: QUEUE_DATA_CALLER,
      dataAccess: dataAccessPolicy(appConfig()),
      containers: containerPolicy(appConfig()),
      scheduling: await schedulingPolicy(),
      pools: poolGate(queuePoolCaller(QUEUE_OWNER)),
      facts: submissionFacts(),
    });
    if (outcome.kind === 'invalid' || outcome.kind === 'forbidden') {
      // No HTTP status here: data outside the queue's area is rejected like an invalid spec, recorded with its reason.
      const raw = typeof message === 'string' ? tryParse(message) : message;
      const id = claimedJobId(raw);
      const code = outcome.kind === 'forbidden' ? DATA_AREA_FORBIDDEN : 'InvalidSpec';
      const recorded = id ? await recordRejectedSubmission(store, id, raw, outcome.errors, 'queue', code) : 'no id';
      context.warn(
        `rejected queue message ${messageId}: ${outcome.kind === 'forbidden' ? 'data outside its area' : 'invalid job spec'} (${recorded}): ${outcome.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`,
      );
      return;
    }
    if (outcome.kind === 'poolForbidden') {
      // Not the queue's pool: dropped with a log line and nothing written (no row, no orchestration), as over HTTP.
      context.warn(`rejected queue message ${messageId}: ${outcome.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`);
      return;
    }
    if (outcome.kind === 'taken') {
      // Someone's job holds the id: its timeline is not the queue's to write on.
      context.warn(`rejected queue message ${messageId}: job id ${outcome.jobId} belongs to a job submitted through the API`);
      return;
    }
    if (outcome.kind === 'conflict') {
      await store.appendEvent(outcome.job.id, {
        reason: `queue message ${messageId} rejected: same id, different spec (${outcome.differingPaths.join(', ')})`,
      });
      context.warn(`rejected queue message ${messageId}: job ${outcome.job.id} exists with a different spec`);
      return;
    }
    context.info(
      `queue message ${messageId}: job ${outcome.job.id} ${outcome.created ? 'accepted' : 'already known'} (orchestration ${outcome.orchestration})`,
    );
  } catch (err) {
    if (dequeueCount >= appConfig().queueMaxDequeueCount) await markFailedBeforePoison(message, err, context);
    throw err;
  }
}

/** Last attempt: the host is about to move the message to the poison queue. Say so on the job, if there is one. */
async function markFailedBeforePoison(message: unknown, err: unknown, context: InvocationContext): Promise<void> {
  try {
    const parsed = parseJobSpec(message);
    if (!parsed.ok) return;
    const id = deriveJobId(parsed.spec);
    const store = await jobStore();
    const job = await store.get(id);
    if (!job || isTerminal(job.state) || job.state !== 'Submitted') return;
    await store.transition(
      id,
      'Failed',
      `intake failed ${appConfig().queueMaxDequeueCount} times; message moved to ${SUBMISSIONS_QUEUE}-poison: ${(err as Error).message}`,
      {
        error: { code: 'IntakeFailed', message: (err as Error).message },
      },
    );
  } catch (inner) {
    context.error(`could not mark the job failed before poisoning: ${(inner as Error).message}`);
  }
}

function tryParse(text: string): unknown {
  try {
    return parseYaml(text) as unknown; // YAML is a superset of JSON
  } catch {
    return undefined;
  }
}

app.storageQueue('jobSubmissions', {
  queueName: SUBMISSIONS_QUEUE,
  connection: 'AzureWebJobsStorage',
  extraInputs: [df.input.durableClient()],
  handler: jobSubmissionFromQueue,
});
