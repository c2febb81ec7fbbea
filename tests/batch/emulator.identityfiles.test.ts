/**
 * `identityReference` on resource files and output files, end to end against real blob storage: Azurite's blob
 * service with OAuth (`--oauth basic`, which Azure Storage's bearer tokens need: https only), a pool created through
 * the emulator's management plane carrying id-pool-local, and the emulated node agent reading the start task's file and
 * uploading a task's output with the pool identity's token from the node's instance metadata service. The URLs carry
 * no SAS. A file that names an identity the pool does not carry fails with the reason.
 *
 * Azurite checks a bearer token's issuer, audience and lifetime, not its signature or any role (its "basic" level):
 * what is proven here is that the node agent presents the pool identity's storage token, not that Azure would
 * authorize it (that is infra's Storage Blob Data Reader on the data accounts).
 *
 * TLS: Azurite serves a self-signed certificate (made as the local identity service makes its own); the emulated node
 * image trusts it (`trustedCertificates`), and so do this test's own requests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import * as https from 'node:https';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { ensureCertificate } from '../../local/identity/tls';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';
import { readTaskFile, sdkClient, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';
import { loadConfig } from '../../shared/adapters/config';
import * as batch from '../../shared/adapters/batch';

const ACCOUNT = 'devstoreaccount1';

let identity: IdentityService;
let wiring: LocalIdentityWiring;
let emu: BatchEmulatorHandle;
let azurite: ChildProcess;
let blobEndpoint: string;
let tlsDir: string;
let ca: string;

/** A request to the https Azurite as the test's own client: trusting its certificate, with a storage token or none. */
function storage(
  method: 'GET' | 'PUT',
  url: string,
  token: string | undefined,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      url,
      {
        method,
        ca,
        headers: {
          'x-ms-version': '2021-08-06',
          ...(token ? { Authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'Content-Length': String(Buffer.byteLength(body)) } : {}),
          ...headers,
        },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

async function startOAuthAzurite(certFile: string, keyFile: string): Promise<string> {
  const main = require.resolve('azurite/dist/src/blob/main.js');
  azurite = spawn(
    process.execPath,
    [
      main,
      '--blobHost',
      '127.0.0.1',
      '--blobPort',
      '0',
      '--oauth',
      'basic',
      '--cert',
      certFile,
      '--key',
      keyFile,
      '--inMemoryPersistence',
      '--skipApiVersionCheck',
      '--disableTelemetry',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`Azurite did not start: ${out}`)), 30_000);
    azurite.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /listens on (https:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(`${m[1]}/${ACCOUNT}`);
      }
    });
    azurite.once('exit', (code) => reject(new Error(`Azurite exited ${code}: ${out}`)));
  });
}

beforeAll(async () => {
  tlsDir = mkdtempSync(path.join(tmpdir(), 'identityfiles-tls-'));
  const tls = ensureCertificate(tlsDir);
  ca = tls.cert;
  blobEndpoint = await startOAuthAzurite(tls.certFile, tls.keyFile);
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
    identity: wiring.nodeIdentities,
    arm: wiring.arm,
    trustedCertificates: [ca],
  });
  // The user's data, written as someone holding a storage token: a setup script the start task downloads, a container for outputs.
  const owner = await identity.resourceToken('https://storage.azure.com/', { identity: wiring.app });
  for (const c of ['software', 'results']) expect((await storage('PUT', `${blobEndpoint}/${c}?restype=container`, owner)).status).toBe(201);
  expect((await storage('PUT', `${blobEndpoint}/software/setup.sh`, owner, 'echo set up by identity\n', { 'x-ms-blob-type': 'BlockBlob' })).status).toBe(201);
}, 60_000);

afterAll(async () => {
  await emu?.stop();
  await identity?.stop();
  // Wait for Azurite to end: a child still exiting when the next file starts keeps this jest worker alive.
  if (azurite && azurite.exitCode === null && azurite.signalCode === null) {
    const exited = new Promise((resolve) => azurite.once('exit', resolve));
    azurite.kill();
    await exited;
  }
  if (tlsDir) rmSync(tlsDir, { recursive: true, force: true });
});

