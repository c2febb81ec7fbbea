/**
 * The reads behind "outputs verified before success" (shared/core/planning/outputsCheck.ts decides): what was in the
 * MPI task's directory on the master when it ended, or below its directory on a node whose upload task uploaded from
 * there (Batch), and which of the blobs that makes due are not in the
 * outputs container (Storage). All only read, so running them twice is harmless.
 */
import type { ExpectedUploads } from '../../shared/core/planning/outputsCheck';
import { expectedMasterUploads, expectedNodeUploads } from '../../shared/core/planning/outputsCheck';
import type { MpiTaskUploadsRequest, NodeLogsMissingRequest, NodeTaskUploadsRequest, OutputsMissingRequest } from '../../shared/core/contract';
import { listNodeFiles, listTaskFiles, type BatchContext } from '../../shared/adapters/batch';
import { batchContext, dataAccount } from '../../shared/services';
import type { BlobAccount } from '../../shared/adapters/storage/clients';
import { registerActivity } from './registration';

/** Blob lookups in flight at once. */
const LOOKUPS_AT_ONCE = 16;

export async function expectedUploads(batch: BatchContext, input: MpiTaskUploadsRequest): Promise<ExpectedUploads> {
  const files = await listTaskFiles(batch, input.batchJobId, input.taskId);
  return expectedMasterUploads(input.master, files, input.exitCode);
}

export async function expectedNodeTaskUploads(batch: BatchContext, input: NodeTaskUploadsRequest): Promise<ExpectedUploads> {
  const files = await listNodeFiles(batch, input.poolId, input.nodeId, input.taskRootDirectory);
  return expectedNodeUploads(input.outputFiles, files);
}

/** List Blobs pages (5,000 names each) a check may read per 50 names before it looks the rest up one by one. */
const NAMES_PER_LISTED_PAGE = 50;

/**
 * The names not in the container. Several names are first looked for in a listing of their common prefix (the
 * master's uploads name a blob per rank: one HEAD each made the check grow with the nodes), at most one page per 50
 * names; what that did not settle (a prefix holding more blobs) is looked up one by one. Only reads.
 */
export async function missingBlobs(account: BlobAccount, input: OutputsMissingRequest): Promise<string[]> {
  const container = account.service.getContainerClient(input.container);
  let names = input.names;
  if (names.length > 1) {
    const listed = new Set<string>();
    const prefix = commonDirPrefix(names);
    let complete = false;
    let pages = 0;
    const maxPages = Math.max(1, Math.floor(names.length / NAMES_PER_LISTED_PAGE));
    for await (const page of container.listBlobsFlat({ prefix: prefix || undefined }).byPage({ maxPageSize: 5000 })) {
      for (const b of page.segment.blobItems) listed.add(b.name);
      pages++;
      if (!page.continuationToken) {
        complete = true;
        break;
      }
      if (pages >= maxPages) break;
    }
    if (complete) return names.filter((n) => !listed.has(n));
    names = names.filter((n) => !listed.has(n));
  }
  const missing: string[] = [];
  for (let i = 0; i < names.length; i += LOOKUPS_AT_ONCE) {
    const batch = names.slice(i, i + LOOKUPS_AT_ONCE);
    const found = await Promise.all(batch.map((name) => container.getBlobClient(name).exists()));
    batch.forEach((name, j) => {
      if (!found[j]) missing.push(name);
    });
  }
  return missing;
}

/**
 * The nodes' log blobs that are not in the container, from one listing under `prefix` (List Blobs pages of up to
 * 5,000 names): the same requests for 2 nodes as for 100. Only reads.
 */
export async function missingNodeLogs(account: BlobAccount, input: NodeLogsMissingRequest): Promise<string[]> {
  const listed = new Set<string>();
  const container = account.service.getContainerClient(input.container);
  for await (const item of container.listBlobsFlat({ prefix: input.prefix })) listed.add(item.name);
  return input.nodes.flatMap((node) => input.files.map((f) => `${input.prefix}${node}/${f}`)).filter((name) => !listed.has(name));
}

export function nodeLogsMissing(input: NodeLogsMissingRequest): Promise<string[]> {
  return missingNodeLogs(dataAccount(input.account, input.container), input);
}

/** The longest common prefix of the names that ends at a '/' (empty: the whole container). */
function commonDirPrefix(names: readonly string[]): string {
  let p = names[0];
  for (const n of names) while (!n.startsWith(p)) p = p.slice(0, -1);
  return p.slice(0, p.lastIndexOf('/') + 1);
}

export function mpiTaskUploads(input: MpiTaskUploadsRequest): Promise<ExpectedUploads> {
  return expectedUploads(batchContext(), input);
}

export function nodeTaskUploads(input: NodeTaskUploadsRequest): Promise<ExpectedUploads> {
  return expectedNodeTaskUploads(batchContext(), input);
}

export function outputsMissing(input: OutputsMissingRequest): Promise<string[]> {
  return missingBlobs(dataAccount(input.account, input.container), input);
}

registerActivity('mpiTaskUploads', mpiTaskUploads);
registerActivity('nodeTaskUploads', nodeTaskUploads);
registerActivity('outputsMissing', outputsMissing);
registerActivity('nodeLogsMissing', nodeLogsMissing);
