/**
 * The one authentication adapter every HTTP function of the job API uses: the request's credentials →
 * shared/adapters/auth → a principal allowed to do `action`, or the answer to send (401 with a Bearer challenge, 403,
 * 503 when the issuer cannot be reached). Job-level visibility is `visibleJob`: a job the principal may not
 * see is answered exactly like a missing one.
 */
import type { HttpRequest, HttpResponseInit } from '@azure/functions';
import { appRolesFor, authenticate, bearerChallenge, can, maySeeJob, type Action, type Principal } from '../../shared/adapters/auth';
import { appConfig, tokenValidator } from '../../shared/services';
import { problem } from './http';

export type Authorized = { ok: true; principal: Principal } | { ok: false; response: HttpResponseInit };

export async function authorize(request: HttpRequest, action: Action): Promise<Authorized> {
  const outcome = await authenticate(
    {
      authorization: request.headers.get('authorization') ?? undefined,
      apiKey: request.headers.get('x-functions-key') ?? request.query.get('code') ?? undefined,
    },
    appConfig().auth,
    tokenValidator(),
  );
  if (!outcome.ok) {
    const response = problem(outcome.status, outcome.error, outcome.message);
    response.headers = outcome.challenge ? { 'WWW-Authenticate': outcome.challenge } : { 'Retry-After': '5' };
    return { ok: false, response };
  }
  const { principal } = outcome;
  if (!can(principal, action)) {
    const needs = appRolesFor(action).join(' or ');
    const response = problem(403, 'Forbidden', `${principal.name} may not ${action.replace(':', ' ')}: that needs the app role ${needs}`);
    response.headers = { 'WWW-Authenticate': bearerChallenge('insufficient_scope', `needs the app role ${needs}`) };
    return { ok: false, response };
  }
  return { ok: true, principal };
}

/** The job if this principal may see it; undefined for a missing job and for someone else's alike. */
export function visibleJob<J extends { owner: string }>(principal: Principal, job: J | undefined): J | undefined {
  return job && maySeeJob(principal, job.owner) ? job : undefined;
}
