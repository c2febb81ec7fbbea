/**
 * Resource files reach emulated nodes from real Azurite blob storage through SAS URLs:
 * storageContainerUrl (listed with blobPrefix) on a start task, httpUrl on a task.
 */
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential, generateBlobSASQueryParameters } from '@azure/storage-blob';
import type { BatchServiceClient } from '@azure/batch';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

describe('resource files from Azurite SAS URLs', () => {
  let azurite: AzuriteHandle;
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let containerSasUrl: string;
  let blobSasUrl: string;

  beforeAll(async () => {
    azurite = await startAzurite({ inMemory: true });
    const account = azurite.accounts[0];
    const credential = new StorageSharedKeyCredential(account.name, account.key);
    const service = new BlobServiceClient(azurite.blobEndpoint(account.name), credential);
    const container = service.getContainerClient('inputs');
    await container.create();
    await container.getBlockBlobClient('shards/a.txt').upload('alpha', 5);
    await container.getBlockBlobClient('shards/b.txt').upload('beta', 4);
    await container.getBlockBlobClient('other/c.txt').upload('gamma', 5);
    await container.getBlockBlobClient('tool.sh').upload('#!/bin/sh\necho tool ran in $PWD\n', 31);
    const expiresOn = new Date(Date.now() + 3600_000);
    const sas = generateBlobSASQueryParameters({ containerName: 'inputs', permissions: ContainerSASPermissions.parse('rl'), expiresOn }, credential).toString();
    containerSasUrl = `${container.url}?${sas}`;
    blobSasUrl = `${container.getBlobClient('tool.sh').url}?${sas}`;
    emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20 } });
    client = sdkClient(emu);
  });

  afterAll(async () => {
    await emu?.stop();
    await azurite?.stop();
  });

  it('downloads a container prefix for the start task and a single blob for a task', async () => {
    await client.pool.add({
      id: 'rf',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 1,
      startTask: {
        commandLine: `/bin/sh -c 'cat data/shards/a.txt data/shards/b.txt; ls data/shards; test ! -e data/other'`,
        resourceFiles: [{ storageContainerUrl: containerSasUrl, blobPrefix: 'shards/', filePath: 'data' }],
        waitForSuccess: true,
      },
    });
    const [node] = await waitForNodes(client, 'rf', 1);
    expect(node.startTaskInfo).toMatchObject({ exitCode: 0, result: 'success' });
    const out = await client.file.getFromComputeNode('rf', node.id as string, 'startup/stdout.txt');
    const chunks: Buffer[] = [];
    for await (const c of out.readableStreamBody as NodeJS.ReadableStream) chunks.push(Buffer.from(c as Buffer));
    expect(Buffer.concat(chunks).toString()).toBe('alphabetaa.txt\nb.txt\n');

    await client.job.add({ id: 'rfj', poolInfo: { poolId: 'rf' } });
    await client.task.add('rfj', { id: 'tool', commandLine: './bin/tool.sh', resourceFiles: [{ httpUrl: blobSasUrl, filePath: 'bin/tool.sh', fileMode: '0755' }] });
    const t = await waitForTask(client, 'rfj', 'tool');
    expect(t.executionInfo).toMatchObject({ exitCode: 0, result: 'success' });
    expect(await readTaskFile(client, 'rfj', 'tool', 'stdout.txt')).toMatch(/^tool ran in \S+\/workitems\/rfj\/job-1\/tool\/wd\n$/);

    // A SAS with a wrong signature fails the task with a download error (and no secret in the message).
    await client.task.add('rfj', { id: 'denied', commandLine: '/bin/true', resourceFiles: [{ httpUrl: blobSasUrl.replace(/sig=[^&]+/, 'sig=AAAA'), filePath: 'x' }] });
    const denied = await waitForTask(client, 'rfj', 'denied');
    expect(denied.executionInfo).toMatchObject({ result: 'failure', failureInfo: { code: 'BlobDownloadMiscError' } });
    expect(denied.executionInfo?.failureInfo?.message).not.toContain('sig=AAAA');
  });
});
