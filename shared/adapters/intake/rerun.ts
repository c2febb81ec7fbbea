/**
 * Rerun: a NEW job from the recorded spec of a finished one (POST /api/jobs/{id}/rerun). The old job stays as it
 * ended; the new one goes through intake exactly like a submission (submitJob: spec, policies, data areas, pools,
 * admission), with the CALLER's rights, and the two are linked both ways: the new row records `rerunOf`, the old
 * timeline gets the note "rerun as <new id>".
 *
 * The new id is derived, so a retried request is idempotent (the second answer is the same job, 200):
 *   `<old id, cut to 53>-r<8 hex of sha256("rerun\n" + old id + "\n" + caller + "\n" + Idempotency-Key or "")>`.
 * Without an Idempotency-Key a job is rerun once per caller (repeats give that rerun); each new Idempotency-Key
 * gives another rerun. The caller is in the hash so that an admin's rerun and the owner's never collide.
 */
import { createHash } from 'node:crypto';
import type { JobSpec } from '../../core/spec';
import { isTerminal, type JobRecord, type JobStore } from '../state';
import { defaultOutputsPrefix } from './dataAreas';
import { submitJob, type OrchestrationStarter, type SubmitOutcome, type SubmitRequest } from './submit';

/** The id of the rerun of `oldId` by `caller` (with the request's Idempotency-Key, if any). Pure. */
export function rerunJobId(oldId: string, caller: string, idempotencyKey?: string): string {
  const hash = createHash('sha256')
    .update(`rerun\n${oldId}\n${caller}\n${idempotencyKey ?? ''}`, 'utf8')
    .digest('hex')
    .slice(0, 8);
  // 53 + "-r" + 8 = 63 characters at most; a cut that ends in "-" is still a valid id ("--r…" is allowed).
  return `${oldId.slice(0, 53)}-r${hash}`;
}

/**
 * The spec to submit for the rerun: the recorded spec under the new id. Intake's recorded default (the outputs prefix
 * `users/<owner>/jobs/<old id>`) is dropped so that intake gives the rerun its own (`…/jobs/<new id>`), in the
 * caller's area; a prefix the user set explicitly stays (the area check then judges it for the caller). Pure.
 */
export function rerunSpec(old: Pick<JobRecord, 'id' | 'owner'>, spec: JobSpec, newId: string): JobSpec {
  let out: JobSpec = { ...spec, id: newId };
  if (spec.outputs?.prefix !== undefined && spec.outputs.prefix === defaultOutputsPrefix(old.owner, old.id)) {
    const { prefix: _defaulted, ...outputs } = spec.outputs;
    out = { ...out, outputs: outputs as JobSpec['outputs'] };
  }
  return out;
}

export type RerunOutcome =
  /** The old job is not finished (409 JobNotFinished): cancel it or wait. */
  | { kind: 'notFinished'; job: JobRecord }
  /** The old row holds no valid spec (a rejected submission): nothing to rerun (409 JobHasNoSpec). */
  | { kind: 'noSpec'; job: JobRecord }
  | SubmitOutcome;

export interface RerunRequest extends Omit<SubmitRequest, 'body' | 'contentType' | 'rerunOf'> {
  /** The job to rerun, already found visible to the caller. */
  old: JobRecord;
  /** The caller's principal id (part of the derived id). */
  callerId: string;
}

export async function rerunJob(store: JobStore, starter: OrchestrationStarter, req: RerunRequest): Promise<RerunOutcome> {
  const { old, callerId, ...submit } = req;
  if (!isTerminal(old.state)) return { kind: 'notFinished', job: old };
  if (!old.spec) return { kind: 'noSpec', job: old };
  const newId = rerunJobId(old.id, callerId, req.idempotencyKey);
  const outcome = await submitJob(store, starter, { ...submit, body: rerunSpec(old, old.spec, newId), rerunOf: old.id });
  if (outcome.kind === 'accepted') {
    // Deterministic event id and time: a retried rerun writes the same note once.
    await store.appendEvent(old.id, {
      reason: `rerun as ${outcome.job.id}`,
      data: { rerunJobId: outcome.job.id },
      eventId: `rerun-${outcome.job.id}`,
      at: outcome.job.createdAt,
    });
  }
  return outcome;
}
