/**
 * The managed identities of the local "subscription" and who holds them: the Function App's user-assigned
 * identity (infra/main.bicep's `id-app-…`, the only identity the app has there: no system-assigned one), and the
 * developer tooling a person would use against the services (the Azure CLI's public client signing a user in).
 * Ids are stable GUIDs derived from names, like the rest of the local tenant (directory.ts), so tokens, user
 * delegation keys and the SAS URLs signed with them stay valid across restarts.
 */
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

/** The identities App Service assigns to the local Function App (user-assigned only, as infra/main.bicep does). */
export const FUNCTION_APP_IDENTITIES: readonly LocalManagedIdentity[] = [APP_IDENTITY];

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
