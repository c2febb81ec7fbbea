/**
 * Who is calling: the principal the app derives from a validated token's claims, the operator (a configured key)
 * or the anonymous caller (only when ANONYMOUS_ROLE allows). A job's owner is the principal's `id`; for Entra ID
 * principals that is `<tenant id>/<object id>` (tid and oid claims: stable, unique, never reassigned, unlike names
 * or e-mail addresses); `name` is only for display.
 */
import type { Role } from '../../core/config/auth';
import { rolesFromClaim } from './roles';

export type PrincipalKind = 'user' | 'application' | 'operator' | 'anonymous';

export interface Principal {
  /** The owner id recorded on jobs this principal submits. */
  id: string;
  /** Display name (from `name` / `preferred_username`, or the client's id for an application). */
  name: string;
  kind: PrincipalKind;
  roles: readonly Role[];
  tenantId?: string;
  objectId?: string;
}

/** The operator: whoever presents one of OPERATOR_API_KEYS. An admin. */
export const OPERATOR: Principal = Object.freeze({ id: 'operator', name: 'operator', kind: 'operator', roles: Object.freeze(['admin'] as Role[]) });

/** Owner of jobs that arrive on the job-submissions queue (no caller identity there): visible to admins only. */
export const QUEUE_OWNER = 'queue';

export function anonymousPrincipal(role: Role): Principal {
  return { id: 'anonymous', name: 'anonymous', kind: 'anonymous', roles: [role] };
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MAX_NAME = 128;

export function ownerIdOf(tenantId: string, objectId: string): string {
  return `${tenantId.toLowerCase()}/${objectId.toLowerCase()}`;
}

/** A display name from a claim: text only (control characters dropped), at most 128 characters. */
function displayText(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const clean = value
    // eslint-disable-next-line no-control-regex -- control characters are what it removes
    .replace(/[\u0000-\u001f\u007f-\u009f]/g, '')
    .trim()
    .slice(0, MAX_NAME);
  return clean || undefined;
}

export type ClaimsOutcome = { ok: true; principal: Principal } | { ok: false; reason: string };

/**
 * The principal of a token whose signature, issuer, audience and lifetime were already checked. Pure.
 * A delegated (user) token has `scp`; an app-only token (client credentials) has none (Entra may add
 * `idtyp: app`). Both need `tid` and `oid`: without them there is no stable owner.
 */
export function principalFromClaims(claims: Record<string, unknown>): ClaimsOutcome {
  const { tid, oid } = claims;
  if (typeof tid !== 'string' || !GUID.test(tid)) return { ok: false, reason: 'the token has no tenant id (tid)' };
  if (typeof oid !== 'string' || !GUID.test(oid)) return { ok: false, reason: 'the token has no object id (oid)' };
  const application = claims.idtyp === 'app' || (claims.idtyp !== 'user' && typeof claims.scp !== 'string');
  const name = application
    ? (displayText(claims.app_displayname) ?? displayText(claims.azp) ?? displayText(claims.appid))
    : (displayText(claims.name) ?? displayText(claims.preferred_username) ?? displayText(claims.upn));
  return {
    ok: true,
    principal: {
      id: ownerIdOf(tid, oid),
      name: name ?? oid.toLowerCase(),
      kind: application ? 'application' : 'user',
      roles: rolesFromClaim(claims.roles),
      tenantId: tid.toLowerCase(),
      objectId: oid.toLowerCase(),
    },
  };
}
