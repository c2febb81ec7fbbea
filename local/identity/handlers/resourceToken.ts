/**
 * `POST /local/resource-token`: Azure resource tokens on demand for tests and scripts (the development issuer's
 * shortcut, like /local/token; never part of Entra). JSON body:
 *   { "resource": "https://storage.azure.com", "user": "admin" }          a user's token, as through the Azure CLI
 *   { "resource": "https://batch.core.windows.net/", "identity": "<client id>" }   a managed identity's token
 *   "lifetimeSeconds": -600                                                an expired token
 * Answers { access_token, expires_on, token_type }. The resource must be one the tenant knows (resourceTokens.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IdentityState } from '../state';
import { AZURE_CLI_CLIENT_ID, OPERATOR_USER } from '../managedIdentities';
import { knownResource, resourceAccessToken, type ResourcePrincipal } from '../resourceTokens';
import { readBody, sendJson } from './http';

export async function localResourceToken(req: IncomingMessage, res: ServerResponse, state: IdentityState): Promise<void> {
  let body: { resource?: unknown; user?: unknown; identity?: unknown; lifetimeSeconds?: unknown };
  try {
    body = JSON.parse(await readBody(req)) as typeof body;
  } catch {
    return sendJson(res, 400, { error: 'invalid_request', error_description: 'the body must be JSON' });
  }
  const bad = (description: string) => sendJson(res, 400, { error: 'invalid_request', error_description: description });
  if (typeof body.resource !== 'string' || !knownResource(body.resource))
    return bad(`resource must be an Azure resource the tenant knows, got ${JSON.stringify(body.resource)}`);
  const lifetimeSeconds = body.lifetimeSeconds === undefined ? undefined : Number(body.lifetimeSeconds);
  if (lifetimeSeconds !== undefined && (!Number.isInteger(lifetimeSeconds) || Math.abs(lifetimeSeconds) > 86_400))
    return bad('lifetimeSeconds must be a whole number of seconds, at most a day either way');
  let principal: ResourcePrincipal;
  if (body.identity !== undefined) {
    const identity = typeof body.identity === 'string' ? state.managed.byClientId(body.identity) : undefined;
    if (!identity) return bad(`no managed identity with client id ${JSON.stringify(body.identity)}`);
    principal = { kind: 'managedIdentity', identity };
  } else {
    const username = body.user ?? OPERATOR_USER;
    const user = typeof username === 'string' ? state.user(username) : undefined;
    if (!user) return bad(`no user ${JSON.stringify(username)} in the local tenant`);
    principal = { kind: 'user', user, clientId: AZURE_CLI_CLIENT_ID };
  }
  const { token, expiresOn } = await resourceAccessToken(state.iss, principal, body.resource, { lifetimeSeconds });
  sendJson(res, 200, { token_type: 'Bearer', access_token: token, expires_on: expiresOn });
}
