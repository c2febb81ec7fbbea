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

export async function missingBlobs(account: BlobAccount, input: OutputsMissingRequest): Promise<string[]> {
  const container = account.service.getContainerClient(input.container);
  const missing: string[] = [];
  for (let i = 0; i < input.names.length; i += LOOKUPS_AT_ONCE) {
    const batch = input.names.slice(i, i + LOOKUPS_AT_ONCE);
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
