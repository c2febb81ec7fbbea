import { BlobSASPermissions, ContainerSASPermissions, generateBlobSASQueryParameters, SASProtocol } from '@azure/storage-blob';
import { DataLakeSASPermissions, generateDataLakeSASQueryParameters } from '@azure/storage-file-datalake';
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
 * SAS URLs for several blobs of one container, each granting `permissions` (e.g. "rcw") on exactly its blob, valid
 * until `expiresOn`: one user delegation key for all of them (keyless accounts), signed locally per blob. What
 * POST /api/uploads hands a client: its write access is never wider than the files it named, on any account.
 */
export async function blobSasUrls(
  account: BlobAccount,
  container: string,
  blobNames: readonly string[],
  permissions: string,
  expiresOn: Date,
): Promise<string[]> {
  const containerClient = account.service.getContainerClient(container);
  const startsOn = new Date(Date.now() - 5 * 60_000);
  const key = account.sharedKey ? undefined : await account.service.getUserDelegationKey(startsOn, expiresOn);
  return blobNames.map((blobName) => {
    const blob = containerClient.getBlobClient(blobName);
    const options = {
      containerName: container,
      blobName,
      permissions: BlobSASPermissions.parse(permissions),
      startsOn,
      expiresOn,
      protocol: blob.url.startsWith('https:') ? SASProtocol.Https : SASProtocol.HttpsAndHttp,
      version: SAS_VERSION,
    };
    const query = key ? generateBlobSASQueryParameters(options, key, account.name) : generateBlobSASQueryParameters(options, account.sharedKey!);
    return `${blob.url}?${query.toString()}`;
  });
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
    version: SAS_VERSION,
  };
  if (account.sharedKey) return `${client.url}?${generateBlobSASQueryParameters(options, account.sharedKey).toString()}`;
  const key = await account.service.getUserDelegationKey(startsOn, expiresOn);
  return `${client.url}?${generateBlobSASQueryParameters(options, key, account.name).toString()}`;
}

/**
 * The directory a directory SAS is signed on, and its depth (`sdd`): the prefix's path segments. Storage takes the
 * first `sdd` segments of a request's blob name as the directory it checks the signature against, so a blob outside
 * the prefix, or a sibling whose name merely starts with it (`jobs/a` vs `jobs/ab`), fails the signature.
 */
export function sasDirectory(prefix: string): { directory: string; depth: number } {
  const segments = prefix.split('/').filter((s) => s !== '');
  if (segments.length === 0) throw new Error('a directory SAS needs a non-empty prefix: an empty one would be the whole container');
  if (segments.some((s) => s === '.' || s === '..')) throw new Error(`the prefix "${prefix}" has a "." or ".." segment`);
  return { directory: segments.join('/'), depth: segments.length };
}

/**
 * A directory SAS (`sr=d`, `sdd` = the prefix's depth) on `prefix` of a container of a hierarchical-namespace account,
 * with `permissions` (e.g. "cw"), valid until `expiresOn`, returned on the CONTAINER's URL: Batch output files append
 * `/<path>` to the container URL and keep its query, and the paths the pipeline gives them already start with the
 * prefix. Azure accepts `sr=d` only on HNS accounts (docs/security.md, "Outputs"). Managed-identity accounts sign
 * with a user delegation key, as readOnlyBlobUrl does; key-based ones sign with the account key.
 */
export async function directorySasUrl(account: BlobAccount, container: string, prefix: string, permissions: string, expiresOn: Date): Promise<string> {
  const client = account.service.getContainerClient(container);
  const { directory, depth } = sasDirectory(prefix);
  const startsOn = new Date(Date.now() - 5 * 60_000);
  const options = {
    fileSystemName: container,
    pathName: directory,
    isDirectory: true,
    directoryDepth: depth,
    permissions: DataLakeSASPermissions.parse(permissions),
    startsOn,
    expiresOn,
    protocol: client.url.startsWith('https:') ? SASProtocol.Https : SASProtocol.HttpsAndHttp,
    version: SAS_VERSION,
  };
  if (account.sharedKey) {
    return `${client.url}?${generateDataLakeSASQueryParameters(options, account.sharedKey).toString()}`;
  }
  const key = await account.service.getUserDelegationKey(startsOn, expiresOn);
  return `${client.url}?${generateDataLakeSASQueryParameters(options, key, account.name).toString()}`;
}

/** A URL without its query string: what may be stored or shown (a SAS never is). */
export function withoutQuery(url: string): string {
  const i = url.indexOf('?');
  return i < 0 ? url : url.slice(0, i);
}
