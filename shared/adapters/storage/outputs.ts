/**
 * A job's outputs in blob storage: listing what landed under its prefix (for the job result and the outputs API).
 * URLs are plain blob URLs: a SAS is minted per caller and never stored.
 */
import type { BlobAccount } from './clients';

export interface OutputBlob {
  /** The blob's name relative to the job's prefix (e.g. "workdir/result.dat", "logs/stdout.txt"). */
  name: string;
  size: number;
  /** The blob's URL without any SAS. */
  url: string;
  lastModified?: string;
}

export interface OutputsPage {
  files: OutputBlob[];
  continuationToken?: string;
}

/** One page (at most `max` blobs) of the outputs under `<prefix>/`, in name order. */
export async function listOutputs(account: BlobAccount, container: string, prefix: string, max: number, continuationToken?: string): Promise<OutputsPage> {
  const cc = account.service.getContainerClient(container);
  const base = `${prefix}/`;
  const iter = cc.listBlobsFlat({ prefix: base }).byPage({ maxPageSize: max, continuationToken });
  try {
    const page = (await iter.next()).value as
      { segment?: { blobItems?: { name: string; properties: { contentLength?: number; lastModified?: Date } }[] }; continuationToken?: string } | undefined;
    const items = page?.segment?.blobItems ?? [];
    return {
      files: items.map((b) => ({
        name: b.name.slice(base.length),
        size: b.properties.contentLength ?? 0,
        url: cc.getBlobClient(b.name).url,
        lastModified: b.properties.lastModified?.toISOString(),
      })),
      continuationToken: page?.continuationToken || undefined,
    };
  } catch (err) {
    if ((err as { statusCode?: number }).statusCode === 404) return { files: [] };
    throw new Error(`listing outputs ${account.name}/${container}/${base}: ${(err as Error).message}`, { cause: err });
  }
}

/** Every output (up to `limit` listed), with the totals over all of them. */
export async function summarizeOutputs(
  account: BlobAccount,
  container: string,
  prefix: string,
  limit: number,
): Promise<{ files: OutputBlob[]; count: number; bytes: number; truncated: boolean }> {
  const files: OutputBlob[] = [];
  let count = 0;
  let bytes = 0;
  let token: string | undefined;
  do {
    const page = await listOutputs(account, container, prefix, 1000, token);
    for (const f of page.files) {
      count += 1;
      bytes += f.size;
      if (files.length < limit) files.push(f);
    }
    token = page.continuationToken;
  } while (token);
  return { files, count, bytes, truncated: count > files.length };
}
