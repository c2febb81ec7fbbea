/** Job state: the pure state machine, the Table Storage store, and the API views. */
export { JOB_STATES, TERMINAL_STATES, ACTIVE_STAGES, isTerminal, isPast, isJobState, canTransition, nextStates } from './states';
export type { JobState, TerminalState } from './states';
export { transition } from './machine';
export type { TransitionableRow, TransitionResult } from './machine';
export {
  IllegalTransitionError, JobNotFoundError, ConcurrencyConflictError, InvalidContinuationTokenError, JobRecordTooLargeError,
} from './errors';
export type { JobRecord, JobEvent, JobPatch, JobError, JsonValue, ArrayMembership, PoolAccessBasis } from './record';
export { POOL_ACCESS_BASES } from './record';
export { JobStore, DEFAULT_JOBS_TABLE, DEFAULT_EVENTS_TABLE, buildListFilter } from './jobStore';
export type { JobStoreOptions, NewJob, TransitionOutcome, NoteInput, ListJobsQuery, ListJobsPage } from './jobStore';
export {
  JobViewSchema, JobErrorSchema, JobLinksSchema, SubmitJobResponseSchema, JobConflictResponseSchema, JobListResponseSchema,
  CancelJobResponseSchema, JobFinishingResponseSchema, ProblemResponseSchema, HealthResponseSchema, QueuesResponseSchema, JobQueueSchema, toJobView, jobUrl,
} from './view';
export type {
  JobView, SubmitJobResponse, JobConflictResponse, JobListResponse, CancelJobResponse, ProblemResponse, HealthResponse, JobViewOptions,
  QueuesResponse, JobQueueView,
} from './view';
export { recordSubmission, requestCancel, submissionJobId } from './submission';
export type { SubmissionOutcome, SubmissionInput, CancelOutcome } from './submission';
export { parseListQuery } from './listQuery';
