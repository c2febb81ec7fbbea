/** Exit codes (documented in docs/cli.md) and the one error type commands throw. */
export const ExitCode = {
  Ok: 0,
  /** The job ended Failed or Cancelled (watch, submit --watch). */
  JobNotSucceeded: 1,
  /** Bad command line, unreadable or invalid spec, missing endpoint. */
  Usage: 2,
  /** The API could not be reached or answered an error. */
  Api: 3,
  /** No such job (or node). */
  NotFound: 4,
  /** import: specs written, but some settings were approximated or are unsupported (see the report). */
  ImportIncomplete: 5,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** A field-level problem as the API (and parseJobSpec) report it. */
export interface FieldError {
  path: string;
  message: string;
  line?: number;
  column?: number;
}

/** What the CLI prints as one line (plus field errors) before exiting with `exitCode`. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCodeValue,
    readonly fieldErrors: FieldError[] = [],
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/**
 * The API refused who the caller is (401) or what they may do (403). Asking again cannot change that, so no command
 * retries it (cli/transient.ts): the message says what to do instead (sign in again, or which role is needed).
 */
export class AccessRefused extends CliError {
  constructor(
    message: string,
    readonly status: 401 | 403,
    fieldErrors: FieldError[] = [],
  ) {
    super(message, ExitCode.Api, fieldErrors);
    this.name = 'AccessRefused';
  }
}
