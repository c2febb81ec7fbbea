/**
 * The job API as the page uses it, and who the page is. Two ways in:
 *  - the App Service Authentication session (Easy Auth): `/.auth/me` on this origin answers the signed-in user's
 *    access token for the API (App Service's token store; locally the stack's emulation), sent as a Bearer token;
 *  - an operator key typed into the page (x-functions-key), kept in this tab's sessionStorage only.
 * The session wins when both exist. Without either, the API answers 401 and the page offers both.
 */
import { listQuery, type JobView, type ListFilters } from './model';
import type { LogAnswer as TailAnswer, OutputsAnswer, Stream } from './jobDetail';
import type { UsageAnswer } from './usage';

const KEY_STORAGE = 'hpc-dashboard.functionKey';

/** The API base next to the page: the page is served at <prefix>/dashboard, the jobs at <prefix>/jobs. */
export function apiBase(pathname: string = location.pathname): string {
  return pathname.replace(/\/dashboard\/?$/, '') || '/api';
}

export function storedKey(): string {
  return sessionStorage.getItem(KEY_STORAGE) ?? '';
}

export function storeKey(key: string): void {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
}

export interface Session {
  name: string;
  token: string;
  /** ms since the epoch. */
  expiresAt: number;
}

let session: Session | undefined;

export function currentSession(): Session | undefined {
  return session;
}

/** Reads the Easy Auth session (undefined when not signed in, or when the app runs without App Service Authentication). */
export async function loadSession(refresh = false): Promise<Session | undefined> {
  try {
    if (refresh) await fetch('/.auth/refresh', { credentials: 'same-origin', cache: 'no-store' });
    const res = await fetch('/.auth/me', { credentials: 'same-origin', cache: 'no-store' });
    if (!res.ok) return (session = undefined);
    const [me] = (await res.json()) as { access_token?: string; expires_on?: string; user_id?: string; user_claims?: { typ: string; val: string }[] }[];
    if (!me?.access_token) return (session = undefined);
    const claim = (typ: string) => me.user_claims?.find((c) => c.typ === typ)?.val;
    session = { token: me.access_token, expiresAt: Date.parse(me.expires_on ?? '') || Date.now() + 300_000, name: claim('name') ?? me.user_id ?? 'signed in' };
  } catch {
    session = undefined;
  }
  return session;
}

export function signInUrl(): string {
  return `/.auth/login/aad?post_login_redirect_uri=${encodeURIComponent(location.pathname + location.hash)}`;
}

export function signOutUrl(): string {
  return `/.auth/logout?post_logout_redirect_uri=${encodeURIComponent(location.pathname)}`;
}

/** The credentials for an API call: the session's token (renewed when it is about to expire), else the stored key. */
async function authHeaders(): Promise<Record<string, string>> {
  if (session && session.expiresAt - Date.now() < 120_000) await loadSession(true);
  if (session) return { authorization: `Bearer ${session.token}` };
  const key = storedKey();
  return key ? { 'x-functions-key': key } : {};
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

async function answer<T>(res: Response, what: string): Promise<T> {
  const body = (await res.json().catch(() => ({}))) as T & { message?: string; errors?: { path: string; message: string }[] };
  if (!res.ok) {
    const detail = body.message ?? body.errors?.map((e) => `${e.path}: ${e.message}`).join('; ') ?? res.statusText;
    throw new ApiError(res.status, `${what} answered ${res.status}: ${detail}`);
  }
  return body;
}

export async function listJobs(filters: ListFilters, signal?: AbortSignal): Promise<JobView[]> {
  const res = await fetch(`${apiBase()}/jobs?${listQuery(filters)}`, { signal, cache: 'no-store', headers: await authHeaders() });
  return (await answer<{ jobs: JobView[] }>(res, 'GET /jobs')).jobs;
}

export async function getJob(id: string, signal?: AbortSignal): Promise<JobView> {
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}`, { signal, cache: 'no-store', headers: await authHeaders() });
  return answer<JobView>(res, `GET /jobs/${id}`);
}

export async function cancelJob(id: string, reason: string): Promise<{ cancelRequested: boolean }> {
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}?reason=${encodeURIComponent(reason)}`, {
    method: 'DELETE',
    headers: await authHeaders(),
  });
  return answer<{ cancelRequested: boolean }>(res, `DELETE /jobs/${id}`);
}

export interface LogAnswer {
  source: string;
  content: string;
  message?: string;
}

/** GET /jobs/{id}/logs: the newest part of one node's stdout or stderr. */
export async function readLog(id: string, node: string, stream: 'stdout' | 'stderr'): Promise<LogAnswer> {
  const q = new URLSearchParams({ node, stream });
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}/logs?${q}`, { headers: await authHeaders(), cache: 'no-store' });
  return answer<LogAnswer>(res, `GET /jobs/${id}/logs`);
}

/** GET /jobs/{id}/logs from byte `since` on (the live tail): the master's file unless `node` is given. */
export async function readLogSince(id: string, stream: Stream, since: number, node?: string, signal?: AbortSignal): Promise<TailAnswer> {
  const q = new URLSearchParams({ stream, since: String(since) });
  if (node) q.set('node', node);
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}/logs?${q}`, { signal, headers: await authHeaders(), cache: 'no-store' });
  return answer<TailAnswer>(res, `GET /jobs/${id}/logs`);
}

/** GET /jobs/{id}/outputs: the job's output files with read-only SAS URLs (they need no token of ours). */
export async function listOutputs(id: string, signal?: AbortSignal): Promise<OutputsAnswer> {
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}/outputs?top=1000`, { signal, headers: await authHeaders(), cache: 'no-store' });
  return answer<OutputsAnswer>(res, `GET /jobs/${id}/outputs`);
}

/** GET /usage: the nodes' and the control plane's cost of the caller's finished jobs. */
export async function getUsage(signal?: AbortSignal): Promise<UsageAnswer> {
  const res = await fetch(`${apiBase()}/usage`, { signal, headers: await authHeaders(), cache: 'no-store' });
  return answer<UsageAnswer>(res, 'GET /usage');
}
