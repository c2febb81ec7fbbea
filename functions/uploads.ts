/**
 * POST /api/uploads   (Jobs.Submit or Jobs.Admin, or operator key)
 *
 * Write access for a client's own uploads (`hpcjob upload`): the body names a container, an optional prefix (default:
 * the caller's own data area `users/<ownerKey>/`) and the files; the answer has, per file, its blob's URL with a SAS
 * for exactly that blob (read, create, write: read lets a client compare size and MD5 to resume), valid an hour at
 * most, signed with a user delegation key of the app's identity (no key leaves the app; no SAS is stored). On an
 * account with a hierarchical namespace it also has a directory SAS (cw) on exactly the prefix, as outputs get.
 * The prefix must lie in the caller's area or a shared area its roles open for writing (403 DataAreaForbidden); a
 * malformed body, an unknown account or a container the deployment refuses is 400 with the field path.
 */
import { type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { appConfig, dataAccount } from '../shared/services';
import { dataCallerOf } from '../shared/adapters/auth';
import { dataAccessPolicy, dataAccessRefusal } from '../shared/core/intake/dataAccess';
import { parseUploadRequest, planUpload } from '../shared/adapters/intake/uploads';
import { UPLOAD_SAS_MINUTES, UPLOAD_SAS_PERMISSIONS, type UploadResponse } from '../shared/core/contract/uploads';
import { blobSasUrls, directorySasUrl } from '../shared/adapters/storage/sas';
import { forbiddenRequest, invalidRequest, problem, unavailable } from './lib/http';
import { authorize } from './lib/auth';
import { registerRoute } from './lib/route';

export async function uploadsHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'job:submit');
  if (!auth.ok) return auth.response;
  if (!/^application\/json\b/i.test(request.headers.get('content-type') ?? ''))
    return problem(415, 'UnsupportedMediaType', 'send the request as application/json');
  let body: unknown;
  try {
    body = await request.json();
  } catch (err) {
    return invalidRequest([{ path: '(body)', message: `not JSON: ${(err as Error).message}` }]);
  }
  const parsed = parseUploadRequest(body);
  if (!parsed.ok) return invalidRequest(parsed.errors);
  const config = appConfig();
  const policy = dataAccessPolicy(config);
  const decision = planUpload(parsed.request, dataCallerOf(auth.principal), {
    dataAccounts: config.dataAccess.accounts.map((a) => a.accountName),
    sharedAreas: config.dataAccess.sharedAreas,
    containerRefusal: (account, container) => dataAccessRefusal(policy, account, container),
  });
  if (!decision.ok) return decision.status === 403 ? forbiddenRequest(decision.code, decision.errors) : invalidRequest(decision.errors);
  const { plan } = decision;
  try {
    const account = dataAccount(plan.account, plan.container);
    // A user's first upload may be to a container nobody made yet (the local stack starts empty): the app makes it.
    await account.service.getContainerClient(plan.container).createIfNotExists();
    const minutes = Math.min(UPLOAD_SAS_MINUTES, config.pipeline.sasMaxLifetimeMinutes);
    const expires = new Date(Date.now() + minutes * 60_000);
    const urls = await blobSasUrls(
      account,
      plan.container,
      plan.files.map((f) => f.blob),
      UPLOAD_SAS_PERMISSIONS,
      expires,
    );
    const hns = plan.prefix !== '' && (config.dataAccess.hnsAccounts ?? []).includes(plan.account);
    const body: UploadResponse = {
      account: plan.account,
      container: plan.container,
      prefix: plan.prefix,
      expiresAt: expires.toISOString(),
      permissions: UPLOAD_SAS_PERMISSIONS,
      files: plan.files.map((f, i) => ({ name: f.name, blob: f.blob, url: urls[i] })),
      ...(hns ? { directoryUrl: await directorySasUrl(account, plan.container, plan.prefix, 'cw', expires) } : {}),
    };
    return { status: 200, headers: { 'Cache-Control': 'no-store' }, jsonBody: body };
  } catch (err) {
    return unavailable(context, 'uploads', err);
  }
}

registerRoute('uploads', { handler: uploadsHttp });
