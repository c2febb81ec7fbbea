import { createHash } from 'node:crypto';
import { BlobServiceClient } from '@azure/storage-blob';
import { datasetFiles, DatasetShape, expectedResult, ExpectedResult, fileContent } from './dataset';

/**
 * Uploads the generated data set to `container` (created if absent) under `prefix`, which then holds exactly it: other
 * blobs under the prefix are deleted, and files already present from the same shape are kept (re-running the demo
 * does not upload again). `account`: the blob service (any
 * credential), or a connection string.
 */
export async function uploadDataset(
  account: BlobServiceClient | string,
  container: string,
  prefix: string,
  shape: DatasetShape,
  onProgress?: (done: number, total: number) => void,
): Promise<ExpectedResult> {
  const service = typeof account === 'string' ? BlobServiceClient.fromConnectionString(account) : account;
  const cc = service.getContainerClient(container);
  await cc.createIfNotExists();
  const files = datasetFiles(shape);
  // The data set is the prefix's whole content: a file of another shape left there (a seeded or an earlier, larger
  // set) would be read by the job and change its result, and one of the same name and size may differ in content.
  const names = new Set(files.map((f) => `${prefix}${f.name}`));
  for await (const b of cc.listBlobsFlat({ prefix })) if (!names.has(b.name)) await cc.deleteBlob(b.name);
  const shapeId = createHash('sha256').update(JSON.stringify(shape)).digest('hex').slice(0, 32);
  let done = 0;
  for (const [i, f] of files.entries()) {
    const blob = cc.getBlockBlobClient(`${prefix}${f.name}`);
    const size = f.records * 64;
    const existing = await blob.getProperties().catch(() => undefined);
    if (!existing || existing.contentLength !== size || existing.metadata?.datasetshape !== shapeId) {
      await blob.uploadData(fileContent(shape, i, f.records), { blockSize: 8 * 1024 * 1024, concurrency: 4, metadata: { datasetshape: shapeId } });
    }
    onProgress?.(++done, files.length);
  }
  return expectedResult(shape);
}
