/**
 * `POST /{tenant}/oauth2/v2.0/token`: the grants MSAL uses for @azure/identity's ClientSecretCredential
 * (client_credentials), DeviceCodeCredential (device_code) and its silent renewals (refresh_token). Answers and
 * errors follow Entra's shapes (AADSTS codes), e.g. `authorization_pending` while a device code waits.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LocalClient } from '../directory';
import type { IdentityState } from '../state';
import { ACCESS_TOKEN_SECONDS, appAccessToken, clientInfo, idToken, userAccessToken } from '../tokens';
import { oauthError, readForm, sendJson } from './http';

const OIDC_SCOPES = new Set(['openid', 'profile', 'email', 'offline_access']);

/** The API scope asked for, or why it cannot be granted. */
function resourceScope(state: IdentityState, scope: string | null): { ok: true; scope: string; isDefault: boolean } | { ok: false; message: string } {
  const api = state.iss.directory.api;
  const asked = (scope ?? '').split(/\s+/).filter((s) => s && !OIDC_SCOPES.has(s));
  if (asked.length !== 1) return { ok: false, message: `The scope must name one resource scope, e.g. ${api.appIdUri}/.default; got '${scope ?? ''}'.` };
  const m = /^(.*)\/([^/]+)$/.exec(asked[0]);
  const resource = m?.[1];
  if (!m || (resource !== api.appIdUri && resource !== api.clientId)) {
    return { ok: false, message: `The resource principal named ${resource ?? asked[0]} was not found in the tenant named ${state.iss.directory.tenantId}.` };
  }
  if (m[2] !== '.default' && m[2] !== api.scope) return { ok: false, message: `The application asked for scope '${m[2]}' that doesn't exist on the resource.` };
  return { ok: true, scope: asked[0], isDefault: m[2] === '.default' };
}

function authenticateClient(req: IncomingMessage, form: URLSearchParams, state: IdentityState): LocalClient | undefined {
  let id = form.get('client_id') ?? undefined;
  let secret = form.get('client_secret') ?? undefined;
  const basic = /^Basic (.+)$/i.exec(req.headers.authorization ?? '');
  if (basic) {
    const [u, p] = Buffer.from(basic[1], 'base64').toString('utf8').split(':');
    id = decodeURIComponent(u ?? '');
    secret = decodeURIComponent(p ?? '');
  }
  const client = id ? state.client(id) : undefined;
  return client?.secret !== undefined && secret === client.secret ? client : undefined;
}

export async function token(req: IncomingMessage, res: ServerResponse, state: IdentityState): Promise<void> {
  const form = await readForm(req);
  const grant = form.get('grant_type');
  const api = state.iss.directory.api;
  if (grant === 'client_credentials') {
    const client = authenticateClient(req, form, state);
    if (!client)
      return oauthError(res, 401, 'invalid_client', 7000215, 'Invalid client secret provided, or the client is not a confidential client of this tenant.');
    const scope = resourceScope(state, form.get('scope'));
    if (!scope.ok) return oauthError(res, 400, 'invalid_scope', 500011, scope.message);
    if (!scope.isDefault)
      return oauthError(
        res,
        400,
        'invalid_scope',
        1002012,
        `The provided value for scope ${scope.scope} is not valid. Client credential flows must have a scope value with /.default suffixed to the resource identifier.`,
      );
    const { token: accessToken } = await appAccessToken(state.iss, client);
    return sendJson(res, 200, { token_type: 'Bearer', expires_in: ACCESS_TOKEN_SECONDS, ext_expires_in: ACCESS_TOKEN_SECONDS, access_token: accessToken });
  }
  // MSAL sends "device_code"; RFC 8628 names the grant with the URN. Entra accepts both.
  if (grant === 'urn:ietf:params:oauth:grant-type:device_code' || grant === 'device_code') {
    const code = state.deviceCodes.get(form.get('device_code') ?? '');
    if (!code || code.clientId !== form.get('client_id')) return oauthError(res, 400, 'invalid_grant', 70000, 'The provided device code is not valid.');
    if (code.expiresAt <= Date.now()) {
      state.deviceCodes.delete(code.deviceCode);
      return oauthError(
        res,
        400,
        'expired_token',
        70020,
        "The provided value for the input parameter 'device_code' is not valid. This device code has expired.",
      );
    }
    if (!code.approvedBy)
      return oauthError(res, 400, 'authorization_pending', 70016, 'OAuth 2.0 device flow error. Authorization is pending. Continue polling.');
    state.deviceCodes.delete(code.deviceCode);
    return userTokens(res, state, code.approvedBy, code.clientId, code.scope);
  }
  if (grant === 'refresh_token') {
    const refresh = state.refreshTokens.get(form.get('refresh_token') ?? '');
    if (!refresh || refresh.clientId !== form.get('client_id'))
      return oauthError(res, 400, 'invalid_grant', 9002313, 'Invalid request. Request is malformed or invalid (refresh token).');
    return userTokens(res, state, refresh.username, refresh.clientId, form.get('scope') ?? refresh.scope);
  }
  return oauthError(
    res,
    400,
    'unsupported_grant_type',
    70003,
    `The app requested an unsupported grant type '${grant ?? ''}' (the local issuer speaks client_credentials, device_code and refresh_token; api ${api.appIdUri}).`,
  );
}

async function userTokens(res: ServerResponse, state: IdentityState, username: string, clientId: string, requested: string): Promise<void> {
  const user = state.user(username);
  const scope = resourceScope(state, requested);
  if (!user) return oauthError(res, 400, 'invalid_grant', 50034, `The user account ${username} does not exist in the tenant.`);
  if (!scope.ok) return oauthError(res, 400, 'invalid_scope', 500011, scope.message);
  const client = state.client(clientId);
  const { token: accessToken } = await userAccessToken(state.iss, user, client);
  const { token: id } = await idToken(state.iss, user, clientId);
  return sendJson(res, 200, {
    token_type: 'Bearer',
    scope: `${state.iss.directory.api.appIdUri}/${state.iss.directory.api.scope}`,
    expires_in: ACCESS_TOKEN_SECONDS,
    ext_expires_in: ACCESS_TOKEN_SECONDS,
    access_token: accessToken,
    refresh_token: state.newRefreshToken({ username, clientId, scope: scope.scope }),
    id_token: id,
    client_info: clientInfo(state.iss, user),
  });
}
