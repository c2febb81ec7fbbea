/**
 * GET /api/jobs/{id}/outputs?top=<n>&continuationToken=<t>   (own job; admins any: the answer carries read SAS URLs)
 *
 * The job's outputs (spec `outputs`: the container and prefix it uploads to) with a read-only SAS URL per file, valid
 * for an hour (or the deployment's shorter SAS cap), minted for this caller with the app's identity: the client
 * never holds storage keys, and no SAS is ever stored. Pages of at most `top` files. A job whose spec has no outputs
 * section is 404 NoOutputs, and so is a job the caller may not see (404 JobNotFound, exactly like a missing one); the
 * data-access policy is applied again (a container the deployment no longer lets jobs use is 409), and so is the
 * data-area rule: the prefix must lie in the job owner's area or a shared area the caller may read (403
 * DataAreaForbidden; rows from before that rule keep their recorded prefix, shared/adapters/intake/dataAreas.ts).
 */
import { type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { appConfig, DataAccessDenied, dataAccount, jobStore } from '../shared/services';
import { listOutputs } from '../shared/adapters/storage/outputs';
import { readOnlyBlobUrl, withoutQuery } from '../shared/adapters/storage/sas';
import { OUTPUTS_PAGE_DEFAULT, OUTPUTS_PAGE_MAX, OUTPUTS_SAS_MINUTES, type JobOutputsResponse } from '../shared/core/contract/outputs';
import { forbiddenRequest, invalidRequest, problem, unavailable } from './lib/http';
import { dataCallerOf } from '../shared/adapters/auth';
import { DATA_AREA_FORBIDDEN, outputsReadRefusal } from '../shared/adapters/intake/dataAreas';
import { authorize, visibleJob } from './lib/auth';
import { badJobId } from './lib/jobId';
import { registerRoute } from './lib/route';

export async function jobOutputsHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:read');
  if (!auth.ok) return auth.response;
  const id = request.params.id;
  const invalidId = badJobId(id);
  if (invalidId) return invalidId;
  const topText = request.query.get('top') ?? String(OUTPUTS_PAGE_DEFAULT);
  const top = Number(topText);
  if (!Number.isInteger(top) || top < 1 || top > OUTPUTS_PAGE_MAX) {
    return invalidRequest([{ path: 'top', message: `must be a whole number from 1 to ${OUTPUTS_PAGE_MAX}, got ${JSON.stringify(topText)}` }]);
  }
  const continuationToken = request.query.get('continuationToken') ?? undefined;
  try {
    const job = visibleJob(auth.principal, await (await jobStore()).get(id));
    if (!job) return problem(404, 'JobNotFound', `no job with id ${id}`);
    const outputs = job.spec?.outputs;
    if (!outputs) return problem(404, 'NoOutputs', `job ${id} has no outputs section: nothing was uploaded`);
    const prefix = outputs.prefix ?? job.id;
    const outside = outputsReadRefusal(
      job,
      { account: outputs.account, container: outputs.container, prefix },
      dataCallerOf(auth.principal),
      appConfig().dataAccess.sharedAreas,
    );
    if (outside) return forbiddenRequest(DATA_AREA_FORBIDDEN, [{ path: 'outputs.prefix', message: outside }]);
    let account;
    try {
      account = dataAccount(outputs.account, outputs.container);
    } catch (err) {
      if (err instanceof DataAccessDenied) return problem(409, 'OutputsNotAccessible', err.message);
      throw err;
    }
    const page = await listOutputs(account, outputs.container, prefix, top, continuationToken);
    const minutes = Math.min(OUTPUTS_SAS_MINUTES, appConfig().pipeline.sasMaxLifetimeMinutes);
    const expires = new Date(Date.now() + minutes * 60_000);
    const files = await Promise.all(
      page.files.map(async (f) => ({
        name: f.name,
        size: f.size,
        ...(f.lastModified ? { lastModified: f.lastModified } : {}),
        url: await readOnlyBlobUrl(account, outputs.container, `${prefix}/${f.name}`, expires),
      })),
    );
    const body: JobOutputsResponse = {
      jobId: job.id,
      state: job.state,
      container: withoutQuery(account.service.getContainerClient(outputs.container).url),
      prefix,
      files,
      expiresAt: expires.toISOString(),
      ...(page.continuationToken ? { continuationToken: page.continuationToken } : {}),
      ...(job.result?.outputs?.errors.length ? { errors: job.result.outputs.errors } : {}),
    };
    return { status: 200, jsonBody: body };
  } catch (err) {
    return unavailable(context, `job outputs ${id}`, err);
  }
}

registerRoute('jobOutputs', { handler: jobOutputsHttp });
