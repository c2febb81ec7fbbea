import type { BlobAccount } from './clients';

export interface ListedInputBlob {
  account: string;
  container: string;
  name: string;
  size: number;
  etag?: string;
}

/** Every blob under `prefix`, with size and ETag (the shard planner needs exact sizes). */
export async function listInputBlobs(account: BlobAccount, container: string, prefix: string): Promise<ListedInputBlob[]> {
  const out: ListedInputBlob[] = [];
  const cc = account.service.getContainerClient(container);
  try {
    for await (const item of cc.listBlobsFlat({ prefix: prefix || undefined })) {
      out.push({ account: account.name, container, name: item.name, size: item.properties.contentLength ?? 0, etag: item.properties.etag });
    }
  } catch (err) {
    throw new Error(`listing ${account.name}/${container}/${prefix}: ${(err as Error).message}`, { cause: err });
  }
  return out;
}
