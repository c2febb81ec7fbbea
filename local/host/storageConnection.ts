/**
 * Storage connections as the Functions host resolves them (its own storage, AzureWebJobsStorage, and the
 * `connection` of queue bindings): the setting `<name>` holding a connection string, else an identity-based
 * connection described by settings under `<name>__`
 * (https://learn.microsoft.com/azure/azure-functions/functions-reference#configure-an-identity-based-connection):
 *   __blobServiceUri, __queueServiceUri, __tableServiceUri   the services' URIs (any endpoint, e.g. Azurite's)
 *   __serviceUri                                           the one service a binding uses (queue bindings)
 *   __accountName                                          AzureWebJobsStorage only: https://<name>.<service>.core.windows.net
 *   __credential = managedidentity, __clientId, __managedIdentityResourceId
 *                                                          the hosting platform's managed identity (a user-assigned
 *                                                          one when an id is given); without __credential, the
 *                                                          DefaultAzureCredential chain (the developer's identity
 *                                                          when the host runs on a workstation)
 * The name is also tried with the `AzureWebJobs` prefix, like the host does.
 */
import { DefaultAzureCredential, ManagedIdentityCredential } from '@azure/identity';
import type { TokenCredential } from '@azure/core-auth';
import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import { TableClient } from '@azure/data-tables';

export type StorageService = 'blob' | 'queue' | 'table';

export type StorageConnection =
  | { kind: 'connectionString'; name: string; connectionString: string }
  | { kind: 'identity'; name: string; serviceUris: Partial<Record<StorageService, string>>; credential: TokenCredential };

/** One credential per identity description and process: each holds its own token cache. */
const credentials = new Map<string, TokenCredential>();

function credentialFor(prefix: string, env: NodeJS.ProcessEnv): TokenCredential {
  const kind = env[`${prefix}__credential`]?.trim().toLowerCase();
  const clientId = env[`${prefix}__clientId`]?.trim() || undefined;
  const resourceId = env[`${prefix}__managedIdentityResourceId`]?.trim() || undefined;
  if (kind !== undefined && kind !== '' && kind !== 'managedidentity') {
    throw new Error(`${prefix}__credential must be "managedidentity" (got "${kind}")`);
  }
  const key = JSON.stringify([kind ?? '', clientId ?? '', resourceId ?? '', env.IDENTITY_ENDPOINT ?? '']);
  let credential = credentials.get(key);
  if (!credential) {
    if (kind === 'managedidentity') {
      credential = clientId
        ? new ManagedIdentityCredential({ clientId })
        : resourceId
          ? new ManagedIdentityCredential({ resourceId })
          : new ManagedIdentityCredential();
    } else {
      credential = new DefaultAzureCredential(clientId ? { managedIdentityClientId: clientId } : {});
    }
    credentials.set(key, credential);
  }
  return credential;
}

function uriSetting(env: NodeJS.ProcessEnv, setting: string): string | undefined {
  const value = env[setting]?.trim();
  if (!value) return undefined;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`${setting} is not a URL: "${value}"`);
  }
  if (url.protocol !== 'https:') throw new Error(`${setting} must be an https URI (a bearer token is never sent over http): "${value}"`);
  return value.replace(/\/+$/, '');
}

/**
 * The connection a binding (or the host) uses: `connection` names the setting; none means AzureWebJobsStorage.
 * `service` is the one the caller needs (its URI must be resolvable). Throws naming what is missing.
 */
export function resolveStorageConnection(connection: unknown, service: StorageService, what: string, env: NodeJS.ProcessEnv = process.env): StorageConnection {
  const name = typeof connection === 'string' && connection !== '' ? connection : 'AzureWebJobsStorage';
  for (const candidate of [name, `AzureWebJobs${name}`]) {
    const value = env[candidate];
    if (value) return { kind: 'connectionString', name: candidate, connectionString: value };
  }
  for (const prefix of [name, `AzureWebJobs${name}`]) {
    const serviceUris: Partial<Record<StorageService, string>> = {};
    for (const s of ['blob', 'queue', 'table'] as const) {
      const uri = uriSetting(env, `${prefix}__${s}ServiceUri`);
      if (uri) serviceUris[s] = uri;
    }
    const single = uriSetting(env, `${prefix}__serviceUri`);
    if (single && !serviceUris[service]) serviceUris[service] = single;
    const accountName = prefix === 'AzureWebJobsStorage' ? env[`${prefix}__accountName`]?.trim() : undefined;
    if (accountName) {
      for (const s of ['blob', 'queue', 'table'] as const) serviceUris[s] ??= `https://${accountName}.${s}.core.windows.net`;
    }
    if (Object.keys(serviceUris).length === 0) continue;
    if (!serviceUris[service]) {
      throw new Error(`${what}: the identity-based connection "${prefix}" has no ${service} service URI (set ${prefix}__${service}ServiceUri)`);
    }
    return { kind: 'identity', name: prefix, serviceUris, credential: credentialFor(prefix, env) };
  }
  throw new Error(`${what}: the storage connection setting "${name}" is not set in the environment (neither a connection string nor ${name}__*ServiceUri)`);
}

/** Plain http is only ever Azurite on loopback (with its shared keys); real accounts and keyless Azurite use https. */
const insecure = (connectionString: string): boolean =>
  /DefaultEndpointsProtocol=http;|(Blob|Queue|Table)Endpoint=http:|UseDevelopmentStorage=true/i.test(connectionString);

function uriOf(conn: Extract<StorageConnection, { kind: 'identity' }>, service: StorageService): string {
  const uri = conn.serviceUris[service];
  if (!uri) throw new Error(`the identity-based connection "${conn.name}" has no ${service} service URI (set ${conn.name}__${service}ServiceUri)`);
  return uri;
}

export function blobServiceClient(conn: StorageConnection): BlobServiceClient {
  return conn.kind === 'connectionString'
    ? BlobServiceClient.fromConnectionString(conn.connectionString)
    : new BlobServiceClient(uriOf(conn, 'blob'), conn.credential);
}

export function queueServiceClient(conn: StorageConnection): QueueServiceClient {
  return conn.kind === 'connectionString'
    ? QueueServiceClient.fromConnectionString(conn.connectionString)
    : new QueueServiceClient(uriOf(conn, 'queue'), conn.credential);
}

export function tableClient(conn: StorageConnection, table: string): TableClient {
  return conn.kind === 'connectionString'
    ? TableClient.fromConnectionString(conn.connectionString, table, { allowInsecureConnection: insecure(conn.connectionString) })
    : new TableClient(uriOf(conn, 'table'), table, conn.credential);
}

/** A key that tells connections apart (for caches of clients), without their secrets. */
export function connectionKey(conn: StorageConnection): string {
  return conn.kind === 'connectionString' ? `cs:${conn.connectionString}` : `id:${conn.name}:${JSON.stringify(conn.serviceUris)}`;
}
