/**
 * A private registry, as Azure Container Registry does it (the token service of the distribution spec, ACR's
 * flavour): a request to /v2/ without a valid access token is answered 401 with
 * `WWW-Authenticate: Bearer realm="<registry>/oauth2/token",service="<registry>"[,scope="repository:<name>:pull"]`.
 * Clients get an access token from the realm:
 *   - GET /oauth2/token?service=…&scope=… with Basic credentials: a registry credential (an ACR token or admin
 *     user: user name and password), or ACR's refresh-token login (user 00000000-0000-0000-0000-000000000000,
 *     password = a refresh token);
 *   - POST /oauth2/token, grant_type=refresh_token (or password), service, scope, refresh_token;
 * and a refresh token from an Entra ID access token (a managed identity's, for example):
 *   - POST /oauth2/exchange, grant_type=access_token, service, access_token → { refresh_token }.
 * Pull rights come from "role assignments": the Entra principals given AcrPull, and the configured credentials.
 * Tokens are JWTs the registry signs itself (HS256 with a key made at start), checked for signature, service and
 * expiry: a wrong or expired token is refused.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SignJWT, jwtVerify, errors as joseErrors } from 'jose';

/** ACR's user name for a login with a refresh token as the password. */
export const REFRESH_TOKEN_USER = '00000000-0000-0000-0000-000000000000';
/** Entra audiences ACR accepts at /oauth2/exchange. */
export const REGISTRY_AAD_AUDIENCES = [
  'https://containerregistry.azure.net',
  'https://containerregistry.azure.net/',
  'https://management.azure.com/',
  'https://management.azure.com',
  'https://management.core.windows.net/',
];

export interface VerifiedPrincipal {
  oid: string;
}

export interface RegistryAuthOptions {
  /** Checks an Entra access token for one of `audiences` (the local identity service's verifier). */
  verifyEntraToken?: (token: string, audiences: string[]) => Promise<VerifiedPrincipal>;
  /** Entra object ids holding AcrPull on this registry. */
  pullPrincipals?: string[];
  /** Registry credentials (ACR tokens, the admin user): user name and password, with pull on every repository. */
  credentials?: { username: string; password: string }[];
  refreshTokenSeconds?: number;
  accessTokenSeconds?: number;
}

export interface RegistryAuth {
  opts: RegistryAuthOptions;
  key: Uint8Array;
}

export function createRegistryAuth(opts: RegistryAuthOptions): RegistryAuth {
  return { opts, key: randomBytes(32) };
}

/** `<host:port>`: the service name ACR tokens are for. */
export function serviceOf(req: IncomingMessage): string {
  return String(req.headers.host ?? 'registry.invalid');
}

function realmOf(req: IncomingMessage): string {
  return `http://${serviceOf(req)}/oauth2/token`;
}

export function challenge(req: IncomingMessage, scope?: string): string {
  return `Bearer realm="${realmOf(req)}",service="${serviceOf(req)}"${scope ? `,scope="${scope}"` : ''}`;
}

interface Grant {
  sub: string;
  /** Pull on every repository (AcrPull / a credential), or nothing. */
  pull: boolean;
}

async function sign(auth: RegistryAuth, claims: Record<string, unknown>, service: string, seconds: number): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('local-registry')
    .setAudience(service)
    .setIssuedAt(now)
    .setNotBefore(now)
    .setExpirationTime(now + seconds)
    .sign(auth.key);
}

async function verify(auth: RegistryAuth, token: string, service: string, kind: 'refresh_token' | 'access_token'): Promise<Record<string, unknown>> {
  const { payload } = await jwtVerify(token, auth.key, { algorithms: ['HS256'], issuer: 'local-registry', audience: service });
  if (payload.kind !== kind) throw new Error(`not a ${kind.replace('_', ' ')}`);
  return payload;
}

/** Who a Basic credential is, or undefined when it is wrong. */
async function basicGrant(auth: RegistryAuth, header: string | undefined, service: string): Promise<Grant | undefined> {
  const m = /^Basic\s+(\S+)$/i.exec(header ?? '');
  if (!m) return undefined;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  const [user, password] = colon < 0 ? [text, ''] : [text.slice(0, colon), text.slice(colon + 1)];
  if (user === REFRESH_TOKEN_USER) return refreshGrant(auth, password, service);
  const cred = (auth.opts.credentials ?? []).find((c) => c.username === user && c.password === password);
  return cred ? { sub: `credential:${user}`, pull: true } : undefined;
}

async function refreshGrant(auth: RegistryAuth, token: string, service: string): Promise<Grant | undefined> {
  try {
    const p = await verify(auth, token, service, 'refresh_token');
    return { sub: String(p.sub), pull: p.pull === true };
  } catch {
    return undefined;
  }
}

type Send = (status: number, body: unknown, headers?: Record<string, string>) => void;

function unauthorized(send: Send, message: string): void {
  send(401, { errors: [{ code: 'UNAUTHORIZED', message }] });
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 64 * 1024) throw new Error('request body too large');
    chunks.push(c as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}

/** Access to `scope` ("repository:<name>:pull[,…]") for a grant: pull only, and only with the right to pull. */
function accessFor(grant: Grant, scope: string | null): { type: string; name: string; actions: string[] }[] {
  if (!scope) return [];
  return scope.split(' ').flatMap((s) => {
    const [type, name, actions] = s.split(':');
    if (type !== 'repository' || !name) return [];
    const granted = grant.pull && (actions ?? '').split(',').includes('pull') ? ['pull'] : [];
    return [{ type, name, actions: granted }];
  });
}

