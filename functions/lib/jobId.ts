/**
 * The `{id}` of the job routes (jobs/{id}, jobs/{id}/logs, jobs/{id}/outputs, DELETE jobs/{id}): an id that fails the
 * job-id pattern can never name a job (the store refuses to create one), so it is answered 400 with the parameter's
 * name before any storage call, instead of reaching Table Storage with characters its keys do not allow.
 */
import type { HttpResponseInit } from '@azure/functions';
import { JOB_ID_RE } from '../../shared/core/spec/patterns';
import { invalidRequest } from './http';

/** undefined when `id` may name a job; otherwise the 400 to send. */
export function badJobId(id: string | undefined): HttpResponseInit | undefined {
  if (id !== undefined && JOB_ID_RE.test(id)) return undefined;
  const shown = id === undefined ? 'nothing' : JSON.stringify(id.length > 80 ? `${id.slice(0, 80)}…` : id);
  return invalidRequest([{ path: 'id', message: `must be a job id (1–64 lowercase letters, digits and hyphens, not starting with a hyphen), got ${shown}` }]);
}
