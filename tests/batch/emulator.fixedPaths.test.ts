/**
 * Fixed paths and network file systems on the emulator, through the @azure/batch SDK with real processes:
 *   - a Batch NFS mount of a shared-network service (head node, NetApp Files, Azure Files NFS in the pool's subnet)
 *     is that service's exported directory; from a pool in another subnet the node is unusable (mountFailure.test.ts);
 *   - the start task's `mount --bind` puts a mount at a fixed path (/apps) that every later process of the node sees,
 *     read-only when remounted so; on this machine the path stays an empty mount point (the binds are the node's);
 *   - Lustre by MGS address (mount -t lustre MGS@tcp:/fsname) mounts the service's /fsname export.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BatchServiceClient } from '@azure/batch';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';
import { mountNamespacesAvailable } from '../../local/batch/runner/mountNamespace';
import { REPO_ROOT } from '../../local/stack';

const SUB = '00000000-1111-2222-3333-444444444444';
const subnet = (name: string) => `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/virtualNetworks/vnet-hpc/subnets/${name}`;
// Unusual names: the mount points are made on this machine, and nothing else here uses them.
const APPS = '/fsemu-apps';
const DATA = '/fsemu-data';

/** What the product's start task does (shared/core/planning/nodeFilesystems.ts), for two mounts and Lustre. */
const START = [
  'set -e',
  `mkdir -p "$AZ_BATCH_NODE_MOUNTS_DIR/lus"; mountpoint -q "$AZ_BATCH_NODE_MOUNTS_DIR/lus" || mount -t lustre -o noatime,flock 10.20.0.4@tcp:/lustrefs "$AZ_BATCH_NODE_MOUNTS_DIR/lus"`,
  `if ! mountpoint -q ${APPS}; then mkdir -p ${APPS} && mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR/apps" ${APPS}; fi`,
  `mount -o remount,bind,ro ${APPS}`,
  `if ! mountpoint -q ${DATA}; then mkdir -p ${DATA} && mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR/data" ${DATA}; fi`,
].join('\n');

const describeIf = mountNamespacesAvailable() ? describe : describe.skip;

describeIf('fixed paths and network file systems on the emulator', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let served: string;

  beforeAll(async () => {
    served = mkdtempSync(path.join(os.tmpdir(), 'fixedpaths-'));
    for (const d of ['apps', 'data', 'lustre']) mkdirSync(path.join(served, d));
    writeFileSync(path.join(served, 'apps', 'solver.txt'), 'solver v1\n');
    emu = await startBatchEmulator({
      timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, jobDeleteMs: 20, poolDeleteMs: 20 },
      nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')],
      networkServices: [
        {
          name: 'files',
          subnetId: subnet('compute'),
          address: '10.20.0.4',
          exports: [
            { path: '/export/apps', directory: path.join(served, 'apps') },
            { path: '/export/data', directory: path.join(served, 'data') },
            { path: '/lustrefs', directory: path.join(served, 'lustre') },
          ],
        },
      ],
    });
    client = sdkClient(emu);
  }, 60_000);
  afterAll(async () => {
    await emu?.stop();
    rmSync(served, { recursive: true, force: true });
  }, 60_000);

  const pool = (id: string, subnetName: string) =>
    client.pool.add({
      id,
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 2,
      networkConfiguration: { subnetId: subnet(subnetName) },
      mountConfiguration: [
        { nfsMountConfiguration: { source: '10.20.0.4:/export/apps', relativeMountPath: 'apps', mountOptions: '-o ro' } },
        { nfsMountConfiguration: { source: '10.20.0.4:/export/data', relativeMountPath: 'data' } },
      ],
      startTask: { commandLine: `/bin/bash -c '${START}'`, waitForSuccess: true, userIdentity: { autoUser: { elevationLevel: 'admin', scope: 'pool' } } },
    });

  it("every node sees the service's files at the fixed paths; /apps is read-only; what one node writes in /data the other reads", async () => {
    await pool('fp-in', 'compute');
    const nodes = await waitForNodes(client, 'fp-in', 2);
    await client.job.add({ id: 'fpj', poolInfo: { poolId: 'fp-in' } });
    const run = (id: string, node: number, script: string) =>
      client.task.add('fpj', { id, commandLine: `/bin/bash -c '${script}'`, affinityInfo: { affinityId: nodes[node].affinityId as string } });
    await run(
      'w',
      0,
      `cat ${APPS}/solver.txt; touch ${APPS}/x 2>/dev/null; echo "apps write $?"; echo "from $AZ_BATCH_NODE_ID" > ${DATA}/a.txt; echo lustre > "$AZ_BATCH_NODE_MOUNTS_DIR/lus/l.txt"`,
    );
    const w = await waitForTask(client, 'fpj', 'w');
    expect({ exit: w.executionInfo?.exitCode, out: await readTaskFile(client, 'fpj', 'w', 'stdout.txt') }).toEqual({
      exit: 0,
      out: 'solver v1\napps write 1\n',
    });
    await run('r', 1, `cat ${DATA}/a.txt; mountpoint -q ${APPS} && echo "apps mounted"; cat "$AZ_BATCH_NODE_MOUNTS_DIR/lus/l.txt"`);
    const r = await waitForTask(client, 'fpj', 'r');
    expect({ exit: r.executionInfo?.exitCode, out: await readTaskFile(client, 'fpj', 'r', 'stdout.txt') }).toEqual({
      exit: 0,
      out: `from ${nodes[0].id}\napps mounted\nlustre\n`,
    });
    // The files are the service's, on this machine; /fsemu-apps itself is an empty mount point here.
    expect(readFileSync(path.join(served, 'lustre', 'l.txt'), 'utf8')).toBe('lustre\n');
    expect(readdirSync(APPS)).toEqual([]);
  }, 90_000);

  it('from another subnet the Batch mounts fail: the nodes are unusable (MountConfigurationError) and run no start task', async () => {
    await pool('fp-out', 'other');
    const deadline = Date.now() + 30_000;
    let states: (string | undefined)[] = [];
    while (Date.now() < deadline) {
      states = (await client.computeNode.list('fp-out')).map((n) => n.state);
      if (states.length === 2 && states.every((s) => s === 'unusable')) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(states).toEqual(['unusable', 'unusable']);
    const [node] = emu.nodes('fp-out');
    expect(existsSync(path.join(node.rootDir, 'fsmounts', 'apps'))).toBe(false);
    const [listed] = await client.computeNode.list('fp-out');
    expect(listed.errors?.[0]?.code).toBe('MountConfigurationError');
    expect(JSON.stringify(listed.errors)).toMatch(/mount\.nfs: Connection timed out: 10\.20\.0\.4 is not reachable/);
  }, 60_000);
});
