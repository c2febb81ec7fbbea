/** GET /api/jobs query parameters → a validated ListJobsQuery, or errors naming the bad parameter. */
import type { SpecError } from '../spec';
import type { ListJobsQuery } from '../../adapters/state/jobStore';
import { isJobState, JOB_STATES, type JobState } from './states';

type Params = URLSearchParams | Record<string, string | undefined>;

export function parseListQuery(params: Params): { ok: true; query: ListJobsQuery } | { ok: false; errors: SpecError[] } {
  const get = (k: string): string | undefined => (params instanceof URLSearchParams ? (params.get(k) ?? undefined) : params[k]);
  const errors: SpecError[] = [];
  const query: ListJobsQuery = {};

  const state = get('state');
  if (state) {
    const states = state
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const bad = states.filter((s) => !isJobState(s));
    if (bad.length) errors.push({ path: 'state', message: `unknown state ${bad.map((b) => JSON.stringify(b)).join(', ')}; one of ${JOB_STATES.join(', ')}` });
    else query.state = states.length === 1 ? (states[0] as JobState) : (states as JobState[]);
  }
  const tag = get('tag');
  if (tag) {
    const eq = tag.indexOf('=');
    const key = eq < 0 ? tag : tag.slice(0, eq);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(key)) errors.push({ path: 'tag', message: 'must be "key" or "key=value" with a valid tag key' });
    else query.tag = eq < 0 ? { key } : { key, value: tag.slice(eq + 1) };
  }
  for (const k of ['createdFrom', 'createdTo'] as const) {
    const v = get(k);
    if (v === undefined || v === '') continue;
    if (Number.isNaN(Date.parse(v))) errors.push({ path: k, message: `must be an ISO 8601 date-time, got ${JSON.stringify(v)}` });
    else query[k] = new Date(Date.parse(v)).toISOString();
  }
  const top = get('top');
  if (top !== undefined && top !== '') {
    const n = Number(top);
    if (!Number.isInteger(n) || n < 1 || n > 1000) errors.push({ path: 'top', message: 'must be a whole number from 1 to 1000' });
    else query.top = n;
  }
  const token = get('continuationToken');
  if (token) query.continuationToken = token;
  return errors.length ? { ok: false, errors } : { ok: true, query };
}
