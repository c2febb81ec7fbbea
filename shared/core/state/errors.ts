import type { JobState } from './states';

/** A state change the state machine does not allow; never applied, never silently overwritten. */
export class IllegalTransitionError extends Error {
  override readonly name = 'IllegalTransitionError';
  constructor(
    readonly jobId: string,
    readonly from: JobState,
    readonly to: JobState,
    readonly reason?: string,
  ) {
    super(`job ${jobId}: illegal transition ${from} → ${to}${reason ? ` (reason: ${reason})` : ''}`);
  }
}

export class JobNotFoundError extends Error {
  override readonly name = 'JobNotFoundError';
  constructor(readonly jobId: string) {
    super(`job ${jobId} not found`);
  }
}

/** Optimistic concurrency gave up: other writers kept changing the row. */
export class ConcurrencyConflictError extends Error {
  override readonly name = 'ConcurrencyConflictError';
  constructor(
    readonly jobId: string,
    readonly attempts: number,
  ) {
    super(`job ${jobId}: still conflicting after ${attempts} attempts (ETag changed every time)`);
  }
}

export class InvalidContinuationTokenError extends Error {
  override readonly name = 'InvalidContinuationTokenError';
  constructor(readonly token: string) {
    super(`invalid continuation token ${JSON.stringify(token.slice(0, 80))}`);
  }
}

/** A row that would not fit in one Table Storage entity (1 MiB). */
export class JobRecordTooLargeError extends Error {
  override readonly name = 'JobRecordTooLargeError';
  constructor(
    readonly jobId: string,
    readonly field: string,
    readonly bytes: number,
    readonly limit: number,
  ) {
    super(`job ${jobId}: ${field} makes the row ${bytes} bytes, over the ${limit}-byte entity budget`);
  }
}
