/**
 * One error type for everything the Batch adapter reports, carrying the context an operator needs:
 * which operation on which resource, the Batch error code and HTTP status, the service's request id
 * (to quote to Azure support) and how many attempts were made.
 */

export interface BatchErrorInfo {
  /** Batch error code (e.g. PoolNotFound, AllocationFailed) or a transport code (ECONNRESET). */
  code: string;
  /** HTTP status; undefined when no response arrived. */
  status?: number;
  /** Adapter operation, e.g. "pools.create". */
  operation: string;
  /** The resource acted on, e.g. "pool job42-pool" or "task job42/mpi". */
  resource: string;
  /** The service's request-id header, when a response arrived. */
  requestId?: string;
  message: string;
  /** Key/value details from the Batch error body. */
  details?: Record<string, string>;
  /** Calls made, including the first one. */
  attempts?: number;
  /** The service's Retry-After, when it asked for a wait longer than the adapter will sleep in-process. */
  retryAfterMs?: number;
}

export class BatchError extends Error implements BatchErrorInfo {
  readonly code: string;
  readonly status?: number;
  readonly operation: string;
  readonly resource: string;
  readonly requestId?: string;
  readonly details?: Record<string, string>;
  readonly attempts?: number;
  readonly retryAfterMs?: number;

  constructor(info: BatchErrorInfo) {
    super(formatMessage(info));
    this.name = 'BatchError';
    this.code = info.code;
    this.status = info.status;
    this.operation = info.operation;
    this.resource = info.resource;
    this.requestId = info.requestId;
    this.details = info.details;
    this.attempts = info.attempts;
    this.retryAfterMs = info.retryAfterMs;
  }

  /** Plain JSON for activity outputs and logs. */
  toJSON(): BatchErrorInfo & { name: string } {
    return {
      name: this.name,
      code: this.code,
      status: this.status,
      operation: this.operation,
      resource: this.resource,
      requestId: this.requestId,
      message: this.message,
      details: this.details,
      attempts: this.attempts,
      retryAfterMs: this.retryAfterMs,
    };
  }
}

function formatMessage(info: BatchErrorInfo): string {
  const status = info.status !== undefined ? ` HTTP ${info.status}` : '';
  const details =
    info.details && Object.keys(info.details).length
      ? ` (${Object.entries(info.details)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')})`
      : '';
  const request = info.requestId ? ` [request-id ${info.requestId}]` : '';
  const attempts = info.attempts && info.attempts > 1 ? ` after ${info.attempts} attempts` : '';
  return `${info.operation} on ${info.resource} failed${attempts}:${status} ${info.code}: ${info.message}${details}${request}`;
}

/** The fields of an ms-rest-js RestError (and node-fetch system errors) we read; everything optional. */
interface RawSdkError {
  code?: unknown;
  statusCode?: unknown;
  message?: unknown;
  body?: { code?: unknown; message?: unknown; values?: unknown };
  /** core-client's RestError (the management plane): the parsed ARM error body `{ error: { code, message } }`. */
  details?: { error?: { code?: unknown; message?: unknown; values?: unknown } };
  response?: { headers?: { get?(name: string): string | undefined }; bodyAsText?: string | null };
}

/** Details of a failed SDK call, before any operation context is attached. */
export interface SdkFailure {
  status?: number;
  code: string;
  message: string;
  requestId?: string;
  retryAfterMs?: number;
  details?: Record<string, string>;
}

/** Reads what an SDK call's rejection tells us; never throws. */
export function describeSdkError(err: unknown, nowMs: number = Date.now()): SdkFailure {
  const raw = (err ?? {}) as RawSdkError;
  const status = typeof raw.statusCode === 'number' ? raw.statusCode : undefined;
  const armError = raw.details && typeof raw.details === 'object' && raw.details.error && typeof raw.details.error === 'object' ? raw.details.error : undefined;
  const body = raw.body && typeof raw.body === 'object' ? raw.body : armError;
  const code = stringOf(body?.code) ?? stringOf(raw.code) ?? (status !== undefined ? `HTTP${status}` : 'UnknownError');
  // The SDK copies Batch's `message: {lang, value}` object onto Error.message, so look inside it.
  const message = messageText(body?.message) ?? messageText(raw.message) ?? stringOf(raw.response?.bodyAsText) ?? 'no message';
  const headers = raw.response?.headers;
  const header = (name: string) => (typeof headers?.get === 'function' ? headers.get(name) : undefined);
  const details: Record<string, string> = {};
  if (Array.isArray(body?.values)) {
    for (const v of body.values as { key?: unknown; value?: unknown }[]) {
      const key = stringOf(v?.key);
      if (key) details[key] = stringOf(v?.value) ?? '';
    }
  }
  // Our request timeout aborts a call that got no response; say so rather than "The request was aborted".
  const text = code === 'REQUEST_ABORTED_ERROR' ? 'no response within the request timeout (request aborted)' : firstLine(message);
  return {
    status,
    code,
    message: text,
    // Batch answers request-id; Resource Manager x-ms-request-id.
    requestId: header('request-id') ?? header('x-ms-request-id') ?? undefined,
    retryAfterMs: parseRetryAfter(header('retry-after'), nowMs),
    details: Object.keys(details).length ? details : undefined,
  };
}

/** Retry-After as seconds or an HTTP date, in milliseconds from now; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | undefined | null, nowMs: number): number | undefined {
  if (value === undefined || value === null || value.trim() === '') return undefined;
  const seconds = Number(value);
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - nowMs);
}

export function toBatchError(err: unknown, operation: string, resource: string, attempts?: number): BatchError {
  if (err instanceof BatchError) return err;
  const f = describeSdkError(err);
  return new BatchError({ ...f, operation, resource, attempts });
}

function stringOf(v: unknown): string | undefined {
  return typeof v === 'string' && v !== '' ? v : undefined;
}

function messageText(v: unknown): string | undefined {
  if (typeof v === 'string') return v || undefined;
  if (v && typeof v === 'object' && 'value' in v) return stringOf((v as { value?: unknown }).value);
  return undefined;
}

/** Batch appends "\nRequestId:...\nTime:..." to messages; the request id is reported separately. */
function firstLine(message: string): string {
  return message.split('\n')[0].trim();
}
