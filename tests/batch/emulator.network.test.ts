/**
 * Pools in virtual networks on the emulator, through the @azure/batch SDK with real processes:
 *   - networkConfiguration is checked as Batch checks it (a malformed subnet id is 400 InvalidPropertyValue naming
 *     networkConfiguration.subnetId; public IP rules; what is not modelled is 501);
 *   - a shared-network service (an NFS file server declared for one subnet in the emulator's configuration) is
 *     mountable from nodes of pools in that subnet, and times out from a pool in another subnet or in none.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BatchServiceClient } from '@azure/batch';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, signedFetch, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';
import { REPO_ROOT } from '../../local/stack';

const SUB = '00000000-1111-2222-3333-444444444444';
const subnet = (name: string) => `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/virtualNetworks/vnet-hpc/subnets/${name}`;
const PIP = `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/publicIPAddresses/ip-1`;

describe('virtual networks on the emulator', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let served: string;

  beforeAll(async () => {
    served = mkdtempSync(path.join(os.tmpdir(), 'netsvc-'));
    mkdirSync(path.join(served, 'apps'));
    writeFileSync(path.join(served, 'apps', 'solver.txt'), 'solver v1\n');
    emu = await startBatchEmulator({
      timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, jobDeleteMs: 20, poolDeleteMs: 20 },
      nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')],
      networkServices: [
        { name: 'headnode', subnetId: subnet('compute'), address: '10.20.0.4', exports: [{ path: '/export/apps', directory: path.join(served, 'apps') }] },
      ],
    });
    client = sdkClient(emu);
  }, 60_000);
  afterAll(async () => {
    await emu?.stop();
    rmSync(served, { recursive: true, force: true });
  }, 60_000);

  it('refuses what Batch refuses in networkConfiguration, naming the property', async () => {
    const add = (id: string, networkConfiguration: unknown) =>
      signedFetch(emu, 'POST', '/pools', {
        id,
        vmSize: 'standard_d2s_v3',
        virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
        targetDedicatedNodes: 1,
        networkConfiguration,
      });
    const cases: [unknown, number, string, string][] = [
      [{ subnetId: 'vnet-hpc/compute' }, 400, 'InvalidPropertyValue', 'networkConfiguration.subnetId'],
      [
        { subnetId: `/subscriptions/${SUB}/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet` },
        400,
        'InvalidPropertyValue',
        'networkConfiguration.subnetId',
      ],
      [
        { subnetId: subnet('compute'), publicIPAddressConfiguration: { provision: 'usermanaged' } },
        400,
        'MissingRequiredProperty',
        'networkConfiguration.publicIPAddressConfiguration.ipAddressIds',
      ],
      [
        { subnetId: subnet('compute'), publicIPAddressConfiguration: { provision: 'usermanaged', ipAddressIds: [subnet('x')] } },
        400,
        'InvalidPropertyValue',
        'networkConfiguration.publicIPAddressConfiguration.ipAddressIds[0]',
      ],
      [
        { subnetId: subnet('compute'), publicIPAddressConfiguration: { provision: 'batchmanaged', ipAddressIds: [PIP] } },
        400,
        'InvalidPropertyValue',
        'networkConfiguration.publicIPAddressConfiguration.ipAddressIds',
      ],
      [
        { publicIPAddressConfiguration: { provision: 'nopublicipaddresses' } },
        400,
        'InvalidPropertyValue',
        'networkConfiguration.publicIPAddressConfiguration.provision',
      ],
      [{ subnetId: subnet('compute'), dynamicVNetAssignmentScope: 'job' }, 501, 'NotImplemented', 'networkConfiguration.dynamicVNetAssignmentScope'],
    ];
    let n = 0;
    for (const [nc, status, code, property] of cases) {
      const r = await add(`badnet${++n}`, nc);
      const body = r.json as { code: string; values?: { key: string; value: string }[] };
      expect({ n, status: r.status, code: body.code, property: body.values?.find((v) => v.key === 'PropertyName')?.value }).toEqual({
        n,
        status,
        code,
        property,
      });
    }
    const ok = await add('goodnet', { subnetId: subnet('compute'), publicIPAddressConfiguration: { provision: 'usermanaged', ipAddressIds: [PIP] } });
    expect(ok.status).toBe(201);
    await client.pool.deleteMethod('goodnet');
  });

  it('a file server in subnet "compute" is mountable from that subnet\'s nodes only', async () => {
    const pools: [string, unknown][] = [
      ['in-net', { subnetId: subnet('compute').toUpperCase().replace('/SUBSCRIPTIONS/', '/subscriptions/') }],
      ['other-net', { subnetId: subnet('other') }],
      ['no-net', undefined],
    ];
    for (const [id, networkConfiguration] of pools) {
      await client.pool.add({
        id,
        vmSize: 'standard_d2s_v3',
        virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
        targetDedicatedNodes: 1,
        ...(networkConfiguration ? { networkConfiguration } : {}),
      } as Parameters<BatchServiceClient['pool']['add']>[0]);
      await waitForNodes(client, id, 1);
      await client.job.add({ id: `j-${id}`, poolInfo: { poolId: id } });
      const script = 'd="$AZ_BATCH_NODE_SHARED_DIR/apps"; mkdir -p "$d"; mount -t nfs -o vers=4.1 10.20.0.4:/export/apps "$d" && cat "$d/solver.txt"';
      await client.task.add(`j-${id}`, { id: 'mount', commandLine: `/bin/bash -c '${script}'` });
    }
    const results: Record<string, { exitCode?: number; stdout: string; stderr: string }> = {};
    for (const [id] of pools) {
      const t = await waitForTask(client, `j-${id}`, 'mount');
      results[id] = {
        exitCode: t.executionInfo?.exitCode,
        stdout: await readTaskFile(client, `j-${id}`, 'mount', 'stdout.txt'),
        stderr: await readTaskFile(client, `j-${id}`, 'mount', 'stderr.txt'),
      };
    }
    expect(results['in-net']).toEqual({ exitCode: 0, stdout: 'solver v1\n', stderr: '' });
    expect(results['other-net']).toMatchObject({ exitCode: 32, stdout: '' });
    expect(results['other-net'].stderr).toMatch(
      /Connection timed out: 10\.20\.0\.4 is not reachable from this node \(it is in subnet compute; this node's pool is in subnet other\)/,
    );
    expect(results['no-net'].stderr).toMatch(/this node's pool is in no virtual network/);
    // What the node wrote through the mount is on the server.
    writeFileSync(path.join(served, 'apps', 'solver.txt'), 'solver v2\n');
    expect(readFileSync(path.join(emu.nodes('in-net')[0].rootDir, 'shared', 'apps', 'solver.txt'), 'utf8')).toBe('solver v2\n');
  }, 60_000);
});
