/**
 * App Service Authentication ("Easy Auth") as the dashboard uses it, served by the local Functions host on the
 * app's own origin: `GET /.auth/login/aad` signs the browser in as the configured local user (no password: it is
 * the development tenant) and sets the session cookie; `GET /.auth/me` answers the signed-in user's claims and an
 * access token for the API, from the token store, as App Service does when the token store is on and the login
 * asks for the API's scope; `/.auth/refresh` renews it; `/.auth/logout` ends the session. Only what the dashboard
 * needs is emulated: the platform also injects X-MS-CLIENT-PRINCIPAL headers, which the app deliberately never
 * reads (the bearer token is the identity), so they are not emulated.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HostExtension } from '../host/extension';
import type { IdentityService } from './index';
import { defaultDirectory, type LocalUser } from './directory';

/** What the local Easy Auth needs of the identity service: its users, and a user's access token for the API. */
export type EasyAuthIdentity = Pick<IdentityService, 'user' | 'userToken'> & { directory: { defaultUser: string } };

/**
 * The identity service seen from another process (the supervised stack's Functions host worker): users from the
 * tenant's directory, tokens from the service's `/local/token` endpoint over loopback.
 */
export function remoteEasyAuthIdentity(identityHttpUrl: string): EasyAuthIdentity {
  const directory = defaultDirectory();
  return {
    directory,
    user: (username: string): LocalUser | undefined => directory.users.find((u) => u.username === username),
    async userToken(username: string): Promise<string> {
      const res = await fetch(`${identityHttpUrl}/local/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ user: username }),
      });
      if (!res.ok) throw new Error(`local identity service answered ${res.status} for a token of ${username}: ${await res.text()}`);
      return ((await res.json()) as { access_token: string }).access_token;
    },
  };
}

export const SESSION_COOKIE = 'AppServiceAuthSession';

interface Session {
  username: string;
  token: string;
  expiresOn: number;
}

function cookie(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return v.join('=');
  }
  return undefined;
}

/** Only a same-origin path may be a redirect target (an open redirect would be a phishing aid). */
function safeRedirect(target: string | null, fallback: string): string {
  return target && /^\/(?!\/)[^\s\\]*$/.test(target) ? target : fallback;
}

function decodeClaims(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as Record<string, unknown>;
}

export function createLocalEasyAuth(identity: EasyAuthIdentity, opts: { user?: string } = {}): HostExtension {
  const sessions = new Map<string, Session>();
  const username = opts.user ?? identity.directory.defaultUser;

  async function freshToken(session: Session): Promise<void> {
    if (session.expiresOn - Date.now() / 1000 > 300) return;
    session.token = await identity.userToken(session.username);
    session.expiresOn = Number(decodeClaims(session.token).exp);
  }

  const send = (res: ServerResponse, status: number, body?: unknown, headers: Record<string, string> = {}) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    res.writeHead(status, { ...(text ? { 'Content-Type': 'application/json; charset=utf-8' } : {}), 'Cache-Control': 'no-store', ...headers });
    res.end(text);
  };

  return {
    name: 'local-easy-auth',
    triggerTypes: [],
    inputBindingTypes: [],
    async start() {},
    async stop() {
      sessions.clear();
    },
    async handleHttp(req, res, url) {
      if (!url.pathname.startsWith('/.auth/')) return false;
      const id = cookie(req, SESSION_COOKIE);
      const session = id ? sessions.get(id) : undefined;
      if (url.pathname === '/.auth/login/aad' && req.method === 'GET') {
        if (!identity.user(username)) {
          send(res, 500, { error: `the local dashboard user ${username} is not in the local tenant` });
          return true;
        }
        const sid = randomBytes(32).toString('base64url');
        const fresh: Session = { username, token: '', expiresOn: 0 };
        await freshToken(fresh);
        sessions.set(sid, fresh);
        send(res, 302, undefined, {
          Location: safeRedirect(url.searchParams.get('post_login_redirect_uri'), '/'),
          'Set-Cookie': `${SESSION_COOKIE}=${sid}; Path=/; HttpOnly; SameSite=Lax`,
        });
        return true;
      }
      if (url.pathname === '/.auth/logout' && req.method === 'GET') {
        if (id) sessions.delete(id);
        send(res, 302, undefined, {
          Location: safeRedirect(url.searchParams.get('post_logout_redirect_uri'), '/'),
          'Set-Cookie': `${SESSION_COOKIE}=; Path=/; HttpOnly; SameSite=Lax; Max-Age=0`,
        });
        return true;
      }
      if ((url.pathname === '/.auth/me' || url.pathname === '/.auth/refresh') && req.method === 'GET') {
        if (!session) {
          send(res, 401, { code: 401, message: 'You do not have permission to view this directory or page.' });
          return true;
        }
        if (url.pathname === '/.auth/refresh') session.expiresOn = 0;
        await freshToken(session);
        if (url.pathname === '/.auth/refresh') {
          send(res, 200);
          return true;
        }
        const claims = decodeClaims(session.token);
        const userClaims = Object.entries(claims).flatMap(([typ, val]) => (Array.isArray(val) ? val : [val]).map((v) => ({ typ, val: String(v) })));
        send(res, 200, [
          {
            access_token: session.token,
            expires_on: new Date(session.expiresOn * 1000).toISOString(),
            provider_name: 'aad',
            user_claims: userClaims,
            user_id: String(claims.preferred_username ?? session.username),
          },
        ]);
        return true;
      }
      send(res, 404, { code: 404, message: `no ${req.method} ${url.pathname} in the local App Service Authentication` });
      return true;
    },
  };
}
