/**
 * A pool mount that fails makes the emulated node unusable, as on Batch ("If a mount configuration fails, the compute
 * node in the pool fails and the node state becomes unusable"; the reason is in node.errors): a MountConfigurationError
 * naming the mount, its source and mount.nfs's reason, and no start task runs. Before, the node came up without the
 * mount and only a start task that used it noticed.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BatchServiceClient } from '@azure/batch';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, sdkClient, waitForNodes } from '../../local/batch/testing/sdkHelpers';
import { REPO_ROOT } from '../../local/stack';
import { loadConfig } from '../../shared/adapters/config';
import { createBatchContext } from '../../shared/adapters/batch/client';
import { failedNodes, getPoolSnapshot } from '../../shared/adapters/batch/pools';

const SUB = '00000000-1111-2222-3333-444444444444';
const subnet = (name: string) => `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/virtualNetworks/vnet-hpc/subnets/${name}`;

describe('a failed pool mount on the emulator', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let served: string;

  beforeAll(async () => {
    served = mkdtempSync(path.join(os.tmpdir(), 'mountfail-'));
    mkdirSync(path.join(served, 'data'));
    emu = await startBatchEmulator({
      timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, jobDeleteMs: 20, poolDeleteMs: 20 },
      nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')],
      networkServices: [
        { name: 'files', subnetId: subnet('compute'), address: '10.30.0.4', exports: [{ path: '/export/data', directory: path.join(served, 'data') }] },
      ],
    });
    client = sdkClient(emu);
  }, 60_000);
  afterAll(async () => {
    await emu?.stop();
    rmSync(served, { recursive: true, force: true });
  }, 60_000);

  const pool = (id: string, subnetName: string, source: string) =>
    client.pool.add({
      id,
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 1,
      networkConfiguration: { subnetId: subnet(subnetName) },
      mountConfiguration: [{ nfsMountConfiguration: { source, relativeMountPath: 'data' } }],
      startTask: { commandLine: '/bin/bash -c "echo started"', waitForSuccess: true, userIdentity: { autoUser: { elevationLevel: 'admin', scope: 'pool' } } },
    });

  async function settledNode(poolId: string) {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const [node] = await client.computeNode.list(poolId);
      if (node && ['unusable', 'idle', 'starttaskfailed'].includes(node.state ?? '')) return node;
      if (Date.now() > deadline) throw new Error(`node of ${poolId} did not settle: ${node?.state}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it("a service outside the pool's subnet: the node is unusable with a MountConfigurationError, and no start task ran", async () => {
    await pool('mf-out', 'other', '10.30.0.4:/export/data');
    const node = await settledNode('mf-out');
    expect(node.state).toBe('unusable');
    expect(node.errors).toEqual([
      {
        code: 'MountConfigurationError',
        message: expect.stringContaining('could not mount data'),
        errorDetails: [
          { name: 'RelativeMountPath', value: 'data' },
          { name: 'Source', value: '10.30.0.4:/export/data' },
          { name: 'Reason', value: expect.stringContaining('10.30.0.4 is not reachable') },
        ],
      },
    ]);
    expect(node.startTaskInfo).toBeUndefined();
    const [record] = emu.nodes('mf-out');
    expect(existsSync(path.join(record.rootDir, 'startup', 'stdout.txt'))).toBe(false);
  }, 60_000);

  it("the control plane's unusable-node handling (failedNodes, which provisioning records and the job's error quotes) names the mount and why", async () => {
    const ctx = createBatchContext(
      loadConfig({
        BATCH_ACCOUNT_URL: emu.url,
        BATCH_ACCOUNT_NAME: emu.accountName,
        BATCH_ACCOUNT_KEY: emu.accountKey,
        AzureWebJobsStorage: 'UseDevelopmentStorage=true',
        STAGING_ACCOUNTS: 'devstoreaccount1',
      }),
    );
    const snapshot = await getPoolSnapshot(ctx, 'mf-out');
    expect(failedNodes(snapshot!)).toEqual([
      {
        nodeId: expect.any(String),
        state: 'unusable',
        reason: expect.stringMatching(
          /^MountConfigurationError: The node could not mount data \(10\.30\.0\.4:\/export\/data\): mount\.nfs: Connection timed out: .*check that the file server is reachable from the pool's subnet/,
        ),
      },
    ]);
  }, 60_000);

  it("a path the service does not export: unusable, the reason is the server's refusal", async () => {
    await pool('mf-denied', 'compute', '10.30.0.4:/export/other');
    const node = await settledNode('mf-denied');
    expect(node.state).toBe('unusable');
    expect(node.errors?.[0]?.errorDetails).toContainEqual({
      name: 'Reason',
      value: 'mount.nfs: access denied by server while mounting 10.30.0.4:/export/other',
    });
  }, 60_000);

  it('the reachable export still mounts and the node runs its start task (idle)', async () => {
    await pool('mf-in', 'compute', '10.30.0.4:/export/data');
    await waitForNodes(client, 'mf-in', 1);
    const node = await settledNode('mf-in');
    expect({ state: node.state, errors: node.errors ?? [] }).toEqual({ state: 'idle', errors: [] });
  }, 60_000);
});
