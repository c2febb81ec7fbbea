/**
 * The job API over HTTP. Adapters only: authorize (lib/auth), parse the request, call the intake/cancel service,
 * shape the answer. Every route is anonymous at the host; the app authenticates (docs/security.md).
 *   POST   /api/jobs        submit (JSON or YAML; Idempotency-Key header optional)   Jobs.Submit
 *          ?dryRun=true    the same checks, then what would be sent to Batch (200); nothing is created
 *   GET    /api/jobs        list (state, tag, createdFrom, createdTo, top, continuationToken)   own jobs; admins all
 *   GET    /api/jobs/{id}   status, live progress, timeline                          own job; admins any
 *   DELETE /api/jobs/{id}   cancel (cleanup still runs)                              Jobs.Submit, own job; admins any
 */
import { DATA_AREA_FORBIDDEN } from '../shared/adapters/intake/dataAreas';
import { type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import * as df from 'durable-functions';
import { submitJob } from '../shared/adapters/intake/submit';
import { dryRunSubmission } from '../shared/adapters/intake/dryRun';
import { explainSettings } from '../shared/adapters/intake/settings';
import { cancelJob } from '../shared/adapters/intake/cancel';
import { parseCancelReason } from '../shared/core/intake/cancelReason';
import { parseListQuery, toJobView, jobUrl, InvalidContinuationTokenError } from '../shared/adapters/state';
import {
  admissionDeps,
  appConfig,
  dataAccount,
  jobStore,
  nodePrices,
  poolGate,
  schedulingPolicy,
  submissionFacts,
  placementPreview,
  imageEvidenceDeps,
} from '../shared/services';
import { missingSources } from '../shared/adapters/storage/existence';
import { readImageEvidence } from '../shared/adapters/registry/evidence';
import { poolCallerOf, POOL_FORBIDDEN } from '../shared/core/intake/poolAccess';
import { readJobQueue } from '../shared/adapters/scheduling/admissionService';
import type { PipelineStatus } from '../shared/core/contract';
import { dataAccessPolicy } from '../shared/core/intake/dataAccess';
import { containerPolicy } from '../shared/core/intake/containerPolicy';
import { cancelSignal, durableClientOf, liveStatus, orchestrationStarter } from './lib/durable';
import { forbiddenRequest, invalidRequest, problem, unavailable } from './lib/http';
import { TEXT_LIMITS } from '../shared/core/spec/textLimits';
import { authorize, visibleJob } from './lib/auth';
import { callerSubmission } from './lib/submission';
import { badJobId } from './lib/jobId';
import { dataCallerOf, listOwnerFilter, seesAllJobs, type Principal } from '../shared/adapters/auth';
import { registerRoute } from './lib/route';

const durableClient = df.input.durableClient();

function baseUrlOf(request: HttpRequest): string {
  return new URL(request.url).origin;
}

export async function submitJobHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:submit');
  if (!auth.ok) return auth.response;
  const { principal } = auth;
  // Refuse an oversized body before reading it (a spec is at most TEXT_LIMITS.maxChars characters, 4 bytes each at most).
  const declared = Number(request.headers.get('content-length') ?? '0');
  if (declared > TEXT_LIMITS.maxChars * 4) {
    return problem(413, 'RequestBodyTooLarge', `the request body is ${declared} bytes; a job spec is at most ${TEXT_LIMITS.maxChars} characters`);
  }
  const body = await request.text();
  if (!body.trim()) return invalidRequest([{ path: '', message: 'the request body is empty: send a job spec as JSON or YAML' }]);
  const dryRun = request.query.get('dryRun');
  if (dryRun !== null && dryRun !== 'true' && dryRun !== 'false') return invalidRequest([{ path: 'dryRun', message: 'must be "true" or "false"' }]);
  if (dryRun === 'true') return dryRunHttp(request, context, body, principal);
  try {
    const client = durableClientOf(context);
    const store = await jobStore();
    const outcome = await submitJob(store, orchestrationStarter(client), {
      body,
      contentType: request.headers.get('content-type') ?? undefined,
      idempotencyKey: request.headers.get('idempotency-key') ?? undefined,
      ...(await callerSubmission(principal)),
    });
    if (outcome.kind === 'invalid') return invalidRequest(outcome.errors);
    if (outcome.kind === 'poolForbidden') return forbiddenRequest(POOL_FORBIDDEN, outcome.errors);
    if (outcome.kind === 'forbidden') return forbiddenRequest(DATA_AREA_FORBIDDEN, outcome.errors);
    if (outcome.kind === 'taken') return problem(409, 'JobIdTaken', `job id ${outcome.jobId} is taken: choose another id`);
    if (outcome.kind === 'conflict') {
      return {
        status: 409,
        jsonBody: {
          error: 'JobIdConflict',
          message: `job ${outcome.job.id} exists with a different spec (${outcome.differingPaths.length} field(s) differ)`,
          jobId: outcome.job.id,
          differingPaths: outcome.differingPaths,
        },
      };
    }
    const base = baseUrlOf(request);
    const statusUrl = jobUrl(outcome.job.id, base);
    context.info(`job ${outcome.job.id} ${outcome.created ? 'accepted' : 'repeated'} (orchestration ${outcome.orchestration})`);
    return {
      status: outcome.created ? 202 : 200,
      headers: { Location: statusUrl, 'Retry-After': '5' },
      jsonBody: {
        job: toJobView(outcome.job, { baseUrl: base }),
        statusUrl,
        cancelUrl: statusUrl,
        // The Durable management URLs carry the extension's system key in Azure, which controls every instance.
        ...(seesAllJobs(principal) ? { orchestration: client.createHttpManagementPayload(outcome.job.id) } : {}),
      },
    };
  } catch (err) {
    return unavailable(context, 'job API', err);
  }
}

