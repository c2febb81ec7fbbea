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
import { AdmissionStore } from './scheduling/admissionStore';
import { DependentsStore } from './scheduling/dependentsStore';
import type { AdmissionLimits } from './scheduling/admission';
import type { SchedulingPolicy } from './scheduling/intake';
import type { AdmissionDeps } from './scheduling/admissionService';

let config: AppConfig | undefined;
let batch: BatchContext | undefined;
let store: JobStore | undefined;
let tablesReady: Promise<void> | undefined;

export function appConfig(): AppConfig {
  return (config ??= loadConfig());
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

let admission: { store: AdmissionStore; dependents: DependentsStore; ready: Promise<unknown> } | undefined;

/** The Admission table and the dependents index, in host storage beside the Jobs table (docs/scheduling.md). */
export async function schedulingStores(): Promise<{ admission: AdmissionStore; dependents: DependentsStore }> {
  if (!admission) {
    const host = appConfig().hostStorage;
    const stores = host.kind === 'connectionString'
      ? { store: AdmissionStore.fromConnectionString(host.connectionString), dependents: DependentsStore.fromConnectionString(host.connectionString) }
      : { store: AdmissionStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential()), dependents: DependentsStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential()) };
    admission = { ...stores, ready: Promise.all([stores.store.ensureTable(), stores.dependents.ensureTable()]) };
  }
  await admission.ready;
  return { admission: admission.store, dependents: admission.dependents };
}

/** What intake needs for the scheduling section: the deployment's queues and the dependents index. */
export async function schedulingPolicy(): Promise<SchedulingPolicy> {
  return { queues: appConfig().admission.queues.map((q) => q.name), dependents: (await schedulingStores()).dependents };
}

/** Admission over the deployment's Admission table and limits. */
export async function admissionDeps(): Promise<AdmissionDeps> {
  return { store: (await schedulingStores()).admission, limits: admissionLimits() };
}

/** The limits admission keeps, from configuration. */
export function admissionLimits(): AdmissionLimits {
  const a = appConfig().admission;
  return {
    queues: a.queues,
    coreQuota: a.coreQuota,
    maxPools: a.maxPools,
    maxNodes: a.maxNodes,
    ownerMaxNodes: a.ownerMaxNodes,
    ownerMaxCores: a.ownerMaxCores,
    backfillLimit: a.backfillLimit,
  };
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
