import { createHash } from 'node:crypto';
import { startAzurite, AzuriteHandle } from '../../local/azurite';
import { blobAccount, BlobAccount } from '../../shared/adapters/storage/clients';
import { copyShard } from '../../shared/adapters/storage/shardCopy';
import { readOnlyBlobUrl } from '../../shared/adapters/storage/sas';
import { listInputBlobs } from '../../shared/adapters/storage/listing';

let azurite: AzuriteHandle;
let input: BlobAccount;
let stage: BlobAccount;
const bytes = (n: number, seed: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + seed) % 251));

beforeAll(async () => {
  azurite = await startAzurite();
  input = blobAccount({ kind: 'connectionString', accountName: 'devstoreaccount1', connectionString: azurite.connectionString('devstoreaccount1') });
  stage = blobAccount({ kind: 'connectionString', accountName: 'stage2', connectionString: azurite.connectionString('stage2') });
  const cc = input.service.getContainerClient('inputs');
  await cc.create();
  await cc.getBlockBlobClient('run/a.bin').uploadData(bytes(10 * 1024 * 1024 + 123, 1));
  await cc.getBlockBlobClient('run/b.bin').uploadData(bytes(3000, 2));
  await cc.getBlockBlobClient('other/c.bin').uploadData(bytes(10, 3));
});
afterAll(async () => azurite?.stop());

describe('storage adapter against Azurite', () => {
  it('lists only the blobs under the prefix with exact sizes', async () => {
    const listed = await listInputBlobs(input, 'inputs', 'run/');
    expect(listed.map((b) => [b.name, b.size])).toEqual([
      ['run/a.bin', 10 * 1024 * 1024 + 123],
      ['run/b.bin', 3000],
    ]);
    expect(listed.every((b) => b.account === 'devstoreaccount1' && b.etag)).toBe(true);
  });

  it('copies a shard made of ranges of two blobs into another account, verified, and skips it when run again', async () => {
    const [a, b] = await listInputBlobs(input, 'inputs', 'run/');
    const shard = {
      id: 's00001',
      container: 'stg-test',
      blobName: 'ab12/s00001',
      bytes: 9 * 1024 * 1024 + 1000,
      parts: [
        { source: a, offset: 1024 * 1024 + 123, length: 9 * 1024 * 1024, etag: a.etag },
        { source: b, offset: 2000, length: 1000, etag: b.etag },
      ],
    };
    const first = await copyShard(stage, () => input, shard, { job: 't1' });
    expect(first.skipped).toBe(false);
    const expected = Buffer.concat([bytes(10 * 1024 * 1024 + 123, 1).subarray(1024 * 1024 + 123), bytes(3000, 2).subarray(2000)]);
    const staged = await stage.service.getContainerClient('stg-test').getBlobClient('ab12/s00001').downloadToBuffer();
    expect(staged.equals(expected)).toBe(true);
    expect(first.md5).toBe(createHash('md5').update(expected).digest('base64'));

    const again = await copyShard(stage, () => input, shard);
    expect(again).toEqual({ ...first, skipped: true });
  });

  it('refuses to stage torn data when a source changed after listing', async () => {
    const [, b] = await listInputBlobs(input, 'inputs', 'run/');
    await input.service.getContainerClient('inputs').getBlockBlobClient('run/b.bin').uploadData(bytes(3000, 9));
    const shard = { id: 's00002', container: 'stg-test', blobName: 'cd34/s00002', bytes: 100, parts: [{ source: b, offset: 0, length: 100, etag: b.etag }] };
    await expect(copyShard(stage, () => input, shard)).rejects.toThrow(/s00002.*source changed since it was listed/);
  });

  it('mints a read-only SAS URL that reads the blob and cannot write it', async () => {
    const url = await readOnlyBlobUrl(stage, 'stg-test', 'ab12/s00001', new Date(Date.now() + 3_600_000));
    const got = await fetch(url);
    expect(got.status).toBe(200);
    expect((await got.arrayBuffer()).byteLength).toBe(9 * 1024 * 1024 + 1000);
    const put = await fetch(url, { method: 'PUT', headers: { 'x-ms-blob-type': 'BlockBlob' }, body: 'x' });
    expect(put.status).toBe(403);
  });
});
