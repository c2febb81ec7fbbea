/**
 * The public job API as the page uses it. Reads are anonymous; cancel (and log reads) need the function key,
 * which the user types into the page and which stays in this tab's sessionStorage only.
 */
import { listQuery, type JobView, type ListFilters } from './model';

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

export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
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
  const res = await fetch(`${apiBase()}/jobs?${listQuery(filters)}`, { signal, cache: 'no-store' });
  return (await answer<{ jobs: JobView[] }>(res, 'GET /jobs')).jobs;
}

export async function getJob(id: string, signal?: AbortSignal): Promise<JobView> {
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}`, { signal, cache: 'no-store' });
  return answer<JobView>(res, `GET /jobs/${id}`);
}

export async function cancelJob(id: string, key: string, reason: string): Promise<{ cancelRequested: boolean }> {
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}?reason=${encodeURIComponent(reason)}`, {
    method: 'DELETE',
    headers: { 'x-functions-key': key },
  });
  return answer<{ cancelRequested: boolean }>(res, `DELETE /jobs/${id}`);
}

export interface LogAnswer {
  source: string;
  content: string;
  message?: string;
}

/** GET /jobs/{id}/logs (function key): the newest part of one node's stdout or stderr. */
export async function readLog(id: string, node: string, stream: 'stdout' | 'stderr', key: string): Promise<LogAnswer> {
  const q = new URLSearchParams({ node, stream });
  const res = await fetch(`${apiBase()}/jobs/${encodeURIComponent(id)}/logs?${q}`, { headers: { 'x-functions-key': key }, cache: 'no-store' });
  return answer<LogAnswer>(res, `GET /jobs/${id}/logs`);
}
