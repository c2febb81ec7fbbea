/**
 * How the emulated Azure services (the Batch management plane, the registry's token exchange) check an Entra token
 * as the real ones do: the signature against the tenant's published keys (JWKS), the issuer (the tenant's v1
 * `https://sts.windows.net/<tenant>/` or its v2.0 issuer), the lifetime and the audience. Failures say which check failed, so each service can answer with its own error code.
 */
import { createLocalJWKSet, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import { v1Issuer } from './resourceTokens';

export interface EntraTokenVerifierOptions {
  /** The tenant's signing keys (public): the local identity service's jwks(), also served at `/<tenant>/discovery/v2.0/keys`. */
  jwks: () => JSONWebKeySet;
  tenantId: string;
  /** Accepted issuers besides the tenant's v1 issuer (e.g. its v2.0 issuer). */
  extraIssuers?: string[];
  clockToleranceSeconds?: number;
}

export type TokenProblem = 'malformed' | 'signature' | 'expired' | 'issuer' | 'audience';

export class TokenRejected extends Error {
  constructor(
    readonly problem: TokenProblem,
    message: string,
  ) {
    super(message);
    this.name = 'TokenRejected';
  }
}

export interface VerifiedToken {
  /** The caller's object id (a user, or a service principal such as a managed identity). */
  oid: string;
  tid: string;
  /** Client id (appid in v1 tokens, azp in v2.0). */
  appId?: string;
  /** The managed identity's ARM id, for managed identity tokens. */
  miResourceId?: string;
  claims: JWTPayload;
}

export type EntraTokenVerifier = (token: string, audiences: string[]) => Promise<VerifiedToken>;

export function createEntraTokenVerifier(opts: EntraTokenVerifierOptions): EntraTokenVerifier {
  const issuers = [v1Issuer(opts.tenantId), ...(opts.extraIssuers ?? [])];
  return async (token, audiences) => {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, createLocalJWKSet(opts.jwks()), { algorithms: ['RS256'], clockTolerance: opts.clockToleranceSeconds ?? 300 }));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired)
        throw new TokenRejected('expired', `the token expired at ${new Date(Number(err.payload.exp) * 1000).toISOString()}`);
      if (err instanceof joseErrors.JWSSignatureVerificationFailed || err instanceof joseErrors.JWKSNoMatchingKey)
        throw new TokenRejected('signature', "the token's signature does not verify against the tenant's keys");
      throw new TokenRejected('malformed', `the token is not a valid JWT: ${(err as Error).message}`);
    }
    if (!issuers.includes(String(payload.iss))) throw new TokenRejected('issuer', `the token's issuer ${String(payload.iss)} is not this tenant`);
    const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud];
    if (!aud.some((a) => typeof a === 'string' && audiences.includes(a)))
      throw new TokenRejected('audience', `the token's audience ${aud.join(', ')} is not one of ${audiences.join(', ')}`);
    const oid = typeof payload.oid === 'string' ? payload.oid : undefined;
    if (!oid) throw new TokenRejected('malformed', 'the token names no object id (oid)');
    return {
      oid,
      tid: String(payload.tid ?? ''),
      appId: typeof payload.appid === 'string' ? payload.appid : typeof payload.azp === 'string' ? payload.azp : undefined,
      miResourceId: typeof payload.xms_mirid === 'string' ? payload.xms_mirid : undefined,
      claims: payload,
    };
  };
}
