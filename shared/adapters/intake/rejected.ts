import { DATA_AREA_FORBIDDEN } from './dataAreas';
import type { SpecError } from '../../core/spec';
import type { JobStore, JsonValue } from '../state';
import { JOB_ID_RE } from '../../core/spec/patterns';

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
export async function recordRejectedSubmission(
  store: JobStore,
  id: string,
  raw: unknown,
  errors: SpecError[],
  source: string,
  code: 'InvalidSpec' | typeof DATA_AREA_FORBIDDEN = 'InvalidSpec',
): Promise<'recorded' | 'idTaken'> {
  const claimed = raw && typeof raw === 'object' ? (raw as { name?: unknown }).name : undefined;
  const name = typeof claimed === 'string' ? claimed.slice(0, 128) : id;
  const { created, job } = await store.createIfAbsent({
    id,
    specHash: 'rejected',
    owner: source,
    reason: `rejected ${source} submission`,
    rejected: { name, document: toJsonValue(raw) },
  });
  const summary = errors.map((e) => `${e.path || '(document)'}: ${e.message}`).join('; ');
  if (!created && job.specHash !== 'rejected') {
    await store.appendEvent(id, { reason: `a ${source} submission with this id was rejected: ${summary}` });
    return 'idTaken';
  }
  const what = code === DATA_AREA_FORBIDDEN ? 'the job spec names data outside its data area' : 'invalid job spec';
  await store.transition(id, 'Failed', `${what}: ${summary}`, {
    error: { code, message: summary, details: errors as unknown as JsonValue },
  });
  return 'recorded';
}

/** The document as plain JSON (what Table Storage keeps): undefined and functions drop out, as in JSON.stringify. */
function toJsonValue(raw: unknown): JsonValue {
  return raw === undefined ? null : (JSON.parse(JSON.stringify(raw)) as JsonValue);
}
