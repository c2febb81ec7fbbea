/**
 * User-assigned managed identities of the local subscription, and the "hosts" that carry them: the function app and
 * every emulated pool with an identity. Azure gives each VM an instance metadata service (IMDS) at 169.254.169.254
 * that hands out tokens for exactly the identities assigned to that VM; locally one listener serves every host, each
 * under its own unguessable path (`/imds/<key>`), and a host's processes find theirs through
 * AZURE_POD_IDENTITY_AUTHORITY_HOST (the variable MSAL, @azure/identity and our node scripts honour). A host asks
 * only for identities assigned to it; anything else is IMDS's "Identity not found".
 */
import { randomBytes } from 'node:crypto';
import { stableGuid } from './directory';

export const LOCAL_SUBSCRIPTION_ID = stableGuid('local-subscription');
export const LOCAL_RESOURCE_GROUP = 'hpc-local';

export interface ManagedIdentity {
  name: string;
  /** ARM id: /subscriptions/…/resourceGroups/…/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>. */
  resourceId: string;
  clientId: string;
  /** The service principal's object id (`oid` of its tokens). */
  principalId: string;
}

export function userAssignedIdentity(name: string, subscriptionId = LOCAL_SUBSCRIPTION_ID, resourceGroup = LOCAL_RESOURCE_GROUP): ManagedIdentity {
  return {
    name,
    resourceId: `/subscriptions/${subscriptionId}/resourceGroups/${resourceGroup}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`,
    clientId: stableGuid(`mi-client:${name}`),
    principalId: stableGuid(`mi-principal:${name}`),
  };
}

/** The identities the local stack knows: the app's (id-app) and the pools' (id-pool), as infra/main.bicep makes them. */
export function defaultManagedIdentities(): ManagedIdentity[] {
  return [userAssignedIdentity('id-app'), userAssignedIdentity('id-pool')];
}

export class ManagedIdentities {
  private readonly identities = new Map<string, ManagedIdentity>();
  /** Host key → the resource ids (lower case) assigned to it. */
  private readonly hosts = new Map<string, Set<string>>();

  constructor(list: ManagedIdentity[] = defaultManagedIdentities()) {
    for (const mi of list) this.add(mi);
  }

  add(mi: ManagedIdentity): void {
    this.identities.set(mi.resourceId.toLowerCase(), mi);
  }

  byResourceId(resourceId: string): ManagedIdentity | undefined {
    return this.identities.get(resourceId.toLowerCase());
  }

  byName(name: string): ManagedIdentity | undefined {
    return [...this.identities.values()].find((mi) => mi.name === name);
  }

  /** A new host carrying these identities (all must exist); returns its key. */
  registerHost(resourceIds: string[]): string {
    const ids = resourceIds.map((r) => {
      const mi = this.byResourceId(r);
      if (!mi) throw new Error(`no user-assigned identity ${r} in the local subscription`);
      return mi.resourceId.toLowerCase();
    });
    // Hex: MSAL lower-cases the endpoint URL it is given.
    const key = randomBytes(18).toString('hex');
    this.hosts.set(key, new Set(ids));
    return key;
  }

  unregisterHost(key: string): void {
    this.hosts.delete(key);
  }

  /** The identities of a host, or undefined for an unknown key. */
  hostIdentities(key: string): ManagedIdentity[] | undefined {
    const ids = this.hosts.get(key);
    return ids ? [...ids].map((id) => this.identities.get(id) as ManagedIdentity) : undefined;
  }
}
