/**
 * The lookups behind "fail before paying" (shared/core/planning/sourcesCheck.ts plans them): one request per check (a
 * one-item listing for a prefix, a HEAD for a blob), plus one container lookup only when something is missing, to say
 * why. Read-only, so a repeat is harmless. Runs with the app's identity, the one that later lists, copies and signs.
 */
import { deniedMessage, missMessage, type SourceCheck, type SourceMiss } from '../../core/planning/sourcesCheck';
import type { BlobAccount } from './clients';

/** Lookups in flight at once (a spec names at most a few dozen sources). */
const LOOKUPS_AT_ONCE = 16;

/** The data account for one container; throws when the data-access policy refuses it (shared/services dataAccount). */
export type DataAccountFor = (account: string, container: string) => BlobAccount;

export async function missingSources(accountFor: DataAccountFor, checks: readonly SourceCheck[]): Promise<SourceMiss[]> {
  const misses: SourceMiss[] = [];
  for (let i = 0; i < checks.length; i += LOOKUPS_AT_ONCE) {
    const batch = checks.slice(i, i + LOOKUPS_AT_ONCE);
    const found = await Promise.all(batch.map((c) => lookUp(accountFor(c.account, c.container), c)));
    batch.forEach((c, j) => {
      if (found[j] !== undefined) misses.push({ path: c.path, message: found[j] });
    });
  }
  return misses;
}

/** The miss's message, or undefined when the source is there. */
async function lookUp(account: BlobAccount, c: SourceCheck): Promise<string | undefined> {
  const container = account.service.getContainerClient(c.container);
  try {
    if (c.kind === 'blob') {
      if (await container.getBlobClient(c.name).exists()) return undefined;
    } else {
      const page = await container
        .listBlobsFlat({ prefix: c.name || undefined })
        .byPage({ maxPageSize: 1 })
        .next();
      if (!page.done && page.value.segment.blobItems.length > 0) return undefined;
    }
  } catch (err) {
    if (isContainerNotFound(err)) return missMessage(c, true);
    // Refused to the app: the job could not read it either, so it is the caller's to fix, not a transient failure.
    if (statusOf(err) === 403) return deniedMessage(c, errorCodeOf(err));
    throw new Error(`looking up ${c.account}/${c.container}/${c.name}: ${(err as Error).message}`, { cause: err });
  }
  return missMessage(c, !(await container.exists()));
}

type StorageError = { statusCode?: number; code?: string; details?: { errorCode?: string } };

function statusOf(err: unknown): number | undefined {
  return (err as StorageError).statusCode;
}

function errorCodeOf(err: unknown): string | undefined {
  const e = err as StorageError;
  return e.details?.errorCode ?? e.code;
}

function isContainerNotFound(err: unknown): boolean {
  return statusOf(err) === 404 && errorCodeOf(err) === 'ContainerNotFound';
}
