import { BlobSASPermissions, ContainerSASPermissions, generateBlobSASQueryParameters, SASProtocol } from '@azure/storage-blob';
import type { BlobAccount } from './clients';

/**
 * The service version the app's SAS tokens are signed for (`sv`). Pinned rather than the SDK's newest, so an SDK
 * upgrade never changes the string a node's URL was signed over; 2025-11-05 is supported by Azure Storage and is
 * the newest version Azurite 3.35 validates user delegation SAS for (the SDK's default, 2026-04-06, adds fields
 * Azurite does not know and it refuses the signature).
 */
export const SAS_VERSION = '2025-11-05';

/**
 * A read-only SAS URL for one blob, valid until `expiresOn`. Managed-identity accounts sign with a user delegation
 * key (Get User Delegation Key, with the app's token: no account key is ever read); key-based accounts (the local
 * stack's shared-key opt-in) sign locally.
 */
export async function readOnlyBlobUrl(account: BlobAccount, container: string, blobName: string, expiresOn: Date): Promise<string> {
  const blob = account.service.getContainerClient(container).getBlobClient(blobName);
  const startsOn = new Date(Date.now() - 5 * 60_000); // tolerate clock skew between us and the nodes
  const options = {
    containerName: container,
    blobName,
    permissions: BlobSASPermissions.parse('r'),
    startsOn,
    expiresOn,
    protocol: blob.url.startsWith('https:') ? SASProtocol.Https : SASProtocol.HttpsAndHttp,
    version: SAS_VERSION,
  };
  if (account.sharedKey) {
    return `${blob.url}?${generateBlobSASQueryParameters(options, account.sharedKey).toString()}`;
  }
  const key = await account.service.getUserDelegationKey(startsOn, expiresOn);
  return `${blob.url}?${generateBlobSASQueryParameters(options, key, account.name).toString()}`;
}

/**
 * A SAS URL for a whole container with `permissions` (e.g. "rl" to read and list, "cw" to create and write blobs),
 * valid until `expiresOn`. Container-level: Batch's storageContainerUrl, output file destinations and blobfuse take
 * one; the data-access policy is checked per container, so it grants nothing the policy would not.
 */
export async function containerSasUrl(account: BlobAccount, container: string, permissions: string, expiresOn: Date): Promise<string> {
  const client = account.service.getContainerClient(container);
  const startsOn = new Date(Date.now() - 5 * 60_000);
  const options = {
    containerName: container,
    permissions: ContainerSASPermissions.parse(permissions),
    startsOn,
    expiresOn,
    protocol: client.url.startsWith('https:') ? SASProtocol.Https : SASProtocol.HttpsAndHttp,
  };
  if (account.sharedKey) return `${client.url}?${generateBlobSASQueryParameters(options, account.sharedKey).toString()}`;
  const key = await account.service.getUserDelegationKey(startsOn, expiresOn);
  return `${client.url}?${generateBlobSASQueryParameters(options, key, account.name).toString()}`;
}

/** A URL without its query string: what may be stored or shown (a SAS never is). */
export function withoutQuery(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? url : url.slice(0, i);
}
