/**
 * Bearer token validation with `jose`: signature (RS256 only) against the issuer's published keys, exact issuer,
 * one of the accepted audiences, expiry and not-before with a small clock skew, and the claims an owner needs.
 * The issuer's OpenID metadata (`<issuer>/.well-known/openid-configuration`) is read once and must name the same
 * issuer; its `jwks_uri` is read by jose's remote key set, which caches the keys and re-reads them when a token
 * names a key id it has not seen (Entra rolls its signing keys), at most once per cooldown.
 */
import { createRemoteJWKSet, customFetch, errors, jwtVerify, type JWTPayload } from 'jose';
import type { BearerConfig } from '../../core/config/auth';

/** The token itself is not acceptable: 401 with this description. */
export class TokenRejectedError extends Error {
  constructor(readonly description: string) {
    super(description);
    this.name = 'TokenRejectedError';
  }
}

/** The issuer's metadata or keys could not be read: the token cannot be judged now (503, retry). */
export class IssuerUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'IssuerUnavailableError';
  }
}

export interface TokenValidator {
  /** The verified claims; throws TokenRejectedError or IssuerUnavailableError. */
  verify(token: string): Promise<JWTPayload>;
}

type Fetch = typeof fetch;

/** How long a failed metadata read is remembered before it is tried again (no stampede on a down issuer). */
const METADATA_RETRY_MS = 5_000;

function isAllowedUrl(url: URL): boolean {
  return url.protocol === 'https:' || (url.protocol === 'http:' && ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname));
}

/** jose's errors → why the token is refused, in words a caller can act on. */
function rejection(err: unknown): Error {
  if (err instanceof errors.JWTExpired) return new TokenRejectedError('the token has expired');
  if (err instanceof errors.JWTClaimValidationFailed) {
    const claim = err.claim;
    if (claim === 'iss') return new TokenRejectedError('the token was issued by another issuer');
    if (claim === 'aud') return new TokenRejectedError('the token is for another audience');
    if (claim === 'nbf') return new TokenRejectedError('the token is not valid yet');
    return new TokenRejectedError(`the token's ${claim} claim is missing or invalid`);
  }
  if (err instanceof errors.JWSSignatureVerificationFailed) return new TokenRejectedError('the token signature does not verify');
  if (err instanceof errors.JWKSNoMatchingKey) return new TokenRejectedError('the token is not signed by a key of the issuer');
  if (err instanceof errors.JOSEAlgNotAllowed) return new TokenRejectedError('the token is not signed with RS256');
  if (err instanceof errors.JWKSTimeout || err instanceof errors.JWKSInvalid) {
    return new IssuerUnavailableError(`the issuer's signing keys could not be read: ${(err as Error).message}`, { cause: err });
  }
  if (err instanceof errors.JOSEError) return new TokenRejectedError('the token is not a valid JWT');
  return new IssuerUnavailableError(`the issuer's signing keys could not be read: ${(err as Error).message}`, { cause: err });
}

export function createTokenValidator(config: BearerConfig, fetchImpl: Fetch = fetch): TokenValidator {
  let keys: ReturnType<typeof createRemoteJWKSet> | undefined;
  let failedAt = 0;
  let failure: IssuerUnavailableError | undefined;
  let loading: Promise<ReturnType<typeof createRemoteJWKSet>> | undefined;

  async function loadKeys(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    let metadata: { issuer?: unknown; jwks_uri?: unknown };
    try {
      const res = await fetchImpl(config.metadataUrl, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`${config.metadataUrl} answered ${res.status}`);
      metadata = (await res.json()) as typeof metadata;
    } catch (err) {
      throw new IssuerUnavailableError(`the issuer's OpenID metadata could not be read: ${(err as Error).message}`, { cause: err });
    }
    if (metadata.issuer !== config.issuer) {
      throw new IssuerUnavailableError(
        `the OpenID metadata at ${config.metadataUrl} names issuer ${JSON.stringify(metadata.issuer)}, not the configured ${config.issuer}`,
      );
    }
    let jwksUri: URL | undefined;
    try {
      jwksUri = typeof metadata.jwks_uri === 'string' ? new URL(metadata.jwks_uri) : undefined;
    } catch {
      jwksUri = undefined;
    }
    if (!jwksUri || !isAllowedUrl(jwksUri)) throw new IssuerUnavailableError(`the OpenID metadata has no usable jwks_uri (${String(metadata.jwks_uri)})`);
    return createRemoteJWKSet(jwksUri, { timeoutDuration: 10_000, cooldownDuration: 30_000, [customFetch]: fetchImpl });
  }

  async function keySet(): Promise<ReturnType<typeof createRemoteJWKSet>> {
    if (keys) return keys;
    if (failure && Date.now() - failedAt < METADATA_RETRY_MS) throw failure;
    loading ??= loadKeys().finally(() => (loading = undefined));
    try {
      keys = await loading;
      failure = undefined;
      return keys;
    } catch (err) {
      failure = err as IssuerUnavailableError;
      failedAt = Date.now();
      throw err;
    }
  }

  return {
    async verify(token) {
      const jwks = await keySet();
      try {
        const { payload } = await jwtVerify(token, jwks, {
          issuer: config.issuer,
          audience: config.audiences,
          algorithms: ['RS256'],
          clockTolerance: config.clockSkewSeconds,
          requiredClaims: ['exp', 'tid', 'oid'],
        });
        return payload;
      } catch (err) {
        throw rejection(err);
      }
    },
  };
}
