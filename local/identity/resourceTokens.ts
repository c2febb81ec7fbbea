/**
 * Access tokens for Azure resources (Storage, Batch, Resource Manager, ...), as Entra ID issues them: v1.0 tokens
 * (every first-party Azure resource accepts v1, so Entra issues v1 for them whatever endpoint was asked), with
 * `iss` = https://sts.windows.net/<tenant>/ and `aud` = the resource exactly as requested (Entra echoes it: a
 * token asked for `https://batch.core.windows.net` has no trailing slash, and Batch refuses it). Signed with the
 * tenant's one key, so whoever validates signatures (the Batch emulator, the storage gate in front of Azurite)
 * reads the same JWKS as the API's validator.
 *
 * Azurite checks `iss` against the public clouds' STS prefixes (https://sts.windows.net/ among them), `aud`
 * against the storage audiences and the lifetime (node_modules/azurite/dist/src/blob/authentication/
 * BlobTokenAuthenticator.js); it does not check signatures, which the gate does (local/azurite/keylessGate.cjs).
 */
import type { Issuer } from './tokens';
import type { LocalUser } from './directory';
import { stableGuid } from './directory';
import type { LocalManagedIdentity } from './managedIdentities';

export const RESOURCE_TOKEN_SECONDS = 3_600;

/** Application id URIs of the Azure resources the local tenant knows (what a `resource` may name). */
export const AZURE_RESOURCES = {
  storage: 'https://storage.azure.com/',
  batch: 'https://batch.core.windows.net/',
  management: 'https://management.azure.com/',
  classicManagement: 'https://management.core.windows.net/',
  keyVault: 'https://vault.azure.net',
  containerRegistry: 'https://containerregistry.azure.net',
} as const;

/** The issuer of v1.0 tokens for a tenant (what Azure Storage and Batch expect). */
export function v1Issuer(tenantId: string): string {
  return `https://sts.windows.net/${tenantId}/`;
}

const trimSlash = (s: string): string => s.replace(/\/+$/, '');

/** Whether `resource` names a resource of the tenant (Entra matches the identifier URI with or without its slash). */
export function knownResource(resource: string): boolean {
  const wanted = trimSlash(resource).toLowerCase();
  return wanted !== '' && Object.values(AZURE_RESOURCES).some((r) => trimSlash(r).toLowerCase() === wanted);
}

/** Who a resource token is for: a managed identity (app-only) or a user signed in through a public client. */
export type ResourcePrincipal = { kind: 'managedIdentity'; identity: LocalManagedIdentity } | { kind: 'user'; user: LocalUser; clientId: string };

export interface ResourceTokenOptions {
  /** Lifetime; negative for a token that has already expired. */
  lifetimeSeconds?: number;
}

export async function resourceAccessToken(iss: Issuer, principal: ResourcePrincipal, resource: string, opts: ResourceTokenOptions = {}) {
  const tenantId = iss.directory.tenantId;
  const common = { aud: resource, iss: v1Issuer(tenantId), idp: v1Issuer(tenantId), tid: tenantId, ver: '1.0' };
  const claims =
    principal.kind === 'managedIdentity'
      ? {
          ...common,
          appid: principal.identity.clientId,
          appidacr: '2',
          idtyp: 'app',
          oid: principal.identity.principalId,
          sub: principal.identity.principalId,
          xms_mirid: principal.identity.resourceId,
        }
      : {
          ...common,
          acr: '1',
          amr: ['pwd'],
          appid: principal.clientId,
          appidacr: '0',
          name: principal.user.name,
          oid: principal.user.oid,
          scp: 'user_impersonation',
          sub: stableGuid(`sub:${principal.user.oid}:${trimSlash(resource)}`),
          unique_name: `${principal.user.username}@hpc.local`,
          upn: `${principal.user.username}@hpc.local`,
        };
  return iss.key.sign(claims, opts.lifetimeSeconds ?? RESOURCE_TOKEN_SECONDS);
}
