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

export async function verifyBearer(token: string, aad: BatchAadOptions, now: Date = new Date()): Promise<BearerResult> {
  const issuer = `https://sts.windows.net/${aad.tenantId}/`;
  let claims: Record<string, unknown>;
  try {
    claims = decodeJwt(token);
  } catch {
    return { ok: false, reason: 'The access token is not a JSON Web Token.' };
  }
  try {
    const { payload } = await jwtVerify(token, createLocalJWKSet(aad.jwks()), {
      algorithms: ['RS256'],
      issuer,
      audience: BATCH_AUDIENCE,
      clockTolerance: CLOCK_SKEW_SECONDS,
      currentDate: now,
    });
    return { ok: true, oid: typeof payload.oid === 'string' ? payload.oid : undefined };
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
