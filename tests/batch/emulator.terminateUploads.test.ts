/**
 * Issue 28 item 5: a job's termination ends its running task AND uploads the task's output files (Batch's
 * taskCompletion: after the process exits, whatever the exit), before the task and then the job complete. Before,
 * the emulator completed a terminated task at once and uploaded nothing, so a cancelled job kept nothing.
 */
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential, generateBlobSASQueryParameters } from '@azure/storage-blob';
import type { BatchServiceClient } from '@azure/batch';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, sdkClient, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';
import { until } from './until';

let azurite: AzuriteHandle;
let emu: BatchEmulatorHandle;
let client: BatchServiceClient;
let service: BlobServiceClient;
let credential: StorageSharedKeyCredential;

beforeAll(async () => {
  azurite = await startAzurite({ inMemory: true });
  const account = azurite.accounts[0];
  credential = new StorageSharedKeyCredential(account.name, account.key);
  service = new BlobServiceClient(azurite.blobEndpoint(account.name), credential);
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20 } });
  client = sdkClient(emu);
  await client.pool.add({
    id: 'tu',
    vmSize: 'standard_d2s_v3',
    virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
    targetDedicatedNodes: 1,
    taskSlotsPerNode: 1,
  });
  await waitForNodes(client, 'tu', 1);
});
afterAll(async () => {
  await emu?.stop();
  await azurite?.stop();
});

test('terminating a job uploads what its running task wrote (taskCompletion and taskFailure, not taskSuccess)', async () => {
  const container = service.getContainerClient('terminated');
  await container.create();
  const sas = generateBlobSASQueryParameters(
    { containerName: 'terminated', permissions: ContainerSASPermissions.parse('racwl'), expiresOn: new Date(Date.now() + 3600_000) },
    credential,
  ).toString();
  const containerUrl = `${container.url}?${sas}`;
  const out = (path: string, uploadCondition: string) => ({
    filePattern: 'partial.txt',
    destination: { container: { containerUrl, path } },
    uploadOptions: { uploadCondition },
  });
  await client.job.add({ id: 'tuj', poolInfo: { poolId: 'tu' } });
  await client.task.add('tuj', {
    id: 'long',
    commandLine: `/bin/sh -c 'echo partial > partial.txt; sleep 300'`,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    outputFiles: [out('always.txt', 'taskcompletion'), out('failure.txt', 'taskfailure'), out('success.txt', 'tasksuccess')] as any,
  });
  await until(
    'the task running with its file written',
    async () => {
      const t = await client.task.get('tuj', 'long');
      if (t.state !== 'running') return undefined;
      const files = await client.file.listFromTask('tuj', 'long', { recursive: true });
      return files.some((f) => f.name?.endsWith('partial.txt')) ? true : undefined;
    },
    30_000,
  );
  await client.job.terminate('tuj');
  const t = await waitForTask(client, 'tuj', 'long');
  expect(t.executionInfo).toMatchObject({ result: 'failure', failureInfo: { code: 'TaskEnded' } });
  const names: string[] = [];
  for await (const b of container.listBlobsFlat()) names.push(b.name);
  expect(names.sort()).toEqual(['always.txt', 'failure.txt']);
  expect((await container.getBlobClient('always.txt').downloadToBuffer()).toString()).toBe('partial\n');
}, 60_000);
