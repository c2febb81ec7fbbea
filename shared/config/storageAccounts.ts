/**
 * How the app reaches a storage account. In Azure the app has a managed identity and settings name
 * accounts only (no keys); locally the settings hold Azurite connection strings. Both shapes travel
 * through the same settings so the code that uses them never asks where it runs.
 */
export type StorageAccountRef =
  | { kind: 'connectionString'; accountName: string; connectionString: string }
  | { kind: 'managedIdentity'; accountName: string; blobEndpoint: string; queueEndpoint: string; tableEndpoint: string };

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
 * One entry of STAGING_ACCOUNTS (or the value of AzureWebJobsStorage): either a connection string
 * (contains '=') or a bare account name reached with managed identity at `endpointSuffix`.
 * Throws an Error whose message says what is wrong with the entry (the caller adds the variable name).
 */
export function parseStorageAccountRef(entry: string, endpointSuffix: string): StorageAccountRef {
  const value = entry.trim();
  if (value === 'UseDevelopmentStorage=true') {
    return { kind: 'connectionString', accountName: DEV_ACCOUNT, connectionString: DEV_CONNECTION_STRING };
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
    throw new Error(`"${value}" is neither a connection string nor a storage account name (3-24 lowercase letters/digits)`);
  }
  return {
    kind: 'managedIdentity',
    accountName: value,
    blobEndpoint: `https://${value}.blob.${endpointSuffix}`,
    queueEndpoint: `https://${value}.queue.${endpointSuffix}`,
    tableEndpoint: `https://${value}.table.${endpointSuffix}`,
  };
}
