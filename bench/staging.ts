/**
 * Shard staging throughput into the 4 local staging accounts (Azurite), measured side by side in one run:
 *   - copyShard:  the pipeline's path (shared/adapters/storage/shardCopy.ts) over the shard plan of shared/core/planning/shards.ts,
 *                 8 shards at a time as the StagingData stage runs them, with per-block and whole-shard MD5;
 *   - raw SDK:    the same shards' bytes read with downloadToBuffer and written with @azure/storage-blob's
 *                 parallel uploadData (8 MB blocks, 4 in flight per blob), 8 shards at a time, no checksums.
 * Target: copyShard ≥ 0.9 × raw. Rounds alternate (raw, copy, raw, copy, …) so machine load hits both alike.
 * Run: node --import tsx bench/staging.ts [--size-mb 400] [--rounds 2]
 */
import { BlobServiceClient, StorageSharedKeyCredential } from '@azure/storage-blob';
import { startAzurite, STAGING_ACCOUNTS, DATA_ACCOUNT } from '../local/azurite';
import { shapeForSize } from '../examples/data/dataset';
import { uploadDataset } from '../examples/data/upload';
import { planShards, type ListedBlob, type Shard } from '../shared/core/planning/shards';
import { copyShard } from '../shared/adapters/storage/shardCopy';
import type { BlobAccount } from '../shared/adapters/storage/clients';
import { numberArg } from './lib/args';
import { printGoal } from './lib/goal';

const SIZE_MB = numberArg('size-mb', 400);
const ROUNDS = numberArg('rounds', 2);
const CONCURRENCY = 8; // the pipeline's copyConcurrency default

async function inBatches<T>(items: T[], size: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < items.length; i += size) await Promise.all(items.slice(i, i + size).map(fn));
}

async function main(): Promise<void> {
  const azurite = await startAzurite();
  try {
    const accounts = new Map<string, BlobAccount>();
    for (const a of [DATA_ACCOUNT, ...STAGING_ACCOUNTS]) {
      accounts.set(a.name, {
        name: a.name,
        service: BlobServiceClient.fromConnectionString(azurite.connectionString(a.name)),
        sharedKey: new StorageSharedKeyCredential(a.name, a.key),
      });
    }
    const account = (name: string): BlobAccount => {
      const a = accounts.get(name);
      if (!a) throw new Error(`no account ${name}`);
      return a;
    };

    console.log(`uploading a ${SIZE_MB} MB source data set to the data account …`);
    await uploadDataset(azurite.connectionString(DATA_ACCOUNT.name), 'inputs', 'bench/', shapeForSize(SIZE_MB));
    const listing: ListedBlob[] = [];
    for await (const b of account(DATA_ACCOUNT.name).service.getContainerClient('inputs').listBlobsFlat({ prefix: 'bench/' })) {
      listing.push({ account: DATA_ACCOUNT.name, container: 'inputs', name: b.name, size: b.properties.contentLength ?? 0, etag: b.properties.etag });
    }

    const planFor = (container: string) =>
      planShards(listing, { stagingAccounts: STAGING_ACCOUNTS.map((a) => a.name), nodes: 4, recordAlignment: 64, container, namePrefix: '' });
    const total = planFor('x').totalBytes;
    console.log(
      `${listing.length} source blobs, ${(total / 1e6).toFixed(0)} MB, ${planFor('x').shards.length} shards over ${STAGING_ACCOUNTS.length} accounts, ${CONCURRENCY} at a time\n`,
    );

    const copyRound = async (container: string) => {
      const plan = planFor(container);
      await inBatches(plan.shards, CONCURRENCY, (s: Shard) =>
        copyShard(account(s.account), account, { id: s.id, container: s.container, blobName: s.blobName, bytes: s.bytes, parts: s.parts }),
      );
    };
    const rawRound = async (container: string) => {
      const plan = planFor(container);
      await inBatches(plan.shards, CONCURRENCY, async (s: Shard) => {
        const buffers: Buffer[] = [];
        for (const p of s.parts) {
          buffers.push(
            await account(p.source.account).service.getContainerClient(p.source.container).getBlobClient(p.source.name).downloadToBuffer(p.offset, p.length),
          );
        }
        const cc = account(s.account).service.getContainerClient(s.container);
        await cc.createIfNotExists();
        await cc.getBlockBlobClient(s.blobName).uploadData(Buffer.concat(buffers), { blockSize: 8 * 1024 * 1024, concurrency: 4 });
      });
    };
    const dropContainers = async (container: string) => {
      for (const a of STAGING_ACCOUNTS) await account(a.name).service.getContainerClient(container).deleteIfExists();
    };

    const secs = { raw: [] as number[], copy: [] as number[] };
    for (let r = 0; r < ROUNDS; r++) {
      for (const kind of ['raw', 'copy'] as const) {
        const container = `stg-bench-${kind}-${r}`;
        const t0 = performance.now();
        await (kind === 'raw' ? rawRound(container) : copyRound(container));
        const s = (performance.now() - t0) / 1000;
        secs[kind].push(s);
        console.log(`round ${r + 1} ${kind.padEnd(4)} ${s.toFixed(2)} s  ${(total / 1e6 / s).toFixed(1)} MB/s`);
        await dropContainers(container);
      }
    }
    const best = (xs: number[]) => Math.min(...xs);
    const rawMBs = total / 1e6 / best(secs.raw);
    const copyMBs = total / 1e6 / best(secs.copy);
    console.log(
      `\nbest of ${ROUNDS}: raw SDK ${rawMBs.toFixed(1)} MB/s, copyShard ${copyMBs.toFixed(1)} MB/s, ratio copyShard/raw = ${(copyMBs / rawMBs).toFixed(2)}`,
    );
    printGoal({ name: 'staging-copy-vs-raw-sdk', measured: copyMBs / rawMBs, target: 0.9, compare: '>=' });
  } finally {
    await azurite.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
