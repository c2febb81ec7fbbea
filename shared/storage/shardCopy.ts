import { createHash } from 'node:crypto';
import type { BlobAccount } from './clients';

export interface ShardCopyPart {
  source: { account: string; container: string; name: string };
  offset: number;
  length: number;
  etag?: string;
}

export interface ShardToCopy {
  id: string;
  container: string;
  blobName: string;
  bytes: number;
  parts: ShardCopyPart[];
}

export interface ShardCopyResult {
  shardId: string;
  bytes: number;
  /** Base64 MD5 of the whole shard, also stored as the blob's Content-MD5. */
  md5: string;
  /** True when a verified copy was already there (a re-run after a crash copies nothing twice). */
  skipped: boolean;
}

/** Blocks are at most this large, so a copy holds only a few MB in memory whatever the shard size. */
const BLOCK_BYTES = 8 * 1024 * 1024;

/**
 * Copies one shard (byte ranges of one or more source blobs, in order) into its staging blob. Every block is
 * uploaded with a transactional MD5 that the service verifies, the shard's MD5 is stored with it, and the source
 * ETag is checked on every read so a file changing mid-copy fails the copy instead of staging torn data.
 *
 * The bytes stream through this function. Azure's Put Block From URL would keep them server-side, but then the
 * shard's MD5 could not be computed without reading it back, and Azurite does not implement it (501); streaming
 * gives one verified path for both.
 */
export async function copyShard(
  target: BlobAccount,
  sourceAccount: (name: string) => BlobAccount,
  shard: ShardToCopy,
  labels: Record<string, string> = {},
): Promise<ShardCopyResult> {
  const container = target.service.getContainerClient(shard.container);
  await container.createIfNotExists();
  const blob = container.getBlockBlobClient(shard.blobName);

  const existing = await blob.getProperties().catch((err: { statusCode?: number }) => {
    if (err.statusCode === 404) return undefined;
    throw err;
  });
  if (existing && existing.metadata?.shardid === shard.id && existing.contentLength === shard.bytes && existing.metadata?.md5) {
    return { shardId: shard.id, bytes: shard.bytes, md5: existing.metadata.md5, skipped: true };
  }

  const whole = createHash('md5');
  const blockIds: string[] = [];
  let copied = 0;
  for (const part of shard.parts) {
    const source = sourceAccount(part.source.account).service.getContainerClient(part.source.container).getBlobClient(part.source.name);
    for (let offset = part.offset; offset < part.offset + part.length; offset += BLOCK_BYTES) {
      const length = Math.min(BLOCK_BYTES, part.offset + part.length - offset);
      let data: Buffer;
      try {
        data = await source.downloadToBuffer(offset, length, { conditions: part.etag ? { ifMatch: part.etag } : undefined });
      } catch (err) {
        const e = err as { statusCode?: number; message?: string };
        const why = e.statusCode === 412 ? 'the source changed since it was listed' : e.message;
        throw new Error(`shard ${shard.id}: reading ${part.source.account}/${part.source.container}/${part.source.name} @${offset}+${length}: ${why}`, { cause: err });
      }
      if (data.length !== length) throw new Error(`shard ${shard.id}: short read of ${part.source.name} at ${offset} (${data.length}/${length} bytes)`);
      whole.update(data);
      const blockId = Buffer.from(`${shard.id}:${String(blockIds.length).padStart(8, '0')}`).toString('base64');
      await blob.stageBlock(blockId, data, length, { transactionalContentMD5: createHash('md5').update(data).digest() });
      blockIds.push(blockId);
      copied += length;
    }
  }
  if (copied !== shard.bytes) throw new Error(`shard ${shard.id}: planned ${shard.bytes} bytes but its parts hold ${copied}`);
  const md5 = whole.digest();
  await blob.commitBlockList(blockIds, {
    blobHTTPHeaders: { blobContentMD5: md5 },
    metadata: { ...labels, shardid: shard.id, bytes: String(shard.bytes), md5: md5.toString('base64') },
  });
  return { shardId: shard.id, bytes: shard.bytes, md5: md5.toString('base64'), skipped: false };
}
