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
import { dataAccessPolicy, dataAccessRefusal } from './intake/dataAccess';
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

/** Refused access to storage a job named (the data-access policy said no). */
export class DataAccessDenied extends Error {
  constructor(readonly account: string, readonly container: string, reason: string) {
    super(`storage ${account}/${container} refused: ${reason}`);
    this.name = 'DataAccessDenied';
  }
}

function configured(refs: readonly StorageAccountRef[], name: string, what: string): BlobAccount {
  const ref = refs.find((a) => a.accountName === name);
  if (!ref) throw new Error(`storage account "${name}" is not a configured ${what} account`);
  return blobAccount(ref);
}

/** A staging account of this deployment (shards are copied there and read from there). */
export function stagingAccount(name: string): BlobAccount {
  return configured(appConfig().stagingAccounts, name, 'staging');
}

/**
 * An account holding a job's own data, for one container of it: only what the deployment's data-access policy allows
 * (shared/intake/dataAccess.ts), checked here again because an orchestration's input is not only written by intake.
 */
export function dataAccount(name: string, container: string): BlobAccount {
  const refusal = dataAccessRefusal(dataAccessPolicy(appConfig()), name, container);
  if (refusal) throw new DataAccessDenied(name, container, refusal);
  return configured(appConfig().dataAccess.accounts, name, 'data');
}

/** The staging accounts, as configured (the sweep walks them). */
export function stagingAccounts(): BlobAccount[] {
  return appConfig().stagingAccounts.map(blobAccount);
}
