/**
 * Microsoft Entra ID authentication of the Batch data plane, as Batch checks a bearer token: signed by the
 * account's tenant, issued by it (v1.0 issuer https://sts.windows.net/<tenant>/, what Entra issues for Batch),
 * for exactly the audience https://batch.core.windows.net/ (with its slash: a token for
 * `https://batch.core.windows.net` is refused, "It should exactly match (including forward slash)", as Batch
 * answers, e.g. github.com/AzureAD/microsoft-authentication-library-for-js/issues/1735), within its lifetime.
 * Role assignments on the account: when `roles` is given, the token's object id must hold a data role
 * (dataRoleAllows); without it any valid token of the tenant may do anything (emulators started bare by tests).
 */
import { createLocalJWKSet, decodeJwt, errors, jwtVerify, type JSONWebKeySet } from 'jose';

export const BATCH_AUDIENCE = 'https://batch.core.windows.net/';

export interface BatchAadOptions {
  /** The tenant the account belongs to: tokens of https://sts.windows.net/<tenantId>/ only. */
  tenantId: string;
  /** Its signing keys (public). */
  jwks: () => JSONWebKeySet;
  /** Who holds which Batch data role on the account (object ids). */
  roles?: BatchDataRoles;
}

/**
 * Azure's built-in Batch data roles on the account: Azure Batch Data Contributor (jobs, job schedules and pools:
 * everything the data plane does) and a reader (Reader / Batch Account Reader: `.../read` actions, so GET and
 * HEAD only). Anyone else, the pools' own identities included, holds none.
 */
export interface BatchDataRoles {
  contributors: string[];
  readers: string[];
}

/** Whether a principal's role allows this method; pure, for the server's door. */
export function dataRoleAllows(roles: BatchDataRoles, oid: string | undefined, method: string): boolean {
  if (!oid) return false;
  if (roles.contributors.includes(oid)) return true;
  return roles.readers.includes(oid) && (method === 'GET' || method === 'HEAD');
}

/** `failed`: Batch's 401 AuthenticationFailed, with the reason as its AuthenticationErrorDetail. */
export type BearerResult = { ok: true; oid?: string } | { ok: false; reason: string };

/** Tolerance on exp/nbf between the issuer's clock and the service's. */
const CLOCK_SKEW_SECONDS = 300;

/** A token that passed every check, with the times that bound its validity (jose's NumericDates, seconds). */
interface VerifiedToken {
  oid?: string;
  nbf?: number;
  exp?: number;
}

/** Per tenant and key set: the imported keys and the tokens they verified. */
interface Verifications {
  keys: ReturnType<typeof createLocalJWKSet>;
  tokens: Map<string, VerifiedToken>;
}

/**
 * A client sends the same token with every request for its hour: its signature, issuer and audience are checked once
 * (an RSA verification and a key import each time, otherwise), only its lifetime again at each use. Keyed by the key
 * set's content, so a changed set verifies afresh.
 */
const verifications = new Map<string, Verifications>();
const MAX_KEY_SETS = 16;
const MAX_TOKENS = 1000;

function verificationsFor(aad: BatchAadOptions): Verifications {
  const jwks = aad.jwks();
  const id = `${aad.tenantId}\n${JSON.stringify(jwks)}`;
  let v = verifications.get(id);
  if (!v) {
    if (verifications.size >= MAX_KEY_SETS) verifications.clear();
    v = { keys: createLocalJWKSet(jwks), tokens: new Map() };
    verifications.set(id, v);
  }
  return v;
}

/** jose's lifetime rule (nbf > now + tolerance fails, exp <= now - tolerance fails), at whole seconds as jose counts. */
function withinLifetime(t: VerifiedToken, now: Date): boolean {
  const s = Math.floor(now.getTime() / 1000);
  return (t.nbf === undefined || t.nbf <= s + CLOCK_SKEW_SECONDS) && (t.exp === undefined || t.exp > s - CLOCK_SKEW_SECONDS);
}

export async function verifyBearer(token: string, aad: BatchAadOptions, now: Date = new Date()): Promise<BearerResult> {
  const verified = verificationsFor(aad);
  const known = verified.tokens.get(token);
  // Outside its lifetime it goes through jose again, which gives the refusal's exact reason.
  if (known && withinLifetime(known, now)) return { ok: true, oid: known.oid };
  const issuer = `https://sts.windows.net/${aad.tenantId}/`;
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(token);
  } catch {
    return { ok: false, reason: 'The access token is not a JSON Web Token.' };
  }
  try {
    const { payload } = await jwtVerify(token, verified.keys, {
      algorithms: ['RS256'],
      issuer,
      audience: BATCH_AUDIENCE,
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: now,
    });
    const oid = typeof payload.oid === 'string' ? payload.oid : undefined;
    if (verified.tokens.size >= MAX_TOKENS) verified.tokens.clear();
    verified.tokens.set(token, { oid, nbf: payload.nbf, exp: payload.exp });
    return { ok: true, oid };
  } catch (err) {
    if (err instanceof errors.JWTExpired) {
      const exp = typeof claims.exp === 'number' ? new Date(claims.exp * 1000).toISOString() : '?';
      return { ok: false, reason: `The access token expiry UTC time '${exp}' is earlier than current UTC time '${now.toISOString()}'.` };
    }
    if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'aud') {
      return {
        ok: false,
        reason: `The access token has been obtained from wrong audience or resource '${String(claims.aud)}'. It should exactly match (including forward slash) with one of the allowed audiences '${BATCH_AUDIENCE}'`,
      };
    }
    if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'iss') {
      return {
        ok: false,
        reason: `The access token is from the wrong issuer '${String(claims.iss)}'. It must match the tenant '${issuer}' associated with this Batch account.`,
      };
    }
    if (err instanceof errors.JWTClaimValidationFailed && err.claim === 'nbf') {
      return { ok: false, reason: 'The access token is not yet valid (nbf).' };
    }
    return { ok: false, reason: 'The access token signature is invalid: it was not signed by a key of the tenant associated with this Batch account.' };
  }
}
