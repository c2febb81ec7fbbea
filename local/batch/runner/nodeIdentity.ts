/**
 * How the emulated node agent uses a pool identity, as Batch's does for `identityReference` on resource files, output
 * files and container registries: it asks the node's instance metadata service for a token of that identity
 * (msi_res_id) for the resource. An identity the pool does not carry gets IMDS's "Identity not found", which becomes
 * the file's failure; a pool without identity has no IMDS at all.
 */
import type { AccessToken, TokenCredential } from '@azure/core-auth';

export const STORAGE_RESOURCE = 'https://storage.azure.com/';

/** A node's agent, for transfers with a pool identity: the node's IMDS (absent: the pool has no identity) and extra CAs. */
export interface NodeAgent {
  imds?: string;
  /** PEM CAs the node image trusts besides the public roots. */
  trustedCertificates?: string[];
  /** Public host names the node resolves to a local server standing in for them (config.ts hostAliases). */
  hostAliases?: Record<string, string>;
}

export async function nodeIdentityToken(imds: string | undefined, resourceId: string, resource: string): Promise<AccessToken> {
  if (!imds)
    throw new Error(
      `identityReference ${resourceId}: the pool has no managed identity (create it through the management plane with identity.userAssignedIdentities)`,
    );
  const url = `${imds}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=${encodeURIComponent(resource)}&msi_res_id=${encodeURIComponent(resourceId)}`;
  const res = await fetch(url, { headers: { Metadata: 'true' } });
  const body = (await res.json().catch(() => ({}))) as { access_token?: string; expires_on?: string; error_description?: string };
  if (!res.ok || !body.access_token) {
    throw new Error(`identityReference ${resourceId}: the node's instance metadata service answered ${res.status}: ${body.error_description ?? 'no token'}`);
  }
  return { token: body.access_token, expiresOnTimestamp: Number(body.expires_on) * 1000 };
}

/** A TokenCredential for the Azure SDK clients the node agent uses (output file uploads). */
export function nodeIdentityCredential(imds: string | undefined, resourceId: string): TokenCredential {
  return { getToken: () => nodeIdentityToken(imds, resourceId, STORAGE_RESOURCE) };
}