/** `?dryRun=true`: the submission's checks and its explain document; nothing is stored, started or sent to Batch. */
async function dryRunHttp(request: HttpRequest, context: InvocationContext, body: string, principal: Principal): Promise<HttpResponseInit> {
  const principalId = principal.id;
  try {
    const config = appConfig();
    const outcome = await dryRunSubmission(await jobStore(), {
      body,
      contentType: request.headers.get('content-type') ?? undefined,
      idempotencyKey: request.headers.get('idempotency-key') ?? undefined,
      idScope: principalId,
      dataAccess: dataAccessPolicy(config),
      containers: containerPolicy(config),
      settings: explainSettings(config),
      owner: principalId,
      caller: dataCallerOf(principal),
      scheduling: await schedulingPolicy(),
      pools: poolGate(poolCallerOf(principal)),
      sources: (checks) => missingSources(dataAccount, checks),
      imageEvidence: (wanted) => readImageEvidence(wanted, imageEvidenceDeps()),
      priceOf: async (vmSize, account) => (await nodePrices(account)).quote(vmSize),
      placement: placementPreview,
      facts: submissionFacts(),
    });
    if (outcome.kind === 'invalid') return invalidRequest(outcome.errors);
    if (outcome.kind === 'poolForbidden') return forbiddenRequest(POOL_FORBIDDEN, outcome.errors);
    if (outcome.kind === 'forbidden') return forbiddenRequest(DATA_AREA_FORBIDDEN, outcome.errors);
    return { status: 200, jsonBody: outcome.document };
  } catch (err) {
    return unavailable(context, 'job API (dry run)', err);
  }
}

export async function getJobHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:read');
  if (!auth.ok) return auth.response;
  const id = request.params.id;
  const invalidId = badJobId(id);
  if (invalidId) return invalidId;
  try {
    const store = await jobStore();
    const job = visibleJob(auth.principal, await store.get(id));
    if (!job) return problem(404, 'JobNotFound', `no job with id ${id}`);
    const [live, events] = await Promise.all([liveStatus(durableClientOf(context), id), store.events(id, job)]);
    const view = toJobView(job, { baseUrl: baseUrlOf(request), includeSpec: true });
    if (job.state === 'Queued' && !job.spec?.array)
      view.queue = await readJobQueue(await admissionDeps(), job, (live?.customStatus as PipelineStatus | undefined)?.queue);
    return {
      status: 200,
      jsonBody: { ...view, progress: live?.customStatus ?? view.progress, orchestrationStatus: live?.runtimeStatus, cost: job.result?.cost, timeline: events },
    };
  } catch (err) {
    return unavailable(context, 'job API', err);
  }
}

