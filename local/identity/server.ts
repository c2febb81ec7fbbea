/**
 * Routes of the local identity service (one handler behind the https and the loopback http listener):
 *   GET  /{tenant}/v2.0/.well-known/openid-configuration    OpenID discovery (Entra v2.0 layout)
 *   GET  /{tenant}/discovery/v2.0/keys                       JWKS (the one RS256 key)
 *   POST /{tenant}/oauth2/v2.0/token                         client_credentials, device_code, refresh_token
 *   POST /{tenant}/oauth2/v2.0/devicecode                    device authorization
 *   GET|POST /device                                         the device code verification page
 *   POST /local/token                                        development tokens (tests, scripts)
 *   POST /local/resource-token                               development tokens for Azure resources (Storage, Batch)
 *   GET  /msi/token                                          App Service's managed identity endpoint (http only)
 *   GET  /imds/{host key}/metadata/identity/oauth2/token     a host's instance metadata service (handlers/imds.ts)
 * Anything else is 404; an operation Entra has that we do not emulate (authorize, logout) is 501.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { IdentityState } from './state';
import { keys, openIdConfiguration, unknownTenant } from './handlers/oidc';
import { token } from './handlers/token';
import { deviceAuthorization, devicePage } from './handlers/deviceCode';
import { localToken } from './handlers/local';
import { sendJson } from './handlers/http';
import { APP_SERVICE_IDENTITY_PATH, appServiceIdentityToken } from './handlers/appServiceIdentity';
import { localResourceToken } from './handlers/resourceToken';
import { imds } from './handlers/imds';

export async function route(req: IncomingMessage, res: ServerResponse, state: IdentityState, origin: string): Promise<void> {
  const url = new URL(req.url ?? '/', origin);
  const method = req.method ?? 'GET';
  const parts = url.pathname.split('/').filter(Boolean);
  try {
    if (url.pathname === '/device' && (method === 'GET' || method === 'POST')) return await devicePage(req, res, state, url);
    if (url.pathname === '/local/token' && method === 'POST') return await localToken(req, res, state);
    if (url.pathname === '/local/resource-token' && method === 'POST') return await localResourceToken(req, res, state);
    if (url.pathname === APP_SERVICE_IDENTITY_PATH) return await appServiceIdentityToken(req, res, state, url);
    if (parts[0] === 'imds') return await imds(req, res, state, url);
    const [tenant, ...rest] = parts;
    const path = rest.join('/');
    const known = [
      'v2.0/.well-known/openid-configuration',
      'discovery/v2.0/keys',
      'oauth2/v2.0/token',
      'oauth2/v2.0/devicecode',
      'oauth2/v2.0/authorize',
      'oauth2/v2.0/logout',
    ];
    if (!tenant || !known.includes(path)) return sendJson(res, 404, { error: 'not_found', error_description: `no route ${method} ${url.pathname}` });
    if (tenant.toLowerCase() !== state.iss.directory.tenantId) return unknownTenant(res, tenant);
    if (path === 'v2.0/.well-known/openid-configuration' && method === 'GET') return openIdConfiguration(res, state, origin);
    if (path === 'discovery/v2.0/keys' && method === 'GET') return keys(res, state);
    if (path === 'oauth2/v2.0/token' && method === 'POST') return await token(req, res, state);
    if (path === 'oauth2/v2.0/devicecode' && method === 'POST') return await deviceAuthorization(req, res, state, origin);
    if (path === 'oauth2/v2.0/authorize' || path === 'oauth2/v2.0/logout') {
      return sendJson(res, 501, {
        error: 'not_implemented',
        error_description: 'the local issuer has no browser sign-in flow; use the device code flow or /local/token',
      });
    }
    return sendJson(res, 405, { error: 'method_not_allowed', error_description: `${method} is not allowed on ${url.pathname}` });
  } catch (err) {
    if (!res.headersSent) sendJson(res, 500, { error: 'server_error', error_description: (err as Error).message });
    else res.destroy();
  }
}
