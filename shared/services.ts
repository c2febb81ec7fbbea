/**
 * The composition root: the adapters the app uses (configuration, the Batch client, the job store, storage
 * accounts), built once per process from app settings and shared by the HTTP/queue/timer functions and the
 * activities. Nothing here knows whether it runs in Azure or on the local stack: only the settings differ.
 */
import { DefaultAzureCredential } from '@azure/identity';
import { loadConfig, type AppConfig, type StorageAccountRef } from './config';
import { createBatchContext, type BatchContext } from './batch';
import { JobStore } from './state';
import { blobAccount, type BlobAccount } from './storage/clients';
import { createTokenValidator, type TokenValidator } from './auth';

let config: AppConfig | undefined;
let batch: BatchContext | undefined;
let store: JobStore | undefined;
let tablesReady: Promise<void> | undefined;

export function appConfig(): AppConfig {
  return (config ??= loadConfig());
}

let validator: TokenValidator | undefined;

/** The bearer token validator (keys cached per process), or undefined when AUTH_ISSUER is not set. */
export function tokenValidator(): TokenValidator | undefined {
  const bearer = appConfig().auth.bearer;
  return bearer && (validator ??= createTokenValidator(bearer));
}

export function batchContext(): BatchContext {
  return (batch ??= createBatchContext(appConfig()));
}

export async function jobStore(): Promise<JobStore> {
  const cfg = appConfig();
  if (!store) {
    const host = cfg.hostStorage;
    store = host.kind === 'connectionString'
      ? JobStore.fromConnectionString(host.connectionString)
      : JobStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential());
    tablesReady = store.ensureTables();
  }
  await tablesReady;
  return store;
}

/** Every storage account the app knows: staging accounts and host storage. */
function knownAccounts(): StorageAccountRef[] {
  const cfg = appConfig();
  return [...cfg.stagingAccounts, cfg.hostStorage];
}

/**
 * A storage account by name. Configured accounts use their configured access; any other account (an
 * input the job names) is reached with the app's managed identity at the standard endpoint.
 */
export function storageAccount(name: string): BlobAccount {
  const ref = knownAccounts().find((a) => a.accountName === name);
  if (ref) return blobAccount(ref);
  return blobAccount({
    kind: 'managedIdentity',
    accountName: name,
    blobEndpoint: `https://${name}.blob.core.windows.net`,
    queueEndpoint: `https://${name}.queue.core.windows.net`,
    tableEndpoint: `https://${name}.table.core.windows.net`,
  });
}

/** The staging accounts, as configured (the sweep walks them). */
export function stagingAccounts(): BlobAccount[] {
  return appConfig().stagingAccounts.map(blobAccount);
}
