/**
 * `POST /local/token`: tokens on demand for tests and scripts, without a flow (the development issuer's
 * shortcut, never part of Entra). JSON body:
 *   { "user": "alice", "roles": ["Jobs.Submit"], "name": "Alice" }       a user's delegated token (user made if new)
 *   { "client": "<client id>" }                                          an app-only token of a known client
 *   "audience": "...", "lifetimeSeconds": -600                            another audience, or an expired token
 * Answers { access_token, expires_on, token_type }.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IdentityState } from '../state';
import { appAccessToken, userAccessToken } from '../tokens';
import { readBody, sendJson } from './http';

interface LocalTokenRequest {
  user?: unknown;
  roles?: unknown;
  name?: unknown;
  client?: unknown;
  audience?: unknown;
  lifetimeSeconds?: unknown;
}

const USERNAME = /^[a-z0-9][a-z0-9._-]{0,63}$/;

export async function localToken(req: IncomingMessage, res: ServerResponse, state: IdentityState): Promise<void> {
  let body: LocalTokenRequest;
  try {
    body = JSON.parse(await readBody(req)) as LocalTokenRequest;
  } catch {
    return sendJson(res, 400, { error: 'invalid_request', error_description: 'the body must be JSON' });
  }
  const bad = (description: string) => sendJson(res, 400, { error: 'invalid_request', error_description: description });
  const lifetimeSeconds = body.lifetimeSeconds === undefined ? undefined : Number(body.lifetimeSeconds);
  if (lifetimeSeconds !== undefined && (!Number.isInteger(lifetimeSeconds) || Math.abs(lifetimeSeconds) > 86_400))
    return bad('lifetimeSeconds must be a whole number of seconds, at most a day either way');
  if (body.audience !== undefined && typeof body.audience !== 'string') return bad('audience must be a string');
  const opts = { audience: body.audience as string | undefined, lifetimeSeconds };
  if (body.client !== undefined) {
    const client = typeof body.client === 'string' ? state.client(body.client) : undefined;
    if (!client) return bad(`no client ${JSON.stringify(body.client)} in the local tenant`);
    const { token, expiresOn } = await appAccessToken(state.iss, client, opts);
    return sendJson(res, 200, { token_type: 'Bearer', access_token: token, expires_on: expiresOn });
  }
  const username = body.user ?? state.iss.directory.defaultUser;
  if (typeof username !== 'string' || !USERNAME.test(username)) return bad('user must be a user name (lowercase letters, digits, ".", "_", "-")');
  if (body.roles !== undefined && !(Array.isArray(body.roles) && body.roles.every((r) => typeof r === 'string')))
    return bad('roles must be a list of app role values');
  if (body.name !== undefined && typeof body.name !== 'string') return bad('name must be a string');
  const user = state.ensureUser(username, body.roles as string[] | undefined, body.name as string | undefined);
  const { token, expiresOn } = await userAccessToken(state.iss, user, undefined, opts);
  return sendJson(res, 200, { token_type: 'Bearer', access_token: token, expires_on: expiresOn });
}
