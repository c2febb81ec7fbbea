/**
 * How the app reaches a storage account. With a managed identity (Azure, and the local stack by default) settings
 * name accounts, or give their service URIs when the endpoints are not `<account>.<service>.<suffix>` (Azurite's
 * path-style endpoints); with shared keys (the local stack's opt-in) they hold connection strings. Both shapes
 * travel through the same settings so the code that uses them never asks where it runs.
 */
export type StorageAccountRef =
  | { kind: 'connectionString'; accountName: string; connectionString: string }
  | {
      kind: 'managedIdentity';
      accountName: string;
      blobEndpoint: string;
      /** Known when the account is named, or its queue service URI is given (the host storage). */
      queueEndpoint?: string;
      /** Known when the account is named, or its table service URI is given (the host storage). */
      tableEndpoint?: string;
    };

/** The host storage: a connection string, or an identity-based connection that knows all three of its services. */
export type HostStorageRef =
  | Extract<StorageAccountRef, { kind: 'connectionString' }>
  | (Extract<StorageAccountRef, { kind: 'managedIdentity' }> & { queueEndpoint: string; tableEndpoint: string });

/** Azurite's well-known development account (`UseDevelopmentStorage=true`). Public, documented, not a secret. */
const DEV_ACCOUNT = 'devstoreaccount1';
const DEV_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';
const DEV_CONNECTION_STRING =
  `DefaultEndpointsProtocol=http;AccountName=${DEV_ACCOUNT};AccountKey=${DEV_KEY};` +
  `BlobEndpoint=http://127.0.0.1:10000/${DEV_ACCOUNT};QueueEndpoint=http://127.0.0.1:10001/${DEV_ACCOUNT};` +
  `TableEndpoint=http://127.0.0.1:10002/${DEV_ACCOUNT};`;

/** Storage account names: 3-24 lowercase letters and digits (Azure's rule). */
const ACCOUNT_NAME = /^[a-z0-9]{3,24}$/;

/** Splits `k1=v1;k2=v2` (values may contain '=', as base64 keys do). Keys are matched case-insensitively. */
export function parseConnectionString(connectionString: string): Map<string, string> {
  const parts = new Map<string, string>();
  for (const segment of connectionString.split(';')) {
    const trimmed = segment.trim();
    if (!trimmed) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) throw new Error(`segment "${trimmed}" is not key=value`);
    parts.set(trimmed.slice(0, eq).toLowerCase(), trimmed.slice(eq + 1));
  }
  return parts;
}

/**
 * One entry of STAGING_ACCOUNTS or DATA_ACCOUNTS (or the value of AzureWebJobsStorage): a connection string
 * (contains '='), a blob service URI reached with managed identity (`https://...`, as Functions'
 * `<connection>__blobServiceUri`), or a bare account name reached with managed identity at `endpointSuffix`.
 * Throws an Error whose message says what is wrong with the entry (the caller adds the variable name).
 */
export function parseStorageAccountRef(entry: string, endpointSuffix: string): StorageAccountRef {
  const value = entry.trim();
  if (value === 'UseDevelopmentStorage=true') {
    return { kind: 'connectionString', accountName: DEV_ACCOUNT, connectionString: DEV_CONNECTION_STRING };
  }
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    return { kind: 'managedIdentity', accountName: accountNameOfServiceUri(value, 'blob'), blobEndpoint: serviceUri(value) };
  }
  if (value.includes('=')) {
    const parts = parseConnectionString(value);
    const accountName = parts.get('accountname');
    if (!accountName) throw new Error('connection string has no AccountName');
    const hasEndpoint = parts.has('blobendpoint') || parts.has('endpointsuffix') || parts.has('defaultendpointsprotocol');
    if (!hasEndpoint) throw new Error(`connection string for "${accountName}" has no BlobEndpoint or DefaultEndpointsProtocol`);
    if (!parts.get('accountkey') && !parts.get('sharedaccesssignature')) {
      throw new Error(`connection string for "${accountName}" has neither AccountKey nor SharedAccessSignature`);
    }
    return { kind: 'connectionString', accountName, connectionString: value };
  }
  if (!ACCOUNT_NAME.test(value)) {
    throw new Error(`"${value}" is neither a connection string, a blob service URI nor a storage account name (3-24 lowercase letters/digits)`);
  }
  return {
    kind: 'managedIdentity',
    accountName: value,
    blobEndpoint: `https://${value}.blob.${endpointSuffix}`,
    queueEndpoint: `https://${value}.queue.${endpointSuffix}`,
    tableEndpoint: `https://${value}.table.${endpointSuffix}`,
  };
}

/**
 * A storage service URI as given (trailing slashes dropped). Only https: a bearer token (the only credential an
 * identity-based connection has) is never sent over plain http, and Azure Storage refuses one that is
 * ("Authentication scheme Bearer is not allowed with HTTP").
 */
export function serviceUri(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new Error(`"${value}" is not a URL`);
  }
  if (url.protocol !== 'https:') throw new Error(`"${value}" must be an https URL (a bearer token is never sent over http)`);
  if (url.search || url.hash || url.username || url.password) throw new Error(`"${value}" must be a bare service URI (no query, fragment or credentials)`);
  return value.trim().replace(/\/+$/, '');
}

/**
 * The account a service URI addresses: the first label of `<account>.<service>.<suffix>` (Azure's endpoints), or
 * the first path segment when the host is an IP address or localhost (the path-style endpoints of Azurite and of
 * Azure Stack's emulator), as the storage SDKs read it.
 */
export function accountNameOfServiceUri(value: string, service: 'blob' | 'queue' | 'table'): string {
  const url = new URL(serviceUri(value));
  const host = url.hostname;
  const pathStyle = host === 'localhost' || /^\d{1,3}(\.\d{1,3}){3}$/.test(host) || host.startsWith('[');
  const name = pathStyle ? url.pathname.split('/').filter(Boolean)[0] : host.split('.')[0];
  const segments = url.pathname.split('/').filter(Boolean);
  if (!pathStyle && !host.includes(`.${service}.`)) throw new Error(`"${value}" is not a ${service} service URI (https://<account>.${service}.<suffix>)`);
  if (pathStyle ? segments.length !== 1 : segments.length !== 0) {
    throw new Error(
      `"${value}" must name the service, not a resource in it (${pathStyle ? 'https://<ip>:<port>/<account>' : `https://<account>.${service}.<suffix>`})`,
    );
  }
  if (!name || !ACCOUNT_NAME.test(name)) throw new Error(`"${value}" does not name a storage account (3-24 lowercase letters/digits)`);
  return name;
}
