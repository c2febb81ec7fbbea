/**
 * Authentication of one API request, decided by the app (the HTTP routes are anonymous at the Functions host: a
 * host-level key check would stop bearer-token callers before the app runs). In order:
 *   1. an `Authorization: Bearer <token>` header: the token decides (valid → its principal; invalid → 401);
 *   2. an operator key (`x-functions-key` header or `code` query parameter): one of OPERATOR_API_KEYS → the
 *      operator (an admin); any other key → 401;
 *   3. nothing: ANONYMOUS_ROLE (default none → 401 with a Bearer challenge).
 * Pure apart from the token validator it is given.
 */
import type { AuthConfig } from '../../core/config/auth';
import { matchesOperatorKey } from './operatorKeys';
import { anonymousPrincipal, OPERATOR, principalFromClaims, type Principal } from './principal';
import { IssuerUnavailableError, TokenRejectedError, type TokenValidator } from './tokenValidator';

export interface Credentials {
  /** The Authorization header, as sent. */
  authorization?: string;
  /** The x-functions-key header, else the `code` query parameter. */
  apiKey?: string;
}

export type AuthOutcome = { ok: true; principal: Principal } | { ok: false; status: 401 | 503; error: string; message: string; challenge?: string };

/** The realm named in challenges. */
export const REALM = 'hpc-jobs';

/** RFC 6750 §3 challenge; descriptions are our own fixed sentences (no quotes or backslashes in them). */
export function bearerChallenge(error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope', description?: string): string {
  const parts = [`realm="${REALM}"`];
  if (error) parts.push(`error="${error}"`);
  if (description) parts.push(`error_description="${description.replace(/["\\]/g, '')}"`);
  return `Bearer ${parts.join(', ')}`;
}

function unauthorized(message: string, error?: 'invalid_request' | 'invalid_token'): AuthOutcome {
  return { ok: false, status: 401, error: 'Unauthorized', message, challenge: bearerChallenge(error, error ? message : undefined) };
}

export async function authenticate(creds: Credentials, config: AuthConfig, validator: TokenValidator | undefined): Promise<AuthOutcome> {
  if (creds.authorization !== undefined && creds.authorization !== '') {
    const m = /^Bearer +([A-Za-z0-9._~+/-]+=*) *$/i.exec(creds.authorization);
    if (!m) return unauthorized('the Authorization header must be "Bearer <access token>"', 'invalid_request');
    if (!config.bearer || !validator) return unauthorized('this deployment accepts no bearer tokens (AUTH_ISSUER is not set)', 'invalid_token');
    let claims: Record<string, unknown>;
    try {
      claims = await validator.verify(m[1]);
    } catch (err) {
      if (err instanceof TokenRejectedError) return unauthorized(err.description, 'invalid_token');
      if (err instanceof IssuerUnavailableError) return { ok: false, status: 503, error: 'Unavailable', message: `cannot validate tokens now: ${err.message}` };
      throw err;
    }
    const outcome = principalFromClaims(claims);
    return outcome.ok ? outcome : unauthorized(outcome.reason, 'invalid_token');
  }
  if (creds.apiKey !== undefined && creds.apiKey !== '') {
    return matchesOperatorKey(creds.apiKey, config.operatorKeys) ? { ok: true, principal: OPERATOR } : unauthorized('the operator key is not valid');
  }
  if (config.anonymousRole !== 'none') return { ok: true, principal: anonymousPrincipal(config.anonymousRole) };
  return unauthorized('sign in: send an Entra ID access token (Authorization: Bearer) or an operator key (x-functions-key)');
}
