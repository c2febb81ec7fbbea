/**
 * `GET /msi/token`: the App Service managed identity endpoint (IDENTITY_ENDPOINT, protocol 2019-08-01), which
 * Azure Functions offers the app and which @azure/identity's ManagedIdentityCredential (and so
 * DefaultAzureCredential) calls when IDENTITY_ENDPOINT and IDENTITY_HEADER are set:
 *   GET <IDENTITY_ENDPOINT>?resource=<uri>&api-version=2019-08-01[&client_id=|&principal_id=|&object_id=|&mi_res_id=]
 *   X-IDENTITY-HEADER: <IDENTITY_HEADER>
 * answered with { access_token, expires_on (epoch seconds, as a string), resource, token_type, client_id }.
 * The local Function App has only a user-assigned identity (as infra/main.bicep gives it), so a request that names
 * none gets App Service's answer for that case, 400 "Unable to load the proper Managed Identity." (the body seen from
 * the real endpoint, e.g. github.com/Azure/azure-sdk-for-net/issues/43691); so does one naming an identity the app
 * does not have. Served on the loopback http listener only, like the real endpoint (http://127.0.0.1:<port>/msi/token).
 */
import { randomUUID, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IdentityState } from '../state';
import { knownResource, resourceAccessToken } from '../resourceTokens';
import { sendJson } from './http';

export const APP_SERVICE_IDENTITY_PATH = '/msi/token';
export const APP_SERVICE_IDENTITY_API_VERSION = '2019-08-01';

function fail(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { statusCode: status, message, correlationId: randomUUID() });
}

function sameSecret(given: string | string[] | undefined, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export async function appServiceIdentityToken(req: IncomingMessage, res: ServerResponse, state: IdentityState, url: URL): Promise<void> {
  if (url.protocol !== 'http:') return fail(res, 404, 'The managed identity endpoint is served on the loopback http listener only.');
  if (req.method !== 'GET') return fail(res, 405, `${req.method ?? ''} is not allowed on the managed identity endpoint; use GET.`);
  if (!sameSecret(req.headers['x-identity-header'], state.appService.header)) {
    return fail(res, 401, "The X-IDENTITY-HEADER header is missing or does not hold this app's IDENTITY_HEADER.");
  }
  const q = url.searchParams;
  if (q.get('api-version') !== APP_SERVICE_IDENTITY_API_VERSION) {
    return fail(res, 400, `api-version must be ${APP_SERVICE_IDENTITY_API_VERSION} (got '${q.get('api-version') ?? ''}').`);
  }
  const resource = q.get('resource');
  if (!resource) return fail(res, 400, 'The resource query parameter is required.');
  const selectors = ['client_id', 'principal_id', 'object_id', 'mi_res_id'].filter((k) => q.has(k));
  if (selectors.length > 1) return fail(res, 400, `Name the identity once: ${selectors.join(', ')} were all given.`);
  const value = selectors.length ? (q.get(selectors[0]) as string).toLowerCase() : undefined;
  const identity = state.appService.identities.find(
    (i) =>
      (selectors[0] === 'client_id' && i.clientId === value) ||
      ((selectors[0] === 'principal_id' || selectors[0] === 'object_id') && i.principalId === value) ||
      (selectors[0] === 'mi_res_id' && i.resourceId.toLowerCase() === value),
  );
  // No system-assigned identity: a request that names no (known) identity cannot be served.
  if (!identity) return fail(res, 400, 'Unable to load the proper Managed Identity.');
  if (!knownResource(resource)) {
    return fail(res, 400, `AADSTS500011: The resource principal named ${resource} was not found in the tenant named ${state.iss.directory.tenantId}.`);
  }
  const { token, expiresOn } = await resourceAccessToken(state.iss, { kind: 'managedIdentity', identity }, resource);
  sendJson(res, 200, { access_token: token, expires_on: String(expiresOn), resource, token_type: 'Bearer', client_id: identity.clientId });
}
