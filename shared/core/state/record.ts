/** The job row and its timeline events as the rest of the app sees them (storage layout is in entityCodec.ts). */
import type { JobSpec } from '../spec';
import type { JobState, TerminalState } from './states';
import type { JobResult } from '../contract/jobResult';

export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };

export interface JobError {
  /** Stable machine-readable code, e.g. "AllocationTimedout", "ImagePullFailed", "InvalidSpec". */
  code: string;
  message: string;
  details?: JsonValue;
}

/**
 * Why a job may use its pool.poolId, as the door decided (shared/core/intake/poolAccess.ts): the pool's recorded submitter,
 * the owner of the job that created an older pool, a SHARED_POOLS entry, an admin's right, or no such pool (yet).
 */
export const POOL_ACCESS_BASES = ['owner', 'creatorJob', 'shared', 'admin', 'absent'] as const;
export type PoolAccessBasis = (typeof POOL_ACCESS_BASES)[number];

export interface JobRecord {
  id: string;
  name: string;
  /**
   * Who submitted it: `<tenant id>/<object id>` of an Entra ID principal, "operator" (an operator key),
   * "anonymous" (ANONYMOUS_ROLE) or "queue" (the job-submissions queue). Rows from before identities hold
   * whatever the old intake wrote ("api" or a client-supplied name): only admins see those.
   */
  owner: string;
  /** The owner's display name when it submitted (name / preferred_username claim). */
  ownerName?: string;
  /** Why the owner may use the job's pool.poolId, as the door decided (absent: no pool.poolId, or rows from before owners). */
  poolAccess?: PoolAccessBasis;
  tags: Record<string, string>;
  specHash: string;
  /**
   * The normalized spec, validated again on every read: absent when the stored document is not a valid spec
   * (a rejected submission, or a row damaged or written by an incompatible version), so no reader ever trusts it.
   */
  spec?: JobSpec;
  /** The submitted document of a row without a valid spec (e.g. a rejected queue message), as stored. */
  submitted?: JsonValue;
  state: JobState;
  /** Finer-grained, human-readable step inside the state, e.g. "waiting for nodes 3/4". */
  stage: string;
  progress: JsonValue | null;
  createdAt: string;
  updatedAt: string;
  batchPoolId?: string;
  batchJobId?: string;
  /** The Batch account the job was placed on (several BATCH_ACCOUNTS); unset: the home account. */
  batchAccount?: string;
  /** What the pipeline recorded when the job ended (parsed on read: a row that does not match has none). */
  result?: JobResult;
  error?: JobError;
  /** Set by the cancel API; the orchestration reacts and moves the job to CleaningUp → Cancelled. */
  cancelRequestedAt?: string;
  /**
   * Set when the job enters CleaningUp: the state cleanup ends it in (the run's outcome is decided by then, so a
   * cancel that arrives now is too late and is answered 409 JobFinishing with this state).
   */
  endingAs?: TerminalState;
  /**
   * Set by the sweep once no container of this job is left on the nodes of the reused pool it ran on (the release
   * task removed them, or the sweep's cleanup tasks did): such jobs are not looked at again.
   */
  containersCheckedAt?: string;
  /**
   * The owner's data area (`users/<ownerKey>/`, '' for an owner without one) when intake checked every path of the
   * spec against the data areas (shared/adapters/intake/dataAreas.ts). Absent on rows written before that rule: their
   * recorded outputs prefix is still served to their owner (docs/security.md, "Data areas").
   */
  dataArea?: string;
  /** For a job of an array (spec.array): the array's job, this job's index in it, and when the array was submitted. */
  array?: ArrayMembership;
  /** The job this one reruns (POST /api/jobs/{id}/rerun, shared/adapters/intake/rerun.ts); the old job's timeline notes the new id. */
  rerunOf?: string;
  /** Number of transition events recorded so far (the creation counts as 1). */
  eventSeq: number;
  /** The most recent transition event, kept on the row so a lost event write can be repaired. */
  lastEvent?: JobEvent;
}

export interface ArrayMembership {
  parent: string;
  index: number;
  submittedAt: string;
}

export interface JobEvent {
  jobId: string;
  /** ISO 8601 UTC timestamp. */
  at: string;
  kind: 'transition' | 'note';
  /** Transition events: the row's eventSeq after the transition (1 = creation). */
  seq?: number;
  /** Transition events: previous state (null for the creation). */
  from?: JobState | null;
  to?: JobState;
  reason: string;
  data?: JsonValue;
  /** Note events: caller-chosen id making appendEvent idempotent. */
  eventId?: string;
}

/** Fields a caller may change outside a state transition. */
export type JobPatch = Partial<
  Pick<
    JobRecord,
    'stage' | 'progress' | 'batchPoolId' | 'batchJobId' | 'batchAccount' | 'result' | 'error' | 'cancelRequestedAt' | 'containersCheckedAt' | 'endingAs'
  >
>;
