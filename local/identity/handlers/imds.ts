/**
 * `GET /imds/<host key>/metadata/identity/oauth2/token?api-version=…&resource=…[&client_id|object_id|msi_res_id=…]`
 * with `Metadata: true`: the instance metadata service's token endpoint, as a VM (or a Batch node) calls it at
 * 169.254.169.254, answering for the identities assigned to that host only. Answers and errors follow IMDS: the
 * token JSON with string numbers; 400 invalid_request for a missing Metadata header, an unknown identity or several
 * identities and none named; 400 invalid_resource for a resource Entra does not know. Tokens are the v1.0 resource
 * tokens every other path of the local tenant issues (resourceTokens.ts), with IMDS's day-long lifetime.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IdentityState } from '../state';
import { knownResource, resourceAccessToken } from '../resourceTokens';
import { sendJson } from './http';

const TOKEN_PATH = 'metadata/identity/oauth2/token';

/** Managed identity tokens from IMDS last about a day (they are cached by the platform, not refreshed per call). */
export const IMDS_TOKEN_SECONDS = 24 * 3_600;

export async function imds(req: IncomingMessage, res: ServerResponse, state: IdentityState, url: URL): Promise<void> {
  const [, key, ...rest] = url.pathname.split('/').filter(Boolean);
  const identities = key ? state.managed.hostIdentities(key) : undefined;
  // An unknown host key is as if nothing listened there: IMDS exists only on hosts.
  if (!identities) return sendJson(res, 404, { error: 'not_found', error_description: 'no instance metadata service here' });
  if (rest.join('/') !== TOKEN_PATH) return sendJson(res, 404, { error: 'not_found', error_description: `no IMDS route /${rest.join('/')}` });
  if (req.method !== 'GET') return sendJson(res, 405, { error: 'invalid_request', error_description: 'method not allowed' });
  const bad = (description: string, error = 'invalid_request') => sendJson(res, 400, { error, error_description: description });
  if ((req.headers.metadata ?? '').toString().toLowerCase() !== 'true') return bad('Required metadata header not specified');
  const q = url.searchParams;
  if (!q.get('api-version')) return bad("Required query variable 'api-version' is missing");
  const resource = q.get('resource') ?? '';
  if (!resource) return bad("Required query variable 'resource' is missing");
  if (!knownResource(resource)) {
    return bad(`AADSTS500011: The resource principal named ${resource} was not found in the tenant named ${state.iss.directory.tenantId}.`, 'invalid_resource');
  }
  const clientId = q.get('client_id')?.toLowerCase();
  const objectId = q.get('object_id')?.toLowerCase();
  const resourceId = (q.get('msi_res_id') ?? q.get('mi_res_id'))?.toLowerCase();
  const named = [clientId, objectId, resourceId].filter(Boolean).length;
  if (named > 1) return bad('Only one of client_id, object_id and msi_res_id may be given');
  const mi =
    named === 0
      ? identities.length === 1
        ? identities[0]
        : undefined
      : identities.find((i) => i.clientId === clientId || i.principalId === objectId || i.resourceId.toLowerCase() === resourceId);
  if (!mi) {
    return bad(
      named === 0 && identities.length > 1
        ? 'Multiple user assigned identities exist, please specify the clientId / resourceId of the identity in the token request'
        : 'Identity not found',
    );
  }
  const { token, expiresOn } = await resourceAccessToken(state.iss, { kind: 'managedIdentity', identity: mi }, resource, {
    lifetimeSeconds: IMDS_TOKEN_SECONDS,
  });
  const now = Math.floor(Date.now() / 1000);
  sendJson(res, 200, {
    access_token: token,
    client_id: mi.clientId,
    expires_in: String(IMDS_TOKEN_SECONDS),
    expires_on: String(expiresOn),
    ext_expires_in: String(IMDS_TOKEN_SECONDS),
    not_before: String(now),
    resource,
    token_type: 'Bearer',
  });
}
