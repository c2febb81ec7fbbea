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

/** Blocks are at most this large, so a copy holds only a few blocks in memory whatever the shard size. */
const BLOCK_BYTES = 8 * 1024 * 1024;
/**
 * Blocks read and staged at the same time within one shard. One block at a time left most of the time in
 * round-trip latency (bench/staging.ts: 0.4x a plain parallel SDK upload); a few in flight hide it.
 */
const PARALLEL_BLOCKS = 4;

interface BlockRange {
  part: ShardCopyPart;
  offset: number;
  length: number;
}

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

  // Blocks are cut from the shard's byte stream, not per part: a shard packed from many small files still
  // goes up in full-size blocks (one Put Block per 8 MB instead of one per file).
  const blocks: BlockRange[][] = [[]];
  let filled = 0;
  for (const part of shard.parts) {
    for (let offset = part.offset; offset < part.offset + part.length;) {
      if (filled === BLOCK_BYTES) {
        blocks.push([]);
        filled = 0;
      }
      const length = Math.min(BLOCK_BYTES - filled, part.offset + part.length - offset);
      blocks[blocks.length - 1].push({ part, offset, length });
      filled += length;
      offset += length;
    }
  }
  if (blocks[blocks.length - 1].length === 0) blocks.pop();
  const copied = blocks.flat().reduce((n, b) => n + b.length, 0);
  if (copied !== shard.bytes) throw new Error(`shard ${shard.id}: planned ${shard.bytes} bytes but its parts hold ${copied}`);

  const blockIds = blocks.map((_, i) => Buffer.from(`${shard.id}:${String(i).padStart(8, '0')}`).toString('base64'));
  const whole = createHash('md5');
  await inOrderWindow(
    blocks.length,
    PARALLEL_BLOCKS,
    async (i) => {
      const pieces = await Promise.all(blocks[i].map((range) => readRange(shard.id, sourceAccount, range)));
      const data = pieces.length === 1 ? pieces[0] : Buffer.concat(pieces);
      const length = data.length;
      await blob.stageBlock(blockIds[i], data, length, { transactionalContentMD5: createHash('md5').update(data).digest() });
      return data;
    },
    (data) => whole.update(data),
  );
  const md5 = whole.digest();
  await blob.commitBlockList(blockIds, {
    blobHTTPHeaders: { blobContentMD5: md5 },
    metadata: { ...labels, shardid: shard.id, bytes: String(shard.bytes), md5: md5.toString('base64') },
  });
  return { shardId: shard.id, bytes: shard.bytes, md5: md5.toString('base64'), skipped: false };
}

/**
 * Runs `work(0..count-1)` with at most `parallel` in flight and hands each result to `inOrder` in index order
 * (the shard's MD5 must see the bytes in order). Results wait for their turn, but no index starts more than
 * 2 x `parallel` ahead of the last one handed over, so memory stays bounded when one block is slow.
 */
async function inOrderWindow<T>(count: number, parallel: number, work: (i: number) => Promise<T>, inOrder: (result: T) => void): Promise<void> {
  const done = new Map<number, T>();
  let handed = 0;
  let next = 0;
  let failed = false;
  let waiters: (() => void)[] = [];
  const wakeAll = () => {
    const w = waiters;
    waiters = [];
    for (const resolve of w) resolve();
  };
  const worker = async () => {
    while (!failed) {
      const i = next++;
      if (i >= count) return;
      while (!failed && i >= handed + 2 * parallel) await new Promise<void>((resolve) => waiters.push(resolve));
      if (failed) return;
      try {
        done.set(i, await work(i));
      } catch (err) {
        failed = true;
        wakeAll();
        throw err;
      }
      while (done.has(handed)) {
        inOrder(done.get(handed) as T);
        done.delete(handed);
        handed++;
      }
      wakeAll();
    }
  };
  await Promise.all(Array.from({ length: Math.min(parallel, count) }, worker));
}

async function readRange(shardId: string, sourceAccount: (name: string) => BlobAccount, { part, offset, length }: BlockRange): Promise<Buffer> {
  const source = sourceAccount(part.source.account).service.getContainerClient(part.source.container).getBlobClient(part.source.name);
  let data: Buffer;
  try {
    data = await source.downloadToBuffer(offset, length, { conditions: part.etag ? { ifMatch: part.etag } : undefined });
  } catch (err) {
    const e = err as { statusCode?: number; message?: string };
    const why = e.statusCode === 412 ? 'the source changed since it was listed' : e.message;
    throw new Error(`shard ${shardId}: reading ${part.source.account}/${part.source.container}/${part.source.name} @${offset}+${length}: ${why}`, {
      cause: err,
    });
  }
  if (data.length !== length) throw new Error(`shard ${shardId}: short read of ${part.source.name} at ${offset} (${data.length}/${length} bytes)`);
  return data;
}
