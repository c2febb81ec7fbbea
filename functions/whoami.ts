/**
 * GET /api/me: who the API takes the caller to be (principal id = the owner recorded on its jobs, display name,
 * kind, roles) and what it may do. Any authenticated caller; `hpcjob whoami` and the dashboard show it.
 */
import { app, type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { ACTIONS, can, seesAllJobs } from '../shared/auth';
import { authorize } from './lib/auth';

export async function whoAmI(request: HttpRequest): Promise<HttpResponseInit> {
  // job:read is the least any role grants; a caller with no role at all is told so by the 403.
  const auth = await authorize(request, 'job:read');
  if (!auth.ok) return auth.response;
  const p = auth.principal;
  return {
    status: 200,
    headers: { 'Cache-Control': 'no-store' },
    jsonBody: {
      id: p.id, name: p.name, kind: p.kind, roles: p.roles,
      ...(p.tenantId ? { tenantId: p.tenantId, objectId: p.objectId } : {}),
      permissions: ACTIONS.filter((a) => can(p, a)),
      seesAllJobs: seesAllJobs(p),
    },
  };
}

app.http('whoAmI', { route: 'me', methods: ['GET'], authLevel: 'anonymous', handler: whoAmI });
