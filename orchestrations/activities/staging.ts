import type { InputSource, ShardUrlRequest, StagingContainerRef } from '../../shared/core/contract';
import { dataAccount, stagingAccount } from '../../shared/services';
import { registerActivity } from './registration';
import { listInputBlobs, type ListedInputBlob } from '../../shared/adapters/storage/listing';
import { copyShard, type ShardCopyResult, type ShardToCopy } from '../../shared/adapters/storage/shardCopy';
import { readOnlyBlobUrl } from '../../shared/adapters/storage/sas';
import { refuseIfEnded } from './jobGuard';

export async function inputsList(input: { inputs: InputSource[] }): Promise<ListedInputBlob[]> {
  const lists = await Promise.all(input.inputs.map((i) => listInputBlobs(dataAccount(i.account, i.container), i.container, i.prefix)));
  return lists.flat();
}

/**
 * Copies one planned shard into its staging account; verified shards from an earlier run are skipped. A late repeat
 * (Durable delivers an activity at least once: a host that died after the copy may run it again after the job's
 * cleanup deleted the staged data) copies nothing for a job that is cleaning up or ended (jobGuard.ts).
 */
export async function shardCopy(input: { jobId: string; shard: ShardToCopy & { account: string } }): Promise<ShardCopyResult> {
  await refuseIfEnded(input.jobId, `staged shard ${input.shard.blobName}`);
  // Every source is checked against the data-access policy before a byte moves.
  const sources = new Map(input.shard.parts.map((p) => [p.source.account, dataAccount(p.source.account, p.source.container)]));
  return copyShard(stagingAccount(input.shard.account), (name) => sources.get(name) ?? dataAccount(name, ''), input.shard, { hpcjob: input.jobId });
}

/** Read-only SAS URLs for every shard, expiring at `expiresAt`. */
export async function shardUrls(input: ShardUrlRequest): Promise<Record<string, string>> {
  const expires = new Date(input.expiresAt);
  const entries = await Promise.all(
    input.shards.map(async (s) => [s.id, await readOnlyBlobUrl(stagingAccount(s.account), s.container, s.blobName, expires)] as const),
  );
  return Object.fromEntries(entries);
}

/** Read-only SAS URLs of the job's SIF files in blob storage; every blob is checked against the data-access policy. */
export async function imageBlobUrls(input: { blobs: { account: string; container: string; blob: string }[]; expiresAt: string }): Promise<string[]> {
  const expires = new Date(input.expiresAt);
  return Promise.all(input.blobs.map((b) => readOnlyBlobUrl(dataAccount(b.account, b.container), b.container, b.blob, expires)));
}

/** Deletes the job's staging containers (already gone is fine). */
export async function stagedDataDelete(input: { containers: StagingContainerRef[] }): Promise<number> {
  const results = await Promise.all(input.containers.map((c) => stagingAccount(c.account).service.getContainerClient(c.container).deleteIfExists()));
  return results.filter((r) => r.succeeded).length;
}

registerActivity('inputsList', inputsList);
registerActivity('shardCopy', shardCopy);
registerActivity('shardUrls', shardUrls);
registerActivity('imageBlobUrls', imageBlobUrls);
registerActivity('stagedDataDelete', stagedDataDelete);
