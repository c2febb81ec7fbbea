/**
 * GET /api/usage?from=YYYY-MM-DD&to=YYYY-MM-DD&tag=key[=value]: node-minutes and estimated cost of finished jobs,
 * per day (of pool release) and per tag. Reads the cost each job recorded in its result (shared/core/ops/cost.ts).
 * Callers see their own jobs' usage; admins everyone's.
 */
import { type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { TERMINAL_STATES } from '../shared/adapters/state';
import { usageReport, type UsageInput } from '../shared/core/ops/usage';
import { jobStore } from '../shared/services';
import { invalidRequest, unavailable } from './lib/http';
import { authorize } from './lib/auth';
import { listOwnerFilter } from '../shared/adapters/auth';
import { registerRoute } from './lib/route';

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const MAX_ROWS = 20_000;

export async function usageHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  const auth = await authorize(request, 'usage:read');
  if (!auth.ok) return auth.response;
  const from = request.query.get('from') ?? undefined;
  const to = request.query.get('to') ?? undefined;
  const tagParam = request.query.get('tag') ?? undefined;
  const errors: { path: string; message: string }[] = [];
  if (from !== undefined && !DAY.test(from)) errors.push({ path: 'from', message: 'must be a day, YYYY-MM-DD' });
  if (to !== undefined && !DAY.test(to)) errors.push({ path: 'to', message: 'must be a day, YYYY-MM-DD' });
  if (errors.length) return invalidRequest(errors);
  const tag = tagParam ? { key: tagParam.split('=')[0], value: tagParam.includes('=') ? tagParam.slice(tagParam.indexOf('=') + 1) : undefined } : undefined;
  try {
    const store = await jobStore();
    const jobs: UsageInput[] = [];
    let token: string | undefined;
    do {
      const page = await store.list({ owner: listOwnerFilter(auth.principal), state: [...TERMINAL_STATES], tag, top: 1000, continuationToken: token });
      for (const j of page.jobs) {
        const cost = j.result?.cost;
        const day = cost?.releasedAt.slice(0, 10);
        if (day && ((from && day < from) || (to && day > to))) continue;
        jobs.push({ id: j.id, tags: j.tags, cost });
      }
      token = page.continuationToken;
    } while (token && jobs.length < MAX_ROWS);
    return { status: 200, jsonBody: { from, to, tag: tagParam, ...usageReport(jobs) } };
  } catch (err) {
    return unavailable(context, 'usage', err);
  }
}

registerRoute('usage', { handler: usageHttp });
