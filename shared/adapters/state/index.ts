/** Job state: the pure state machine, the Table Storage store, and the API views. */
export { JOB_STATES, TERMINAL_STATES, ACTIVE_STAGES, isTerminal, isPast, isJobState, canTransition, nextStates } from '../../core/state/states';
export type { JobState, TerminalState } from '../../core/state/states';
export { transition } from '../../core/state/machine';
export type { TransitionableRow, TransitionResult } from '../../core/state/machine';
export {
  IllegalTransitionError,
  JobNotFoundError,
  ConcurrencyConflictError,
  InvalidContinuationTokenError,
  JobRecordTooLargeError,
} from '../../core/state/errors';
export type { JobRecord, JobEvent, JobPatch, JobError, JsonValue, ArrayMembership, PoolAccessBasis } from '../../core/state/record';
export { POOL_ACCESS_BASES } from '../../core/state/record';
export { JobStore, DEFAULT_JOBS_TABLE, DEFAULT_EVENTS_TABLE, buildListFilter } from './jobStore';
export type { JobStoreOptions, NewJob, TransitionOutcome, NoteInput, ListJobsQuery, ListJobsPage } from './jobStore';
export {
  JobViewSchema,
  JobErrorSchema,
  JobLinksSchema,
  SubmitJobResponseSchema,
  JobConflictResponseSchema,
  JobListResponseSchema,
  CancelJobResponseSchema,
  JobFinishingResponseSchema,
  ProblemResponseSchema,
  HealthResponseSchema,
  QueuesResponseSchema,
  JobQueueSchema,
  toJobView,
  jobUrl,
} from '../../core/state/view';
export type {
  JobView,
  SubmitJobResponse,
  JobConflictResponse,
  JobListResponse,
  CancelJobResponse,
  ProblemResponse,
  HealthResponse,
  JobViewOptions,
  QueuesResponse,
  JobQueueView,
} from '../../core/state/view';
export { recordSubmission, requestCancel, submissionJobId } from '../../core/state/submission';
export type { SubmissionOutcome, SubmissionInput, CancelOutcome } from '../../core/state/submission';
export { parseListQuery } from '../../core/state/listQuery';
