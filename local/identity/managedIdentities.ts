/**
 * The managed identities of the local "subscription" and who holds them: the Function App's user-assigned
 * identity (infra/main.bicep's `id-app-…`, the only identity the app has there: no system-assigned one), the pools'
 * user-assigned identity (`id-pool-…`, assigned to pools created through the management plane), and the developer
 * tooling a person would use against the services (the Azure CLI's public client signing a user in).
 * Ids are stable GUIDs derived from names, like the rest of the local tenant (directory.ts), so tokens, user
 * delegation keys and the SAS URLs signed with them stay valid across restarts.
 *
 * Hosts: Azure gives each VM an instance metadata service (IMDS) at 169.254.169.254 that hands out tokens for exactly
 * the identities assigned to that VM; locally one listener serves every host (each emulated pool with an identity),
 * each under its own unguessable path (`/imds/<key>`), and a host's processes find theirs through
 * AZURE_POD_IDENTITY_AUTHORITY_HOST (the variable MSAL, @azure/identity and our node scripts honour). A host asks
 * only for identities assigned to it; anything else is IMDS's "Identity not found". The Function App does not use
 * IMDS: App Service gives it the managed identity endpoint (IDENTITY_ENDPOINT, handlers/appServiceIdentity.ts).
 */
import { randomBytes } from 'node:crypto';
import { stableGuid } from './directory';

export interface LocalManagedIdentity {
  name: string;
  /** The identity's application (client) id: `client_id` on the identity endpoint, AZURE_CLIENT_ID, `appid` in tokens. */
  clientId: string;
  /** Its service principal's object id: `principal_id`/`object_id` on the identity endpoint, `oid` in tokens. */
  principalId: string;
  /** Its ARM resource id: `mi_res_id` on the identity endpoint, `xms_mirid` in tokens. */
  resourceId: string;
}

export const LOCAL_SUBSCRIPTION_ID = stableGuid('local-subscription');
export const LOCAL_RESOURCE_GROUP = 'rg-hpc-local';

export function userAssignedIdentity(name: string): LocalManagedIdentity {
  return {
    name,
    clientId: stableGuid(`mi-client:${name}`),
    principalId: stableGuid(`mi-principal:${name}`),
    resourceId: `/subscriptions/${LOCAL_SUBSCRIPTION_ID}/resourcegroups/${LOCAL_RESOURCE_GROUP}/providers/Microsoft.ManagedIdentity/userAssignedIdentities/${name}`,
  };
}

/** The Function App's identity: AzureWebJobsStorage__clientId and AZURE_CLIENT_ID on the local stack, as in Azure. */
export const APP_IDENTITY = userAssignedIdentity('id-app-local');

/** The pools' identity (POOL_IDENTITY_RESOURCE_ID on a stack with a pool identity), as infra/main.bicep makes it. */
export const POOL_IDENTITY = userAssignedIdentity('id-pool-local');

/** The identities App Service assigns to the local Function App (user-assigned only, as infra/main.bicep does). */
export const FUNCTION_APP_IDENTITIES: readonly LocalManagedIdentity[] = [APP_IDENTITY];

/** Every user-assigned identity of the local subscription. */
export const LOCAL_MANAGED_IDENTITIES: readonly LocalManagedIdentity[] = [APP_IDENTITY, POOL_IDENTITY];

/**
 * The Azure CLI's well-known public client id: the `appid` of a developer's tokens for Azure resources
 * (`az login`, then DefaultAzureCredential's AzureCliCredential), which is what the local operator tooling stands for.
 */
export const AZURE_CLI_CLIENT_ID = '04b07795-8ddb-461a-bbee-02f9e1bf7b46';

/**
 * The person the tests, the demo and scripts act as when they read or write the services directly (upload inputs,
 * inspect Batch): the tenant's `admin` user, signed in through the Azure CLI.
 */
export const OPERATOR_USER = 'admin';

/** The subscription's user-assigned identities and the hosts (emulated pools) carrying them, each with its IMDS key. */
export class ManagedIdentities {
  private readonly identities = new Map<string, LocalManagedIdentity>();
  /** Host key → the resource ids (lower case) assigned to it. */
  private readonly hosts = new Map<string, Set<string>>();

  constructor(list: readonly LocalManagedIdentity[] = LOCAL_MANAGED_IDENTITIES) {
    for (const mi of list) this.add(mi);
  }

  add(mi: LocalManagedIdentity): void {
    this.identities.set(mi.resourceId.toLowerCase(), mi);
  }

  byResourceId(resourceId: string): LocalManagedIdentity | undefined {
    return this.identities.get(resourceId.toLowerCase());
  }

  byName(name: string): LocalManagedIdentity | undefined {
    return [...this.identities.values()].find((mi) => mi.name === name);
  }

  byClientId(clientId: string): LocalManagedIdentity | undefined {
    return [...this.identities.values()].find((mi) => mi.clientId === clientId);
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
  hostIdentities(key: string): LocalManagedIdentity[] | undefined {
    const ids = this.hosts.get(key);
    return ids ? [...ids].map((id) => this.identities.get(id) as LocalManagedIdentity) : undefined;
  }
}
