/** The answers every HTTP function shares: problems with a code and a message, and 503 for transient failures. */
import type { HttpResponseInit, InvocationContext } from '@azure/functions';

export function problem(status: number, error: string, message: string): HttpResponseInit {
  return { status, jsonBody: { error, message } };
}

export function invalidRequest(errors: { path: string; message: string }[]): HttpResponseInit {
  return { status: 400, jsonBody: { errors } };
}

/**
 * A spec that names data outside the caller's data area and every shared area it may use (shared/intake/dataAreas.ts):
 * 403, with the field paths in the same `errors` list a 400 carries, and a code to tell it from other 403s.
 */
export function dataAreaForbidden(errors: { path: string; message: string }[]): HttpResponseInit {
  return {
    status: 403,
    jsonBody: { error: 'DataAreaForbidden', message: `the spec names data outside your data area: ${errors.map((e) => e.path).join(', ')}`, errors },
  };
}

/**
 * A dependency (storage, Durable, Batch) failed: tell the client to retry instead of guessing. The stack goes to
 * the log; the client gets one sentence.
 */
export function unavailable(context: InvocationContext, what: string, err: unknown): HttpResponseInit {
  context.error(`${what}: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
  const message = err instanceof Error ? err.message : String(err);
  return { status: 503, headers: { 'Retry-After': '2' }, jsonBody: { error: 'Unavailable', message: `temporarily unavailable: ${message}` } };
}
