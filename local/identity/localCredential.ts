/**
 * A TokenCredential (what every Azure SDK client takes) for a principal of the local tenant, as the local tooling
 * uses it: the demo uploading inputs, tests reading Batch and storage as the operator. In the stack's own process
 * tokens are signed directly; from another process (a supervised stack, `npm start`) they come from the identity
 * service's /local/resource-token over loopback. A developer in Azure would use DefaultAzureCredential with their
 * `az login`; this is that identity here. Tokens are cached until five minutes before they expire.
 */
import type { AccessToken, GetTokenOptions, TokenCredential } from '@azure/core-auth';

/** Signs (or fetches) a token for one resource (`https://storage.azure.com`, `https://batch.core.windows.net/`). */
export type MintResourceToken = (resource: string) => Promise<{ token: string; expiresOn: number }>;

const REFRESH_MARGIN_MS = 5 * 60_000;

/** The resource a scope names, as @azure/identity maps it (everything before the last "/.default"). */
export function resourceOfScope(scope: string): string {
  const i = scope.lastIndexOf('/.default');
  return i >= 0 && i === scope.length - '/.default'.length ? scope.slice(0, i) : scope;
}

export class LocalTenantCredential implements TokenCredential {
  private readonly cache = new Map<string, AccessToken>();

  constructor(private readonly mint: MintResourceToken) {}

  async getToken(scopes: string | string[], _options?: GetTokenOptions): Promise<AccessToken> {
    const list = Array.isArray(scopes) ? scopes : [scopes];
    if (list.length !== 1) throw new Error(`a token is for one resource; got scopes ${list.join(' ')}`);
    const resource = resourceOfScope(list[0]);
    const cached = this.cache.get(resource);
    if (cached && cached.expiresOnTimestamp - REFRESH_MARGIN_MS > Date.now()) return cached;
    const { token, expiresOn } = await this.mint(resource);
    const fresh: AccessToken = { token, expiresOnTimestamp: expiresOn * 1000, tokenType: 'Bearer' };
    this.cache.set(resource, fresh);
    return fresh;
  }
}

/** A credential whose tokens come from the identity service at `httpUrl` (`/local/resource-token`). */
export function remoteTenantCredential(httpUrl: string, principal: { user: string } | { identity: string }): LocalTenantCredential {
  return new LocalTenantCredential(async (resource) => {
    const res = await fetch(`${httpUrl}/local/resource-token`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ resource, ...principal }),
    });
    if (!res.ok) throw new Error(`the local identity service answered ${res.status} for a ${resource} token: ${await res.text()}`);
    const body = (await res.json()) as { access_token: string; expires_on: number };
    return { token: body.access_token, expiresOn: body.expires_on };
  });
}
