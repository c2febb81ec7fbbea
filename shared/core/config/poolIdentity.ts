/**
 * The deployment's pool identity: the user-assigned managed identity Batch pools run with, and where the Batch
 * account sits in Resource Manager. The data plane (2022-10-01) can reference an identity but not assign one, so
 * with these settings pools are created through the management plane (shared/adapters/batch/armPools.ts) and nodes reach
 * the registry (and start-task files) with the identity instead of a password or SAS.
 */

/** The Resource Manager audience (resource https://management.azure.com/). */
export const ARM_TOKEN_SCOPE = 'https://management.azure.com/.default';
export const DEFAULT_ARM_ENDPOINT = 'https://management.azure.com';

export interface PoolIdentityConfig {
  subscriptionId: string;
  resourceGroup: string;
  /** The Batch account's name (BATCH_ACCOUNT_NAME). */
  accountName: string;
  /** ARM id of the user-assigned identity: /subscriptions/…/resourceGroups/…/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>. */
  resourceId: string;
  /** Its client id: what a node names when it asks the instance metadata service for a token. */
  clientId: string;
  /** Resource Manager endpoint (sovereign clouds, or the local emulator). */
  armEndpoint: string;
  armScope: string;
}

export interface PoolIdentityEnv {
  BATCH_SUBSCRIPTION_ID?: string;
  BATCH_RESOURCE_GROUP?: string;
  POOL_IDENTITY_RESOURCE_ID?: string;
  POOL_IDENTITY_CLIENT_ID?: string;
  ARM_ENDPOINT?: string;
}

export const POOL_IDENTITY_SETTINGS = ['BATCH_SUBSCRIPTION_ID', 'BATCH_RESOURCE_GROUP', 'POOL_IDENTITY_RESOURCE_ID', 'POOL_IDENTITY_CLIENT_ID'] as const;

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Resource group names: 1–90 of letters, digits, "._-()", not ending in ".". */
const RESOURCE_GROUP = /^[-\w._()]{0,89}[-\w_()]$/;
const IDENTITY_ID =
  /^\/subscriptions\/[0-9a-f-]{36}\/resourceGroups\/[-\w._()]{1,90}\/providers\/Microsoft\.ManagedIdentity\/userAssignedIdentities\/[A-Za-z0-9][A-Za-z0-9_-]{2,127}$/i;

const isLoopback = (host: string) => host === 'localhost' || /^127\.\d+\.\d+\.\d+$/.test(host) || host === '[::1]';

/**
 * Reads the pool identity settings: none set means no pool identity (data-plane pools, as before); some but not
 * all is a mistake named setting by setting.
 */
export function parsePoolIdentity(env: PoolIdentityEnv, accountName: string, problems: string[]): PoolIdentityConfig | undefined {
  const given = POOL_IDENTITY_SETTINGS.filter((k) => (env[k] ?? '').trim() !== '');
  if (given.length === 0) {
    if (env.ARM_ENDPOINT?.trim()) problems.push('ARM_ENDPOINT is only used with a pool identity (POOL_IDENTITY_RESOURCE_ID and the settings that go with it)');
    return undefined;
  }
  for (const k of POOL_IDENTITY_SETTINGS) {
    if (!given.includes(k)) problems.push(`${k} is required with ${given.join(', ')} (a pool identity needs all of ${POOL_IDENTITY_SETTINGS.join(', ')})`);
  }
  const v = (k: keyof PoolIdentityEnv) => (env[k] ?? '').trim();
  const before = problems.length;
  if (v('BATCH_SUBSCRIPTION_ID') && !GUID.test(v('BATCH_SUBSCRIPTION_ID'))) problems.push('BATCH_SUBSCRIPTION_ID: must be a subscription id (a GUID)');
  if (v('BATCH_RESOURCE_GROUP') && !RESOURCE_GROUP.test(v('BATCH_RESOURCE_GROUP')))
    problems.push('BATCH_RESOURCE_GROUP: must be a resource group name (1-90 letters, digits, "._-()", not ending in ".")');
  if (v('POOL_IDENTITY_RESOURCE_ID') && !IDENTITY_ID.test(v('POOL_IDENTITY_RESOURCE_ID'))) {
    problems.push(
      'POOL_IDENTITY_RESOURCE_ID: must be the ARM id of a user-assigned identity (/subscriptions/<id>/resourceGroups/<rg>/providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>)',
    );
  }
  if (v('POOL_IDENTITY_CLIENT_ID') && !GUID.test(v('POOL_IDENTITY_CLIENT_ID')))
    problems.push("POOL_IDENTITY_CLIENT_ID: must be the identity's client id (a GUID)");
  let armEndpoint = DEFAULT_ARM_ENDPOINT;
  if (v('ARM_ENDPOINT')) {
    try {
      const u = new URL(v('ARM_ENDPOINT'));
      if (u.pathname.replace(/\/+$/, '') !== '' || !(u.protocol === 'https:' || (u.protocol === 'http:' && isLoopback(u.hostname)))) throw new Error('bad');
      armEndpoint = u.origin;
    } catch {
      problems.push('ARM_ENDPOINT: must be an https URL with no path (http only on a loopback host), e.g. https://management.azure.com');
    }
  }
  if (problems.length > before || given.length < POOL_IDENTITY_SETTINGS.length) return undefined;
  return {
    subscriptionId: v('BATCH_SUBSCRIPTION_ID').toLowerCase(),
    resourceGroup: v('BATCH_RESOURCE_GROUP'),
    accountName,
    resourceId: v('POOL_IDENTITY_RESOURCE_ID'),
    clientId: v('POOL_IDENTITY_CLIENT_ID').toLowerCase(),
    armEndpoint,
    armScope: ARM_TOKEN_SCOPE,
  };
}