export async function listJobsHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:read');
  if (!auth.ok) return auth.response;
  const parsed = parseListQuery(request.query);
  if (!parsed.ok) return invalidRequest(parsed.errors);
  try {
    const store = await jobStore();
    const page = await store.list({ ...parsed.query, owner: listOwnerFilter(auth.principal) });
    if (page.unreadable?.length)
      context.warn(`list jobs: ${page.unreadable.length} unreadable row(s) left out: ${page.unreadable.map((u) => `${u.id}: ${u.error}`).join('; ')}`);
    const base = baseUrlOf(request);
    return {
      status: 200,
      jsonBody: {
        jobs: page.jobs.map((j) => toJobView(j, { baseUrl: base })),
        continuationToken: page.continuationToken,
        ...(page.unreadable?.length ? { unreadable: page.unreadable.length } : {}),
      },
    };
  } catch (err) {
    if (err instanceof InvalidContinuationTokenError) {
      return invalidRequest([
        { path: 'continuationToken', message: 'is not a continuation token of this list: pass the continuationToken of the previous page unchanged' },
      ]);
    }
    return unavailable(context, 'job API', err);
  }
}

export async function cancelJobHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:cancel');
  if (!auth.ok) return auth.response;
  const id = request.params.id;
  const invalidId = badJobId(id);
  if (invalidId) return invalidId;
  const reason = parseCancelReason(request.query.get('reason'));
  if (!reason.ok) return invalidRequest(reason.errors);
  try {
    const store = await jobStore();
    if (!visibleJob(auth.principal, await store.get(id))) return problem(404, 'JobNotFound', `no job with id ${id}`);
    const outcome = await cancelJob(store, cancelSignal(durableClientOf(context)), id, reason.reason);
    if (outcome.kind === 'notFound') return problem(404, 'JobNotFound', `no job with id ${id}`);
    const view = toJobView(outcome.job, { baseUrl: baseUrlOf(request) });
    if (outcome.kind === 'alreadyFinished') return { status: 200, jsonBody: { job: view, cancelRequested: false } };
    if (outcome.kind === 'finishing') return finishingAnswer(view, outcome.job.endingAs);
    const message =
      outcome.pipeline === 'gone'
        ? "the job's orchestration has already ended (terminated or lost): the operations sweep removes its resources and ends it Cancelled at its next run"
        : undefined;
    return {
      status: 202,
      headers: { Location: jobUrl(id, baseUrlOf(request)) },
      jsonBody: { job: view, cancelRequested: true, pipeline: outcome.pipeline, ...(message ? { message } : {}) },
    };
  } catch (err) {
    return unavailable(context, 'job API', err);
  }
}

/** 409 JobFinishing: the job is cleaning up after a run whose end is decided; a cancel would not change it. */
export function finishingAnswer(job: ReturnType<typeof toJobView>, endsAs: string | undefined): HttpResponseInit {
  const end = endsAs ? `it will end ${endsAs}` : 'its end is already decided';
  return {
    status: 409,
    jsonBody: {
      error: 'JobFinishing',
      message: `job ${job.id} is cleaning up and ${end}: too late to cancel`,
      job,
      cancelRequested: false,
      ...(endsAs ? { endsAs } : {}),
    },
  };
}

registerRoute('submitJob', { extraInputs: [durableClient], handler: submitJobHttp });
registerRoute('listJobs', { extraInputs: [durableClient], handler: listJobsHttp });
registerRoute('getJob', { extraInputs: [durableClient], handler: getJobHttp });
registerRoute('cancelJob', { extraInputs: [durableClient], handler: cancelJobHttp });
