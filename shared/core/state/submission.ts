/**
 * The two decisions intake makes against the store, shared by the HTTP and queue paths so both behave
 * identically: record a submission exactly once, and request a cancel.
 */
import { createHash } from 'node:crypto';
import { deriveJobId, diffSpecs, specHash, type JobSpec } from '../spec';
import type { JobStore } from '../../adapters/state/jobStore';
import type { JobRecord } from './record';
import { isTerminal } from './states';
import type { PoolAccessBasis } from './record';

export type SubmissionOutcome =
  /** A new row was written: start the orchestration (instanceId = job.id), answer 202. */
  | { outcome: 'created'; job: JobRecord }
  /** Same id, same spec: a duplicate delivery or client retry. Make sure the orchestration exists, answer 200. */
  | { outcome: 'repeat'; job: JobRecord }
  /** Same id, different spec: answer 409 with the differing paths; nothing was written. */
  | { outcome: 'conflict'; job: JobRecord; differingPaths: string[] }
  /** The id belongs to another owner's job: answer 409 without anything of that job; nothing was written. */
  | { outcome: 'taken'; id: string };

export interface SubmissionInput {
  /** A spec that passed parseJobSpec (rejected specs never reach the store). */
  spec: JobSpec;
  /** HTTP Idempotency-Key header or queue message id; used only when the spec has no id. */
  idempotencyKey?: string;
  owner: string;
  ownerName?: string;
  /**
   * Derive ids (when the spec has none) within this scope, the submitting principal's id: two callers' equal
   * specs or equal Idempotency-Keys then never name the same job. Unset: the global derivation (the queue).
   */
  idScope?: string;
  /** Why the submitter may use pool.poolId (shared/core/intake/poolAccess.ts), recorded on the row for the admission check. */
  poolAccess?: PoolAccessBasis;
  /** The id intake derived (submissionJobId of the spec as submitted, before its defaults were added); unset: derived here. */
  id?: string;
  /** The owner's data area, recorded on the row (JobRecord.dataArea). */
  dataArea?: string;
  /** The job this submission reruns (JobRecord.rerunOf). */
  rerunOf?: string;
}

/**
 * The job id of a submission: spec.id as given (a global name, like a Batch job id); a derived id keeps its
 * k-/h- prefix and is re-hashed with the scope when there is one.
 */
export function submissionJobId(spec: JobSpec, idempotencyKey?: string, idScope?: string): string {
  const id = deriveJobId(spec, idempotencyKey);
  if (spec.id !== undefined || idScope === undefined) return id;
  const scoped = createHash('sha256').update(`owner\n${idScope}\n${id}`, 'utf8').digest('hex').slice(0, 32);
  return `${id.slice(0, 2)}${scoped}`;
}

export async function recordSubmission(store: JobStore, input: SubmissionInput): Promise<SubmissionOutcome> {
  const id = input.id ?? submissionJobId(input.spec, input.idempotencyKey, input.idScope);
  const hash = specHash(input.spec);
  // The row is the commit point; its creation event reaches the timeline with the job's first transition.
  const { created, job } = await store.createIfAbsent(
    {
      id,
      spec: input.spec,
      specHash: hash,
      owner: input.owner,
      ownerName: input.ownerName,
      ...(input.poolAccess ? { poolAccess: input.poolAccess } : {}),
      ...(input.dataArea !== undefined ? { dataArea: input.dataArea } : {}),
      ...(input.rerunOf !== undefined ? { rerunOf: input.rerunOf } : {}),
    },
    { deferFirstEvent: true },
  );
  if (created) return { outcome: 'created', job };
  if (job.owner !== input.owner) return { outcome: 'taken', id };
  if (job.specHash === hash) return { outcome: 'repeat', job };
  // A row without a valid spec (a rejected submission holds the id) differs as a whole.
  return { outcome: 'conflict', job, differingPaths: job.spec ? diffSpecs(job.spec, input.spec) : [''] };
}

export type CancelOutcome =
  | { outcome: 'requested'; job: JobRecord }
  /** Already terminal: nothing to cancel (answer 200). */
  | { outcome: 'finished'; job: JobRecord }
  /** Cleaning up: the run's end is decided (job.endingAs), a cancel would change nothing (answer 409 JobFinishing). */
  | { outcome: 'finishing'; job: JobRecord }
  | { outcome: 'notFound' };

/**
 * Mark the job as cancel-requested (idempotent: the first request's time is kept). The caller then
 * raises the cancel event on the orchestration, or, if the job is still Submitted and no orchestration
 * exists, moves it to Cancelled itself.
 */
export async function requestCancel(store: JobStore, id: string, at: Date = new Date()): Promise<CancelOutcome> {
  const current = await store.get(id);
  if (!current) return { outcome: 'notFound' };
  if (isTerminal(current.state)) return { outcome: 'finished', job: current };
  // An array's row is no pipeline: its jobs answer for themselves (cancelArray).
  const finishing = (j: JobRecord) => j.state === 'CleaningUp' && !j.spec?.array;
  if (finishing(current)) return { outcome: 'finishing', job: current };
  const job = await store.update(id, (j) => (j.cancelRequestedAt ? {} : { cancelRequestedAt: at.toISOString() }));
  // The job may have moved on between the read and the write: the pipeline then ignores the request.
  if (finishing(job)) return { outcome: 'finishing', job };
  return isTerminal(job.state) ? { outcome: 'finished', job } : { outcome: 'requested', job };
}
