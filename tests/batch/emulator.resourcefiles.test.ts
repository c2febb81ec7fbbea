/**
 * Resource files reach emulated nodes from real Azurite blob storage through SAS URLs:
 * storageContainerUrl (listed with blobPrefix) on a start task, httpUrl on a task; and from an https server whose
 * certificate the nodes trust (the emulator's trustedCertificates, as a CA added to a node's store).
 */
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential, generateBlobSASQueryParameters } from '@azure/storage-blob';
import type { BatchServiceClient } from '@azure/batch';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

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
    await client.task.add('rfj', {
      id: 'tool',
      commandLine: './bin/tool.sh',
      resourceFiles: [{ httpUrl: blobSasUrl, filePath: 'bin/tool.sh', fileMode: '0755' }],
    });
    const t = await waitForTask(client, 'rfj', 'tool');
    expect(t.executionInfo).toMatchObject({ exitCode: 0, result: 'success' });
    expect(await readTaskFile(client, 'rfj', 'tool', 'stdout.txt')).toMatch(/^tool ran in \S+\/workitems\/rfj\/job-1\/tool\/wd\n$/);

    // A SAS with a wrong signature fails the task with a download error (and no secret in the message).
    await client.task.add('rfj', {
      id: 'denied',
      commandLine: '/bin/true',
      resourceFiles: [{ httpUrl: blobSasUrl.replace(/sig=[^&]+/, 'sig=AAAA'), filePath: 'x' }],
    });
    const denied = await waitForTask(client, 'rfj', 'denied');
    expect(denied.executionInfo).toMatchObject({ result: 'failure', failureInfo: { code: 'BlobDownloadMiscError' } });
    expect(denied.executionInfo?.failureInfo?.message).not.toContain('sig=AAAA');
  });
});

describe("https resource files and the nodes' trusted certificates", () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let dir: string;
  const servers: Server[] = [];

  /** An https server on loopback with its own self-signed certificate; returns its base URL and the certificate. */
  async function httpsServer(name: string): Promise<{ url: string; cert: string }> {
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
        '-keyout',
        path.join(dir, `${name}.key`),
        '-out',
        path.join(dir, `${name}.pem`),
      ],
      { stdio: 'ignore' },
    );
    const cert = readFileSync(path.join(dir, `${name}.pem`), 'utf8');
    const server = createServer({ key: readFileSync(path.join(dir, `${name}.key`)), cert }, (req, res) => {
      res.writeHead(req.url === '/tool.sh' ? 200 : 404).end(req.url === '/tool.sh' ? `#!/bin/sh\necho ${name} tool\n` : 'no');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    servers.push(server);
    return { url: `https://127.0.0.1:${(server.address() as { port: number }).port}`, cert };
  }

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'rf-tls-'));
  });
  afterAll(async () => {
    await emu?.stop();
    for (const s of servers) await new Promise((r) => s.close(r));
    rmSync(dir, { recursive: true, force: true });
  });

  it('downloads from an https server whose CA the nodes trust (with the file mode); an untrusted certificate is a download failure', async () => {
    const trusted = await httpsServer('trusted');
    const untrusted = await httpsServer('untrusted');
    emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20 }, trustedCertificates: [trusted.cert] });
    client = sdkClient(emu);
    await client.pool.add({ id: 'tls', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
    await waitForNodes(client, 'tls', 1);
    await client.job.add({ id: 'tlsj', poolInfo: { poolId: 'tls' } });
    await client.task.add('tlsj', {
      id: 'ok',
      commandLine: './bin/tool.sh',
      resourceFiles: [{ httpUrl: `${trusted.url}/tool.sh`, filePath: 'bin/tool.sh', fileMode: '0755' }],
    });
    const ok = await waitForTask(client, 'tlsj', 'ok');
    expect(ok.executionInfo).toMatchObject({ exitCode: 0, result: 'success' });
    expect(await readTaskFile(client, 'tlsj', 'ok', 'stdout.txt')).toBe('trusted tool\n');

    await client.task.add('tlsj', { id: 'bad', commandLine: '/bin/true', resourceFiles: [{ httpUrl: `${untrusted.url}/tool.sh`, filePath: 'tool.sh' }] });
    const bad = await waitForTask(client, 'tlsj', 'bad');
    expect(bad.executionInfo).toMatchObject({ result: 'failure', failureInfo: { code: 'BlobDownloadMiscError' } });
    expect(bad.executionInfo?.failureInfo?.message).toMatch(/certificate/i);
  });
});
