/**
 * The distribution spec's token authentication, as Docker and Singularity perform it against a private registry
 * (ACR among them): a 401 on /v2/ carries `WWW-Authenticate: Bearer realm="…",service="…"`; the client asks the
 * realm for a token for `repository:<name>:pull`, with its Basic credentials if it has any (a `docker login`, or
 * SINGULARITY_DOCKER_USERNAME/PASSWORD; for ACR often the refresh-token user 00000000-… and a refresh token), and
 * sends `Authorization: Bearer <token>` from then on. A `Basic realm` challenge takes the credentials as they are.
 */
import { CliError } from './errors';

export interface Challenge {
  scheme: 'bearer' | 'basic';
  params: Record<string, string>;
}

/** Parses one WWW-Authenticate challenge: `Bearer realm="…",service="…",scope="…"`. */
export function parseChallenge(header: string | string[] | undefined): Challenge | undefined {
  const text = Array.isArray(header) ? header[0] : header;
  if (!text) return undefined;
  const m = /^\s*(\w+)\s*(.*)$/s.exec(text);
  if (!m) return undefined;
  const scheme = m[1].toLowerCase();
  if (scheme !== 'bearer' && scheme !== 'basic') return undefined;
  const params: Record<string, string> = {};
  for (const p of m[2].matchAll(/(\w+)=(?:"((?:[^"\\]|\\.)*)"|([^,\s]*))/g)) params[p[1].toLowerCase()] = (p[2] ?? p[3] ?? '').replace(/\\(.)/g, '$1');
  return { scheme, params };
}

/**
 * The Authorization header for requests after a challenge: a bearer token from the realm (with `basic` credentials
 * when given, anonymously otherwise), or the Basic credentials themselves. Throws Docker's wording when refused.
 */
export async function authorizationForChallenge(ch: Challenge, basic: string | undefined, scope: string | undefined): Promise<string | undefined> {
  if (ch.scheme === 'basic') return basic;
  const realm = ch.params.realm;
  if (!realm) throw new CliError('unauthorized: the registry sent a Bearer challenge without a realm');
  const url = new URL(realm);
  if (ch.params.service) url.searchParams.set('service', ch.params.service);
  if (scope) url.searchParams.set('scope', scope);
  let res: Response;
  try {
    res = await fetch(url, { headers: basic ? { Authorization: basic } : {} });
  } catch (err) {
    throw new CliError(`Get "${url.origin}${url.pathname}": ${(err as Error).message}`);
  }
  const body = (await res.json().catch(() => ({}))) as { token?: string; access_token?: string; errors?: { message?: string }[] };
  if (res.status === 401 || res.status === 403) {
    throw new CliError(`unauthorized: ${body.errors?.[0]?.message ?? 'authentication required'}`);
  }
  const token = body.token ?? body.access_token;
  if (!res.ok || !token) throw new CliError(`failed to fetch an authorization token from ${url.origin}${url.pathname}: HTTP ${res.status}`);
  return `Bearer ${token}`;
}
