import type { InputSource, ShardUrlRequest, StagingContainerRef } from '../../shared/contract';
import { storageAccount } from '../../shared/services';
import { registerActivity } from '../runtime/activityCalls';
import { listInputBlobs, type ListedInputBlob } from '../../shared/storage/listing';
import { copyShard, type ShardCopyResult, type ShardToCopy } from '../../shared/storage/shardCopy';
import { readOnlyBlobUrl } from '../../shared/storage/sas';

export async function inputsList(input: { inputs: InputSource[] }): Promise<ListedInputBlob[]> {
  const lists = await Promise.all(input.inputs.map((i) => listInputBlobs(storageAccount(i.account), i.container, i.prefix)));
  return lists.flat();
}

/** Copies one planned shard into its staging account; verified shards from an earlier run are skipped. */
export async function shardCopy(input: { jobId: string; shard: ShardToCopy & { account: string } }): Promise<ShardCopyResult> {
  return copyShard(storageAccount(input.shard.account), storageAccount, input.shard, { hpcjob: input.jobId });
}

/** Read-only SAS URLs for every shard, expiring at `expiresAt`. */
export async function shardUrls(input: ShardUrlRequest): Promise<Record<string, string>> {
  const expires = new Date(input.expiresAt);
  const entries = await Promise.all(
    input.shards.map(async (s) => [s.id, await readOnlyBlobUrl(storageAccount(s.account), s.container, s.blobName, expires)] as const),
  );
  return Object.fromEntries(entries);
}

/** Deletes the job's staging containers (already gone is fine). */
export async function stagedDataDelete(input: { containers: StagingContainerRef[] }): Promise<number> {
  const results = await Promise.all(
    input.containers.map((c) => storageAccount(c.account).service.getContainerClient(c.container).deleteIfExists()),
  );
  return results.filter((r) => r.succeeded).length;
}

registerActivity('inputsList', inputsList);
registerActivity('shardCopy', shardCopy);
registerActivity('shardUrls', shardUrls);
registerActivity('stagedDataDelete', stagedDataDelete);
