/** The answers every HTTP function shares: problems with a code and a message, and 503 for transient failures. */
import type { HttpResponseInit, InvocationContext } from '@azure/functions';

export function problem(status: number, error: string, message: string): HttpResponseInit {
  return { status, jsonBody: { error, message } };
}

export function invalidRequest(errors: { path: string; message: string }[]): HttpResponseInit {
  return { status: 400, jsonBody: { errors } };
}

/**
 * A request refused by an ownership rule (pool.poolId naming someone else's pool: PoolForbidden; data outside the
 * caller's data area: DataAreaForbidden): 403 with a code, and the field paths in the same `errors` list as a 400
 * validation answer, so clients read both alike.
 */
export function forbiddenRequest(code: string, errors: { path: string; message: string }[]): HttpResponseInit {
  return { status: 403, jsonBody: { error: code, message: errors.map((e) => `${e.path}: ${e.message}`).join('; '), errors } };
}

/**
 * A dependency (storage, Durable, Batch) failed: tell the client to retry instead of guessing. The stack goes to
 * the log; the client gets one sentence.
 */
export function unavailable(context: InvocationContext, what: string, err: unknown): HttpResponseInit {
  context.error(`${what}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  const message = err instanceof Error ? err.message : String(err);
  return { status: 503, headers: { 'Retry-After': '2' }, jsonBody: { error: 'Unavailable', message: `temporarily unavailable: ${message}` } };
}
