/**
 * POST /api/jobs/{id}/rerun   a new job from the recorded spec of a finished job   Jobs.Submit, own job; admins any
 * (Idempotency-Key header optional: each key gives another rerun; without one, repeats answer the same rerun).
 * Adapter only: authorize, find the job the caller may see, call shared/adapters/intake/rerun.ts, shape the answer like a
 * submission (202 new, 200 repeat) with `rerunOf` on the new job.
 */
import { type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { rerunJob } from '../shared/adapters/intake/rerun';
import { DATA_AREA_FORBIDDEN } from '../shared/adapters/intake/dataAreas';
import { POOL_FORBIDDEN } from '../shared/core/intake/poolAccess';
import { jobUrl, toJobView } from '../shared/adapters/state';
import { jobStore } from '../shared/services';
import { seesAllJobs } from '../shared/adapters/auth';
import { durableClientOf, orchestrationStarter } from './lib/durable';
import { forbiddenRequest, invalidRequest, problem, unavailable } from './lib/http';
import { authorize, visibleJob } from './lib/auth';
import { callerSubmission } from './lib/submission';
import { badJobId } from './lib/jobId';
import { registerRoute } from './lib/route';

const durableClient = df.input.durableClient();

export async function rerunJobHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:submit');
  if (!auth.ok) return auth.response;
  const { principal } = auth;
  const id = request.params.id;
  const invalidId = badJobId(id);
  if (invalidId) return invalidId;
  try {
    const store = await jobStore();
    const old = visibleJob(principal, await store.get(id));
    if (!old) return problem(404, 'JobNotFound', `no job with id ${id}`);
    const client = durableClientOf(context);
    const outcome = await rerunJob(store, orchestrationStarter(client), {
      old,
      callerId: principal.id,
      idempotencyKey: request.headers.get('idempotency-key') ?? undefined,
      ...(await callerSubmission(principal)),
    });
    if (outcome.kind === 'notFinished') {
      return problem(
        409,
        'JobNotFinished',
        `job ${id} is ${outcome.job.state}: only a finished job (Succeeded, Failed or Cancelled) can be rerun; cancel it (DELETE /api/jobs/${id}) or wait for it to end`,
      );
    }
    if (outcome.kind === 'noSpec')
      return problem(
        409,
        'JobHasNoSpec',
        `job ${id} has no valid recorded spec (a rejected submission): there is nothing to rerun; submit a corrected spec instead`,
      );
    if (outcome.kind === 'invalid') return invalidRequest(outcome.errors);
    if (outcome.kind === 'poolForbidden') return forbiddenRequest(POOL_FORBIDDEN, outcome.errors);
    if (outcome.kind === 'forbidden') return forbiddenRequest(DATA_AREA_FORBIDDEN, outcome.errors);
    if (outcome.kind === 'taken') return problem(409, 'JobIdTaken', `the rerun's job id ${outcome.jobId} is taken: send another Idempotency-Key`);
    if (outcome.kind === 'conflict') {
      // Only when the old job's spec was read differently by another version: the derived id names a different spec.
      return {
        status: 409,
        jsonBody: {
          error: 'JobIdConflict',
          message: `job ${outcome.job.id} exists with a different spec: send another Idempotency-Key`,
          jobId: outcome.job.id,
          differingPaths: outcome.differingPaths,
        },
      };
    }
    const base = new URL(request.url).origin;
    const statusUrl = jobUrl(outcome.job.id, base);
    context.info(`job ${id} ${outcome.created ? 'rerun as' : 'already rerun as'} ${outcome.job.id} (orchestration ${outcome.orchestration})`);
    return {
      status: outcome.created ? 202 : 200,
      headers: { Location: statusUrl, 'Retry-After': '5' },
      jsonBody: {
        job: toJobView(outcome.job, { baseUrl: base }),
        statusUrl,
        cancelUrl: statusUrl,
        rerunOf: id,
        ...(seesAllJobs(principal) ? { orchestration: client.createHttpManagementPayload(outcome.job.id) } : {}),
      },
    };
  } catch (err) {
    return unavailable(context, 'job API (rerun)', err);
  }
}

registerRoute('rerunJob', { extraInputs: [durableClient], handler: rerunJobHttp });
