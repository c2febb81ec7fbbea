/** Storage references in Shipyard files: blob URLs and the storage account aliases credentials.yaml resolves. Pure. */
import * as P from '../../../shared/core/spec/patterns';
import { isObj } from './context';

export interface BlobRef {
  account: string;
  container: string;
  blob: string;
}

/** `https://<account>.blob.core.windows.net/<container>/<blob>[?…]` → its parts (the query, a SAS, is dropped). */
export function blobUrlParts(url: string): BlobRef | undefined {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return undefined;
  }
  const host = /^([a-z0-9]{3,24})\.blob\.core\.(?:windows\.net|chinacloudapi\.cn|usgovcloudapi\.net)$/.exec(u.hostname);
  if (u.protocol !== 'https:' || !host) return undefined;
  const segments = u.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  const [container, ...rest] = segments;
  if (!container || !P.BLOB_CONTAINER_RE.test(container) || rest.length === 0) return undefined;
  return { account: host[1], container, blob: rest.join('/') };
}

/**
 * The account a Shipyard `storage_account_settings` alias names: from credentials.yaml when given, else the alias
 * itself when it could be an account name (reported as an assumption by the caller).
 */
export function resolveStorageAlias(alias: unknown, credentials: unknown): { account?: string; assumed: boolean } {
  if (typeof alias !== 'string') return { assumed: false };
  const storage = isObj(credentials) && isObj(credentials.credentials) && isObj(credentials.credentials.storage) ? credentials.credentials.storage : undefined;
  const entry = storage && isObj(storage[alias]) ? storage[alias] : undefined;
  if (entry && typeof entry.account === 'string' && P.STORAGE_ACCOUNT_RE.test(entry.account)) return { account: entry.account, assumed: false };
  return P.STORAGE_ACCOUNT_RE.test(alias) ? { account: alias, assumed: true } : { assumed: false };
}
