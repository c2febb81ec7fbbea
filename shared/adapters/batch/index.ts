/**
 * The Batch adapter: a small typed layer over BatchServiceClient. Every function takes a BatchContext
 * and plain JSON, returns plain JSON, and fails with BatchError (code, status, operation, resource,
 * request id). Nothing here waits for Batch: callers poll the snapshots with durable timers.
 */
export { createBatchClient, createBatchContext, BearerTokenCredentials, type BatchContext, type BatchClientOptions } from './client';
export { BatchError, describeSdkError, parseRetryAfter, toBatchError, type BatchErrorInfo } from './errors';
export { callWithRetry, backoffDelay, isRetryable, DEFAULT_RETRY_POLICY, type RetryEvent, type RetryPolicy, type RetryRuntime, type CallSafety } from './retry';
export {
  OWNER_KEY,
  OWNER_VALUE,
  JOB_KEY,
  PURPOSE_KEY,
  SUBMITTER_KEY,
  ownerJobOf,
  purposeOf,
  submitterOf,
  type NameValue,
  type ResourceFileSpec,
  type OutputFileSpec,
  type ContainerSettingsSpec,
} from './common';
export * from './pools';
export * from './jobs';
export * from './tasks';
export * from './taskCollection';
export * from './mpiTask';
export * from './files';
export { createArmBatchClient, createArmBatchContext, type ArmBatchContext, type ArmClientOptions } from './armClient';
export * from './armPools';
