import type { JobSpec, SpecError } from '../spec';
import type { JobStore, JsonValue } from '../state';
import { JOB_ID_RE } from '../spec/patterns';

/** The client id a rejected submission claims, if it has a usable one. */
export function claimedJobId(raw: unknown): string | undefined {
  const id = raw && typeof raw === 'object' ? (raw as { id?: unknown }).id : undefined;
  return typeof id === 'string' && JOB_ID_RE.test(id) ? id : undefined;
}

/**
 * Records a queue submission that can never succeed (invalid spec): a job row in Failed with the validation
 * errors, so whoever sent it can look it up by its id. The row keeps the submitted document as its spec;
 * it never reaches the pipeline. An id already used by an accepted job is left alone (a note is added).
 */
export async function recordRejectedSubmission(store: JobStore, id: string, raw: unknown, errors: SpecError[], source: string): Promise<'recorded' | 'idTaken'> {
  const name = raw && typeof raw === 'object' && typeof (raw as { name?: unknown }).name === 'string' ? String((raw as { name: string }).name).slice(0, 128) : id;
  const submitted = { ...(raw as object), name, tags: {} } as unknown as JobSpec;
  const { created, job } = await store.createIfAbsent({ id, spec: submitted, specHash: 'rejected', owner: source, reason: `rejected ${source} submission` });
  const summary = errors.map((e) => `${e.path || '(document)'}: ${e.message}`).join('; ');
  if (!created && job.specHash !== 'rejected') {
    await store.appendEvent(id, { reason: `a ${source} submission with this id was rejected: ${summary}` });
    return 'idTaken';
  }
  await store.transition(id, 'Failed', `invalid job spec: ${summary}`, {
    error: { code: 'InvalidSpec', message: summary, details: errors as unknown as JsonValue },
  });
  return 'recorded';
}
