import { BlobSASPermissions, generateBlobSASQueryParameters, SASProtocol } from '@azure/storage-blob';
import type { BlobAccount } from './clients';

/**
 * A read-only SAS URL for one blob, valid until `expiresOn`. Key-based accounts sign locally; managed-identity
 * accounts sign with a user delegation key (no account key ever leaves Azure).
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
  };
  if (account.sharedKey) {
    return `${blob.url}?${generateBlobSASQueryParameters(options, account.sharedKey).toString()}`;
  }
  const key = await account.service.getUserDelegationKey(startsOn, expiresOn);
  return `${blob.url}?${generateBlobSASQueryParameters(options, key, account.name).toString()}`;
}
