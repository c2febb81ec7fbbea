import { BlobServiceClient } from '@azure/storage-blob';
import { QueueServiceClient } from '@azure/storage-queue';
import { existsSync } from 'node:fs';
import { DEFAULT_ACCOUNTS, startAzurite, type AzuriteHandle } from '../../local/azurite';

describe('startAzurite', () => {
  let azurite: AzuriteHandle;

  beforeAll(async () => {
    azurite = await startAzurite();
  });

  afterAll(async () => {
    await azurite?.stop();
  });

  it('serves every default account on ephemeral loopback ports', () => {
    expect(azurite.accounts.map((a) => a.name)).toEqual(DEFAULT_ACCOUNTS.map((a) => a.name));
    expect(azurite.blobEndpoint()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/devstoreaccount1$/);
    expect(azurite.blobEndpoint('stage2')).toMatch(/\/stage2$/);
    expect(azurite.ports.blob).not.toBe(10000);
    expect(azurite.connectionString('stage1')).toContain('AccountName=stage1;');
    expect(() => azurite.connectionString('nosuch')).toThrow(/no account "nosuch"/);
  });

  it('keeps blobs of two accounts apart', async () => {
    const dev = BlobServiceClient.fromConnectionString(azurite.connectionString());
    const stage = BlobServiceClient.fromConnectionString(azurite.connectionString('stage3'));
    for (const [client, text] of [
      [dev, 'from dev'],
      [stage, 'from stage3'],
    ] as const) {
      const container = client.getContainerClient('shards');
      await container.createIfNotExists();
      await container.getBlockBlobClient('a.txt').upload(text, text.length);
    }
    const read = async (client: BlobServiceClient): Promise<string> =>
      (await client.getContainerClient('shards').getBlobClient('a.txt').downloadToBuffer()).toString('utf8');
    expect(await read(dev)).toBe('from dev');
    expect(await read(stage)).toBe('from stage3');
    // An account that never wrote the container does not see it.
    const stage4 = BlobServiceClient.fromConnectionString(azurite.connectionString('stage4'));
    expect(await stage4.getContainerClient('shards').exists()).toBe(false);
  });

  it('round-trips a queue message', async () => {
    const queue = QueueServiceClient.fromConnectionString(azurite.connectionString()).getQueueClient('azurite-test');
    await queue.create();
    await queue.sendMessage('hello queue');
    const got = await queue.receiveMessages({ numberOfMessages: 1 });
    expect(got.receivedMessageItems.map((m) => m.messageText)).toEqual(['hello queue']);
  });

  it('removes its temp folder on stop and tolerates a second stop', async () => {
    const other = await startAzurite({ accounts: [{ name: 'solo', key: DEFAULT_ACCOUNTS[1].key }] });
    expect(other.ports.blob).not.toBe(azurite.ports.blob);
    expect(existsSync(other.location)).toBe(true);
    await other.stop();
    await other.stop();
    expect(existsSync(other.location)).toBe(false);
  });

  it('can keep data in memory only', async () => {
    const mem = await startAzurite({ inMemory: true });
    try {
      const container = BlobServiceClient.fromConnectionString(mem.connectionString('stage1')).getContainerClient('memory-only');
      await container.create();
      await container.getBlockBlobClient('x').upload('in memory', 9);
      expect((await container.getBlobClient('x').downloadToBuffer()).toString()).toBe('in memory');
    } finally {
      await mem.stop();
    }
  });
});