test('the start task reads its file and a task uploads its output with the pool identity, no SAS anywhere', async () => {
  const cfg = loadConfig({
    BATCH_ACCOUNT_URL: emu.url,
    BATCH_ACCOUNT_NAME: emu.accountName,
    BATCH_ACCOUNT_KEY: emu.accountKey,
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'devstoreaccount1',
    BATCH_SUBSCRIPTION_ID: wiring.arm.subscriptionId,
    BATCH_RESOURCE_GROUP: wiring.arm.resourceGroup,
    POOL_IDENTITY_RESOURCE_ID: wiring.pool.resourceId,
    POOL_IDENTITY_CLIENT_ID: wiring.pool.clientId,
    ARM_ENDPOINT: emu.armUrl as string,
  });
  const credential = {
    getToken: async () => ({
      token: await identity.resourceToken('https://management.azure.com/', { identity: wiring.app }),
      expiresOnTimestamp: Date.now() + 3_600_000,
    }),
  };
  const arm = batch.createArmBatchContext(cfg, { credential }) as batch.ArmBatchContext;
  const setupUrl = `${blobEndpoint}/software/setup.sh`;
  await batch.createJobPoolArm(arm, {
    poolId: 'idfiles',
    jobId: 'idfiles',
    vmSize: 'Standard_D2s_v5',
    targetDedicatedNodes: 1,
    image: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
    startTask: {
      commandLine: '/bin/sh -c "sh setup.sh > $AZ_BATCH_NODE_SHARED_DIR/setup.out"',
      resourceFiles: [{ httpUrl: setupUrl, filePath: 'setup.sh', identityResourceId: wiring.pool.resourceId }],
      waitForSuccess: true,
    },
  });
  const client = sdkClient(emu);
  const [node] = await waitForNodes(client, 'idfiles', 1);
  expect(node.startTaskInfo).toMatchObject({ state: 'completed', exitCode: 0 });
  await client.job.add({ id: 'idjob', poolInfo: { poolId: 'idfiles' } });
  await client.task.add('idjob', {
    id: 'writer',
    commandLine: '/bin/sh -c "cat $AZ_BATCH_NODE_SHARED_DIR/setup.out > result.txt"',
    outputFiles: [
      {
        filePattern: 'result.txt',
        destination: {
          container: { containerUrl: `${blobEndpoint}/results`, path: 'run1/result.txt', identityReference: { resourceId: wiring.pool.resourceId } },
        },
        uploadOptions: { uploadCondition: 'taskcompletion' },
      },
    ],
  });
  const t = await waitForTask(client, 'idjob', 'writer');
  expect({
    exit: t.executionInfo?.exitCode,
    failure: t.executionInfo?.failureInfo,
    err: await readTaskFile(client, 'idjob', 'writer', 'fileuploaderr.txt'),
  }).toEqual({ exit: 0, failure: undefined, err: '' });
  const reader = await identity.resourceToken('https://storage.azure.com/', { identity: wiring.app });
  expect(await storage('GET', `${blobEndpoint}/results/run1/result.txt`, reader)).toEqual({ status: 200, body: 'set up by identity\n' });
  expect(await readTaskFile(client, 'idjob', 'writer', 'fileuploadout.txt')).toMatch(
    /uploaded wd\/result\.txt to .*\/results\/run1\/result\.txt .* with identity .*id-pool/,
  );

  // An identity the pool does not carry: the node's IMDS has no token for it, and the file fails with that reason.
  await client.task.add('idjob', {
    id: 'foreign',
    commandLine: '/bin/true',
    resourceFiles: [{ httpUrl: setupUrl, filePath: 'setup.sh', identityReference: { resourceId: wiring.app.resourceId } }],
  });
  const foreign = await waitForTask(client, 'idjob', 'foreign');
  expect(foreign.executionInfo?.failureInfo?.code).toBe('BlobDownloadMiscError');
  expect(foreign.executionInfo?.failureInfo?.message).toMatch(/Identity not found/);
  // Without a token the blob is not readable: the URL alone is no credential.
  expect((await storage('GET', setupUrl, undefined)).status).toBeGreaterThanOrEqual(400);
}, 120_000);
