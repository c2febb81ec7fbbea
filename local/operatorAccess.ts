/**
 * The services as the operator reaches them directly (the demo uploading its inputs, tests and scripts inspecting
 * Batch and storage): with the local tenant's operator user's tokens on a keyless stack, as a person would with
 * `az login` in Azure, or with the services' keys when the stack was started with shared keys (the opt-in).
 */
import { BatchServiceClient, BatchSharedKeyCredentials } from '@azure/batch';
import type { TokenCredential } from '@azure/core-auth';
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { QueueClient, StorageSharedKeyCredential as QueueSharedKeyCredential } from '@azure/storage-queue';
import { AzureNamedKeyCredential, TableClient } from '@azure/data-tables';
import { BearerTokenCredentials } from '../shared/adapters/batch/client';
import { BATCH_TOKEN_SCOPE } from '../shared/adapters/config';
import { DEV_STORE_ACCOUNT, type StorageAccount } from './azurite/accounts';

export interface OperatorAccess {
  /** `identity`: the operator's tokens (keyless stack); `sharedKey`: the services' keys (shared-key stack). */
  readonly mode: 'identity' | 'sharedKey';
  /** The credential behind `identity` mode (for clients not listed here). */
  readonly credential?: TokenCredential;
  batch(options?: { noRetryPolicy?: boolean }): BatchServiceClient;
  /** A storage account's blob service (default: the host storage, devstoreaccount1). */
  blobService(account?: string): BlobServiceClient;
  queue(name: string, account?: string): QueueClient;
  table(name: string, account?: string): TableClient;
}

/** Where the services are: what an in-process stack knows, or a supervised stack's supervisor.json and ports.json. */
export interface ServiceEndpoints {
  batch: { url: string; accountName: string; accountKey: string };
  storage: {
    accounts: readonly StorageAccount[];
    blobEndpoint(account?: string): string;
    queueEndpoint(account?: string): string;
    tableEndpoint(account?: string): string;
  };
}

/** The operator's access: tokens from `credential`, or the keys when it is undefined (a shared-key stack). */
export function operatorAccess(endpoints: ServiceEndpoints, credential: TokenCredential | undefined): OperatorAccess {
  const { batch, storage } = endpoints;
  const account = (name: string = DEV_STORE_ACCOUNT.name): StorageAccount => {
    const found = storage.accounts.find((a) => a.name === name);
    if (!found) throw new Error(`no storage account ${name} (known: ${storage.accounts.map((a) => a.name).join(', ')})`);
    return found;
  };
  const insecure = (url: string) => ({ allowInsecureConnection: url.startsWith('http:') });
  return {
    mode: credential ? 'identity' : 'sharedKey',
    credential,
    batch: (options = {}) =>
      new BatchServiceClient(
        credential ? new BearerTokenCredentials(credential, BATCH_TOKEN_SCOPE) : new BatchSharedKeyCredentials(batch.accountName, batch.accountKey),
        batch.url,
        { noRetryPolicy: options.noRetryPolicy },
      ),
    blobService(name) {
      const a = account(name);
      return new BlobServiceClient(storage.blobEndpoint(a.name), credential ?? new StorageSharedKeyCredential(a.name, a.key));
    },
    queue(queueName, name) {
      const a = account(name);
      return new QueueClient(`${storage.queueEndpoint(a.name)}/${queueName}`, credential ?? new QueueSharedKeyCredential(a.name, a.key));
    },
    table(tableName, name) {
      const a = account(name);
      const url = storage.tableEndpoint(a.name);
      return credential
        ? new TableClient(url, tableName, credential)
        : new TableClient(url, tableName, new AzureNamedKeyCredential(a.name, a.key), insecure(url));
    },
  };
}
