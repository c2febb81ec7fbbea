/**
 * GET /api/me: who the API takes the caller to be (principal id = the owner recorded on its jobs, display name,
 * kind, roles) and what it may do. Any authenticated caller; `hpcjob whoami` and the dashboard show it.
 * `dataArea` is the caller's own blob prefix in the data accounts (`users/<ownerKey>/`, in any container jobs may
 * use) and `sharedAreas` the shared areas its roles open (docs/security.md, "Data areas").
 */
import { type HttpRequest, type HttpResponseInit } from '@azure/functions';
import { ACTIONS, can, ownerDataArea, seesAllJobs, type Principal } from '../shared/adapters/auth';
import { appConfig } from '../shared/services';
import { opensSharedArea } from '../shared/adapters/intake/dataAreas';
import { authorize } from './lib/auth';
import { registerRoute } from './lib/route';

export async function whoAmI(request: HttpRequest): Promise<HttpResponseInit> {
  // job:read is the least any role grants; a caller with no role at all is told so by the 403.
  const auth = await authorize(request, 'job:read');
  if (!auth.ok) return auth.response;
  const p = auth.principal;
  return {
    status: 200,
    headers: { 'Cache-Control': 'no-store' },
    jsonBody: {
      id: p.id,
      name: p.name,
      kind: p.kind,
      roles: p.roles,
      ...(p.tenantId ? { tenantId: p.tenantId, objectId: p.objectId } : {}),
      permissions: ACTIONS.filter((a) => can(p, a)),
      seesAllJobs: seesAllJobs(p),
      ...dataAreasOf(p),
    },
  };
}

registerRoute('whoAmI', { handler: whoAmI });

/** The caller's own data area and the shared areas it may use; settings that cannot be read leave them out. */
function dataAreasOf(p: Principal): { dataArea?: string; sharedAreas?: { account: string; container: string; prefix: string; access: 'read' | 'write' }[] } {
  const dataArea = ownerDataArea(p.id);
  let shared;
  try {
    shared = appConfig().dataAccess.sharedAreas;
  } catch {
    return dataArea === undefined ? {} : { dataArea };
  }
  const sharedAreas = shared
    .filter((a) => opensSharedArea(a, p))
    .map((a) => ({ account: a.account, container: a.container, prefix: a.prefix, access: a.write ? ('write' as const) : ('read' as const) }));
  return { ...(dataArea !== undefined ? { dataArea } : {}), sharedAreas };
}
