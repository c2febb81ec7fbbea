import { BlobServiceClient } from '@azure/storage-blob';
import { datasetFiles, DatasetShape, expectedResult, ExpectedResult, fileContent } from './dataset';

/**
 * Uploads the generated data set to `container` (created if absent) under `prefix`, skipping files already
 * present with the right size, so re-running the demo does not upload again. `account`: the blob service (any
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
  let done = 0;
  for (const [i, f] of files.entries()) {
    const blob = cc.getBlockBlobClient(`${prefix}${f.name}`);
    const size = f.records * 64;
    const existing = await blob.getProperties().catch(() => undefined);
    if (!existing || existing.contentLength !== size) {
      await blob.uploadData(fileContent(shape, i, f.records), { blockSize: 8 * 1024 * 1024, concurrency: 4 });
    }
    onProgress?.(++done, files.length);
  }
  return expectedResult(shape);
}