async function issueAccess(auth: RegistryAuth, send: Send, grant: Grant, service: string, scope: string | null): Promise<void> {
  const seconds = auth.opts.accessTokenSeconds ?? 20 * 60;
  const token = await sign(auth, { kind: 'access_token', sub: grant.sub, access: accessFor(grant, scope) }, service, seconds);
  // Docker reads `token` or `access_token`; ACR answers access_token.
  send(200, { access_token: token, token, expires_in: seconds });
}

/** /oauth2/token and /oauth2/exchange; undefined when the path is neither. */
export async function handleTokenService(auth: RegistryAuth, req: IncomingMessage, res: ServerResponse, pathname: string, url: URL): Promise<boolean> {
  if (pathname !== '/oauth2/token' && pathname !== '/oauth2/exchange') return false;
  const send: Send = (status, body, headers = {}) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store', ...headers });
    res.end(text);
  };
  const service = serviceOf(req);
  const method = req.method ?? 'GET';
  if (pathname === '/oauth2/exchange') {
    if (method !== 'POST') return (send(405, { errors: [{ code: 'UNSUPPORTED', message: 'use POST' }] }), true);
    const form = await readForm(req);
    if (form.get('grant_type') !== 'access_token')
      return (send(400, { errors: [{ code: 'UNSUPPORTED', message: `grant_type must be access_token, got '${form.get('grant_type') ?? ''}'` }] }), true);
    if (form.get('service') !== service) return (send(400, { errors: [{ code: 'INVALID_SERVICE', message: `service must be ${service}` }] }), true);
    const aad = form.get('access_token') ?? '';
    if (!auth.opts.verifyEntraToken) return (unauthorized(send, 'this registry does not accept Entra ID tokens'), true);
    let principal: VerifiedPrincipal;
    try {
      principal = await auth.opts.verifyEntraToken(aad, REGISTRY_AAD_AUDIENCES);
    } catch (err) {
      return (unauthorized(send, `the Entra ID access token was refused: ${(err as Error).message}`), true);
    }
    const pull = (auth.opts.pullPrincipals ?? []).includes(principal.oid);
    const refresh = await sign(
      auth,
      { kind: 'refresh_token', sub: principal.oid, pull, grant_type: 'refresh_token' },
      service,
      auth.opts.refreshTokenSeconds ?? 3 * 3600,
    );
    send(200, { refresh_token: refresh });
    return true;
  }
  let grant: Grant | undefined;
  let scope: string | null;
  if (method === 'GET') {
    if (url.searchParams.get('service') && url.searchParams.get('service') !== service)
      return (send(400, { errors: [{ code: 'INVALID_SERVICE', message: `service must be ${service}` }] }), true);
    scope = url.searchParams.get('scope');
    grant = await basicGrant(auth, req.headers.authorization, service);
    if (!grant)
      return (
        unauthorized(send, req.headers.authorization ? 'authentication required: the credentials are wrong or expired' : 'authentication required'),
        true
      );
  } else if (method === 'POST') {
    const form = await readForm(req);
    if (form.get('service') !== service) return (send(400, { errors: [{ code: 'INVALID_SERVICE', message: `service must be ${service}` }] }), true);
    scope = form.get('scope');
    const type = form.get('grant_type');
    if (type === 'refresh_token') grant = await refreshGrant(auth, form.get('refresh_token') ?? '', service);
    else if (type === 'password')
      grant = await basicGrant(auth, `Basic ${Buffer.from(`${form.get('username') ?? ''}:${form.get('password') ?? ''}`).toString('base64')}`, service);
    else return (send(400, { errors: [{ code: 'UNSUPPORTED', message: `grant_type must be refresh_token or password, got '${type ?? ''}'` }] }), true);
    if (!grant) return (unauthorized(send, 'the refresh token or password is wrong or expired'), true);
  } else {
    return (send(405, { errors: [{ code: 'UNSUPPORTED', message: 'use GET or POST' }] }), true);
  }
  await issueAccess(auth, send, grant, service, scope);
  return true;
}

export type AccessCheck = { ok: true } | { ok: false; status: 401 | 403; code: 'UNAUTHORIZED' | 'DENIED'; message: string };

/** Whether a request may read `repository` (undefined: the /v2/ ping or the catalog, any valid token). */
export async function checkAccess(auth: RegistryAuth, req: IncomingMessage, repository: string | undefined): Promise<AccessCheck> {
  const m = /^Bearer\s+(\S+)$/i.exec(String(req.headers.authorization ?? ''));
  if (!m) return { ok: false, status: 401, code: 'UNAUTHORIZED', message: 'authentication required' };
  let payload: Record<string, unknown>;
  try {
    payload = await verify(auth, m[1], serviceOf(req), 'access_token');
  } catch (err) {
    const why = err instanceof joseErrors.JWTExpired ? 'the access token expired' : 'the access token is invalid';
    return { ok: false, status: 401, code: 'UNAUTHORIZED', message: `authentication required: ${why}` };
  }
  if (repository === undefined) return { ok: true };
  const access = Array.isArray(payload.access) ? (payload.access as { type?: string; name?: string; actions?: string[] }[]) : [];
  if (access.some((a) => a.type === 'repository' && a.name === repository && (a.actions ?? []).includes('pull'))) return { ok: true };
  return { ok: false, status: 403, code: 'DENIED', message: 'requested access to the resource is denied' };
}
