/**
 * Contract (issue 29, category outputFiles): task outputFiles are uploaded to real Azurite blob storage through SAS URLs when the task ends, with Batch's
 * semantics: file patterns (single file, `*`, `**`, `../std*.txt`, $VAR), blob names under `path`, upload
 * conditions, the primary node only for multi-instance tasks, fileuploadout.txt/fileuploaderr.txt, and failures
 * reported as the task's failureInfo (FileUploadContainerNotFound, FileUploadAccessDenied, FileUploadMiscError).
 */
import {
  BlobServiceClient,
  ContainerSASPermissions,
  StorageSharedKeyCredential,
  generateBlobSASQueryParameters,
  type ContainerClient,
} from '@azure/storage-blob';
import type { BatchServiceClient, BatchServiceModels } from '@azure/batch';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, waitFor, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

type OutputFile = BatchServiceModels.OutputFile;

describe('task output files uploaded to Azurite', () => {
  let azurite: AzuriteHandle;
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let service: BlobServiceClient;
  let credential: StorageSharedKeyCredential;
  let seq = 0;

  /** A fresh container and a SAS URL that may write to it. */
  async function outputContainer(): Promise<{ container: ContainerClient; url: string }> {
    const name = `out${++seq}`;
    const container = service.getContainerClient(name);
    await container.create();
    return { container, url: sasUrl(name) };
  }
  function sasUrl(containerName: string): string {
    const sas = generateBlobSASQueryParameters(
      { containerName, permissions: ContainerSASPermissions.parse('racwl'), expiresOn: new Date(Date.now() + 3600_000) },
      credential,
    ).toString();
    return `${service.getContainerClient(containerName).url}?${sas}`;
  }
  async function blobs(container: ContainerClient): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for await (const b of container.listBlobsFlat()) out[b.name] = (await container.getBlobClient(b.name).downloadToBuffer()).toString();
    return out;
  }
  const out = (
    filePattern: string,
    containerUrl: string,
    path: string | undefined,
    uploadCondition: 'tasksuccess' | 'taskfailure' | 'taskcompletion' = 'taskcompletion',
  ): OutputFile => ({
    filePattern,
    destination: { container: { containerUrl, ...(path ? { path } : {}) } },
    uploadOptions: { uploadCondition },
  });

  beforeAll(async () => {
    azurite = await startAzurite({ inMemory: true });
    const account = azurite.accounts[0];
    credential = new StorageSharedKeyCredential(account.name, account.key);
    service = new BlobServiceClient(azurite.blobEndpoint(account.name), credential);
    emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20 } });
    client = sdkClient(emu);
    await client.pool.add({
      id: 'of',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 2,
      taskSlotsPerNode: 1,
      enableInterNodeCommunication: true,
    });
    await waitForNodes(client, 'of', 2);
    await client.job.add({ id: 'ofj', poolInfo: { poolId: 'of' } });
  });

  afterAll(async () => {
    await emu?.stop();
    await azurite?.stop();
  });

  it('uploads single files, globs, stdout/stderr and $VAR patterns under their paths, as the upload conditions say', async () => {
    const { container, url } = await outputContainer();
    const script =
      'echo result > result.txt; mkdir -p sub/deep; echo a > sub/a.log; echo b > sub/deep/b.log; echo hidden > .hidden.log; echo to-stdout; echo to-stderr >&2';
    await client.task.add('ofj', {
      id: 'writer',
      commandLine: `/bin/sh -c '${script}'`,
      environmentSettings: [{ name: 'OUT_NAME', value: 'result.txt' }],
      outputFiles: [
        out('result.txt', url, 'single/renamed.txt', 'tasksuccess'),
        out('**/*.log', url, 'logs'),
        out('../std*.txt', url, 'std'),
        out('${OUT_NAME}', url, 'expanded/r.txt'),
        out('result.txt', url, 'onfailure/result.txt', 'taskfailure'),
        out('nothing-*.bin', url, 'none'),
      ],
    });
    const t = await waitForTask(client, 'ofj', 'writer');
    expect(t.executionInfo).toMatchObject({ exitCode: 0, result: 'success' });
    expect(await blobs(container)).toEqual({
      'single/renamed.txt': 'result\n',
      'logs/sub/a.log': 'a\n',
      'logs/sub/deep/b.log': 'b\n',
      'std/stdout.txt': 'to-stdout\n',
      'std/stderr.txt': 'to-stderr\n',
      'expanded/r.txt': 'result\n',
    });
    expect(await readTaskFile(client, 'ofj', 'writer', 'fileuploadout.txt')).toMatch(/uploaded wd\/result.txt to .*\/single\/renamed.txt/);
    expect(await readTaskFile(client, 'ofj', 'writer', 'fileuploaderr.txt')).toBe('');
  });

  it('uploads with a pool identity for an identityReference (no SAS in the URL); a pool without that identity fails the upload', async () => {
    const { container } = await outputContainer();
    const identityReference = {
      resourceId: '/subscriptions/0b1f6471-1bf0-4dda-aec3-111122223333/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-pool',
    };
    await client.task.add('ofj', {
      id: 'byidentity',
      commandLine: "/bin/sh -c 'echo x > r.txt'",
      outputFiles: [
        {
          filePattern: 'r.txt',
          destination: { container: { containerUrl: container.url, identityReference } },
          uploadOptions: { uploadCondition: 'taskcompletion' },
        },
      ],
    });
    const t = await waitForTask(client, 'ofj', 'byidentity');
    // Pool "of" came from the data plane: it has no identity, so no instance metadata service to ask for a token.
    expect(t.executionInfo?.failureInfo).toMatchObject({ category: 'usererror', code: 'FileUploadMiscError' });
    expect(JSON.stringify(t.executionInfo?.failureInfo?.details)).toContain('the pool has no managed identity');
    expect(await blobs(container)).toEqual({});
  });

  it('uploads taskFailure files when the task fails, and a file with no path under its own name', async () => {
    const { container, url } = await outputContainer();
    await client.task.add('ofj', {
      id: 'failing',
      commandLine: `/bin/sh -c 'echo partial > partial.txt; exit 3'`,
      outputFiles: [out('partial.txt', url, undefined, 'taskfailure'), out('partial.txt', url, 'ok/partial.txt', 'tasksuccess')],
    });
    const t = await waitForTask(client, 'ofj', 'failing');
    expect(t.executionInfo).toMatchObject({ exitCode: 3, result: 'failure', failureInfo: { code: 'FailureExitCode' } });
    expect(await blobs(container)).toEqual({ 'partial.txt': 'partial\n' });
  });

  it.each([
    ['a container that does not exist', () => sasUrl('nosuchcontainer'), 'FileUploadContainerNotFound'],
    ['a SAS with a wrong signature', () => sasUrl('out1').replace(/sig=[^&]+/, 'sig=AAAA'), 'FileUploadAccessDenied'],
    ['an unreachable URL', () => 'http://127.0.0.1:9/out?sv=2021-08-06&sig=secret', 'FileUploadMiscError'],
  ])(
    'fails the task with failureInfo usererror for %s, logs it in fileuploaderr.txt without the SAS',
    async (_what, url, code) => {
      const id = `upload-${code}`;
      await client.task.add('ofj', {
        id,
        commandLine: `/bin/sh -c 'echo x > x.txt'`,
        outputFiles: [out('x.txt', url(), 'x.txt')],
        constraints: { maxTaskRetryCount: 2 },
      });
      const t = await waitForTask(client, 'ofj', id, 'completed', 60_000);
      expect(t.executionInfo).toMatchObject({ exitCode: 0, result: 'failure', retryCount: 0, failureInfo: { category: 'usererror', code } });
      const log = await readTaskFile(client, 'ofj', id, 'fileuploaderr.txt');
      expect(log).toContain(code);
      expect(log).not.toMatch(/sig=(?!REDACTED)/);
      expect(JSON.stringify(t.executionInfo)).not.toMatch(/sig=(?!REDACTED)/);
    },
    90_000,
  );

  it('uploads a multi-instance task’s files from the primary’s node only', async () => {
    const { container, url } = await outputContainer();
    await client.task.add('ofj', {
      id: 'mi',
      commandLine: '/bin/true',
      multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: `/bin/sh -c 'echo $AZ_BATCH_NODE_ID > coord-$AZ_BATCH_NODE_ID.txt'` },
      outputFiles: [out('coord-*.txt', url, 'mi')],
    });
    const t = await waitForTask(client, 'ofj', 'mi');
    expect(t.executionInfo?.result).toBe('success');
    const primary = t.nodeInfo?.nodeId as string;
    expect(await blobs(container)).toEqual({ [`mi/coord-${primary}.txt`]: `${primary}\n` });
  });

  it("takes the task's fileUploadError exit options for a failed upload", async () => {
    await client.job.add({ id: 'ofexit', poolInfo: { poolId: 'of' }, onTaskFailure: 'performexitoptionsjobaction' });
    await client.task.add('ofexit', {
      id: 'tolerated',
      commandLine: `/bin/sh -c 'echo x > x.txt'`,
      outputFiles: [out('x.txt', sasUrl('nosuchcontainer'), 'x.txt')],
      exitConditions: { fileUploadError: { jobAction: 'none' }, default: { jobAction: 'terminate' } },
    });
    expect((await waitForTask(client, 'ofexit', 'tolerated')).executionInfo?.failureInfo?.code).toBe('FileUploadContainerNotFound');
    expect((await client.job.get('ofexit')).state).toBe('active');
    await client.task.add('ofexit', {
      id: 'fatal',
      commandLine: `/bin/sh -c 'echo x > x.txt'`,
      outputFiles: [out('x.txt', sasUrl('nosuchcontainer'), 'x.txt')],
    });
    const done = await waitFor('job terminated', async () => {
      const j = await client.job.get('ofexit');
      return j.state === 'completed' ? j : undefined;
    });
    expect(done.executionInfo?.terminateReason).toBe('TaskFailed');
  });

  it('never uploads a file outside the node, even through a link the task made', async () => {
    const { container, url } = await outputContainer();
    await client.task.add('ofj', {
      id: 'escape',
      commandLine: `/bin/sh -c 'ln -s /etc/hostname leak.txt'`,
      outputFiles: [out('leak.txt', url, 'leak.txt'), out('/etc/host*', url, 'etc')],
    });
    const t = await waitForTask(client, 'ofj', 'escape');
    expect(t.executionInfo?.result).toBe('success');
    expect(await blobs(container)).toEqual({});
    expect(await readTaskFile(client, 'ofj', 'escape', 'fileuploaderr.txt')).toMatch(/outside the node's file system/);
  });
});
