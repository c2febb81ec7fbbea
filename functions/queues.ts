/**
 * GET /api/queues: the admission queues (depth, running jobs, reserved nodes and cores per VM family, per queue and in
 * total) and the limits admission keeps. Adapter only: reads shared/adapters/scheduling. See docs/scheduling.md.
 */
import { type HttpRequest, type HttpResponseInit, type InvocationContext } from '@azure/functions';
import { readQueues } from '../shared/adapters/scheduling/admissionService';
import { admissionDeps } from '../shared/services';
import { unavailable } from './lib/http';
import { authorize } from './lib/auth';
import { registerRoute } from './lib/route';

export async function getQueuesHttp(request: HttpRequest, context: InvocationContext): Promise<HttpResponseInit> {
  // Any role may read the queues (README's API table), but a caller must have one: the depths and reservations say
  // what the deployment runs, which is not for anonymous callers.
  const auth = await authorize(request, 'job:read');
  if (!auth.ok) return auth.response;
  try {
    return { status: 200, jsonBody: await readQueues(await admissionDeps()) };
  } catch (err) {
    return unavailable(context, 'queues API', err);
  }
}

registerRoute('getQueues', { handler: getQueuesHttp });
