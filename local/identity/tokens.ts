/**
 * The claims of the tokens the local issuer signs, shaped like Entra ID's v2.0 tokens: access tokens for the API
 * (aud = the API's client id, `scp` for a user's delegated token, `roles` for app role assignments, `idtyp: app`
 * for app-only tokens), and the id token plus client_info MSAL reads to build its account.
 */
import type { Directory, LocalClient, LocalUser } from './directory';
import { stableGuid } from './directory';
import type { SigningKey } from './signingKey';

export const ACCESS_TOKEN_SECONDS = 3_600;

export interface Issuer {
  /** The `iss` of every token: <https origin>/<tenant id>/v2.0. */
  issuer: string;
  directory: Directory;
  key: SigningKey;
}

export interface UserTokenOptions {
  /** Override the audience (tests: a token for another API). */
  audience?: string;
  /** Lifetime; negative for a token that has already expired. */
  lifetimeSeconds?: number;
}

export async function userAccessToken(iss: Issuer, user: LocalUser, client: LocalClient | undefined, opts: UserTokenOptions = {}) {
  const clientId = client?.clientId ?? iss.directory.api.clientId;
  return iss.key.sign(
    {
      aud: opts.audience ?? iss.directory.api.clientId,
      iss: iss.issuer,
      tid: iss.directory.tenantId,
      oid: user.oid,
      // Entra's sub is pairwise per application.
      sub: stableGuid(`sub:${user.oid}:${clientId}`),
      name: user.name,
      preferred_username: `${user.username}@hpc.local`,
      ...(user.roles.length ? { roles: user.roles } : {}),
      scp: iss.directory.api.scope,
      azp: clientId,
      azpacr: client?.secret ? '1' : '0',
      ver: '2.0',
    },
    opts.lifetimeSeconds ?? ACCESS_TOKEN_SECONDS,
  );
}

export async function appAccessToken(iss: Issuer, client: LocalClient, opts: UserTokenOptions = {}) {
  return iss.key.sign(
    {
      aud: opts.audience ?? iss.directory.api.clientId,
      iss: iss.issuer,
      tid: iss.directory.tenantId,
      oid: client.oid,
      sub: client.oid,
      ...(client.appRoles.length ? { roles: client.appRoles } : {}),
      azp: client.clientId,
      azpacr: '1',
      idtyp: 'app',
      ver: '2.0',
    },
    opts.lifetimeSeconds ?? ACCESS_TOKEN_SECONDS,
  );
}

export async function idToken(iss: Issuer, user: LocalUser, clientId: string) {
  return iss.key.sign(
    {
      aud: clientId,
      iss: iss.issuer,
      tid: iss.directory.tenantId,
      oid: user.oid,
      sub: stableGuid(`sub:${user.oid}:${clientId}`),
      name: user.name,
      preferred_username: `${user.username}@hpc.local`,
      ver: '2.0',
    },
    ACCESS_TOKEN_SECONDS,
  );
}

/** MSAL's client_info: base64url of {"uid": oid, "utid": tid}. */
export function clientInfo(iss: Issuer, user: LocalUser): string {
  return Buffer.from(JSON.stringify({ uid: user.oid, utid: iss.directory.tenantId })).toString('base64url');
}
