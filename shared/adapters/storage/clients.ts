/**
 * Blob clients for the accounts the app uses, built once per account from configuration: a connection string
 * locally (Azurite) and managed identity (DefaultAzureCredential) in Azure.
 */
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { DefaultAzureCredential } from '@azure/identity';
import { parseConnectionString, type StorageAccountRef } from '../config';

export interface BlobAccount {
  name: string;
  service: BlobServiceClient;
  /** Present for key-based accounts: lets us sign SAS locally without a round trip. */
  sharedKey?: StorageSharedKeyCredential;
}

let credential: DefaultAzureCredential | undefined;
const cache = new Map<string, BlobAccount>();

export function blobAccount(ref: StorageAccountRef): BlobAccount {
  const key = ref.kind === 'connectionString' ? ref.connectionString : `mi:${ref.blobEndpoint}`;
  let account = cache.get(key);
  if (!account) {
    if (ref.kind === 'connectionString') {
      const parts = parseConnectionString(ref.connectionString);
      const accountKey = parts.get('accountkey');
      account = {
        name: ref.accountName,
        service: BlobServiceClient.fromConnectionString(ref.connectionString),
        sharedKey: accountKey ? new StorageSharedKeyCredential(ref.accountName, accountKey) : undefined,
      };
    } else {
      credential ??= new DefaultAzureCredential();
      account = { name: ref.accountName, service: new BlobServiceClient(ref.blobEndpoint, credential) };
    }
    cache.set(key, account);
  }
  return account;
}

/** Finds the configured account by name; names the known ones when it is missing. */
export function accountByName(refs: readonly StorageAccountRef[], name: string): BlobAccount {
  const ref = refs.find((r) => r.accountName === name);
  if (!ref) throw new Error(`storage account "${name}" is not configured (known: ${refs.map((r) => r.accountName).join(', ') || 'none'})`);
  return blobAccount(ref);
}
