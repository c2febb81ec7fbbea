/**
 * Tokens of managed identities, shaped like the v1 access tokens Entra issues to them for Azure resources (what IMDS
 * returns): iss/idp https://sts.windows.net/<tenant>/, aud the resource as asked, appid the client id, oid/sub the
 * principal, xms_mirid the identity's ARM id, ver 1.0. Azure Storage (and Azurite's OAuth check) reads exactly this
 * issuer form. Signed with the local issuer's key, so the emulated services verify them against its JWKS.
 */
import type { ManagedIdentity } from './managedIdentities';
import type { Issuer } from './tokens';

export const MI_TOKEN_SECONDS = 24 * 3_600;

/** Resources a managed identity may ask a token for, with the `aud` the token carries (Entra keeps the form asked). */
export const MANAGED_IDENTITY_RESOURCES = [
  'https://management.azure.com/',
  'https://management.azure.com',
  'https://management.core.windows.net/',
  'https://containerregistry.azure.net',
  'https://containerregistry.azure.net/',
  'https://storage.azure.com/',
  'https://storage.azure.com',
  'https://batch.core.windows.net/',
];

export function stsIssuer(tenantId: string): string {
  return `https://sts.windows.net/${tenantId}/`;
}

export async function managedIdentityToken(iss: Issuer, mi: ManagedIdentity, resource: string, lifetimeSeconds = MI_TOKEN_SECONDS) {
  const sts = stsIssuer(iss.directory.tenantId);
  return iss.key.sign({
    aud: resource,
    iss: sts,
    idp: sts,
    tid: iss.directory.tenantId,
    oid: mi.principalId,
    sub: mi.principalId,
    appid: mi.clientId,
    appidacr: '2',
    idtyp: 'app',
    xms_mirid: mi.resourceId,
    ver: '1.0',
  }, lifetimeSeconds);
}
