/**
 * TCP services in the emulator's virtual networks (local/batch/runner/tcpServices.ts): a network service's port
 * (a licence server's lmgrd at 10.0.0.4:27000) is served by a server on 127.0.0.1 and reached, with bash's /dev/tcp,
 * from nodes of pools in the service's subnet only; from any other node the connection times out.
 *   - the shim itself, in a plain bash with the environment a node gets (no emulator);
 *   - through the emulator with real pools, nodes and tasks (@azure/batch SDK).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { BatchServiceClient } from '@azure/batch';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { prepareTcpServices, tcpServicesTable } from '../../local/batch/runner/tcpServices';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';
import { REPO_ROOT } from '../../local/stack';

const SUB = '00000000-1111-2222-3333-444444444444';
const subnet = (name: string) => `/subscriptions/${SUB}/resourceGroups/rg-hpc/providers/Microsoft.Network/virtualNetworks/vnet-hpc/subnets/${name}`;

let server: Server;
let port = 0;
let dir: string;
const echo = () => createServer((s) => s.once('data', (d) => s.end(`echo ${d.toString().trim()}\n`)).on('error', () => undefined));

beforeAll(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tcpsvc-'));
  server = echo();
  port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
});
afterAll(() => {
  server.close();
  rmSync(dir, { recursive: true, force: true });
});

const licence = () => ({ name: 'licence', subnetId: subnet('Compute'), address: '10.0.0.4', tcp: [{ port: 27000, target: port }] });
/** Connects to 10.0.0.4:<p>, sends a line and prints the answer, or the error bash reports. */
const client = (p: number) => `exec 3<>/dev/tcp/10.0.0.4/${p} || exit 7; echo ping >&3; read -r a <&3; echo "$a"`;

describe('the table', () => {
  it('lists each port with its subnet (lowercased) and target, and refuses bad or repeated ports', () => {
    expect(tcpServicesTable([licence()])).toBe(`10.0.0.4\t27000\t${subnet('compute').toLowerCase()}\t${port}\n`);
    expect(tcpServicesTable([{ ...licence(), tcp: [] }])).toBe('');
    expect(() => tcpServicesTable([{ ...licence(), tcp: [{ port: 70000, target: 1 }] }])).toThrow(
      'network service licence: tcp[0].port must be an integer in [1, 65535], got 70000',
    );
    expect(() => tcpServicesTable([licence(), licence()])).toThrow('network service licence: 10.0.0.4:27000 is declared twice');
  });

  it('says why when the shim cannot be built', () => {
    const t = prepareTcpServices(path.join(dir, 'nocc'), [licence()], '/nonexistent/cc');
    expect(t).toMatchObject({ available: false, env: {} });
    expect(t.reason).toMatch(/cannot build the connect\(\) shim .*emutcp\.c with \/nonexistent\/cc/);
  });
});

describe("the connect() shim in a node's environment", () => {
  // Asynchronously: the server answering is in this process.
  const run = async (nodeSubnet: string, p = 27000) => {
    const t = prepareTcpServices(path.join(dir, 'shim'), [licence()]);
    expect(t.reason).toBeUndefined();
    return new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'bash',
        ['--norc', '-c', client(p)],
        { encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH, ...t.env, AZ_BATCH_EMULATOR_NODE_SUBNET: nodeSubnet } },
        (err, stdout, stderr) => {
          resolve({ status: err ? Number((err as { code?: number }).code) : 0, stdout, stderr });
        },
      );
    });
  };

  it('routes a connection from the subnet to the local server', async () => {
    expect(await run(subnet('compute'))).toEqual({ status: 0, stdout: 'echo ping\n', stderr: '' });
  });

  it('times out from another subnet or from no network, and refuses a port the service does not serve', async () => {
    expect(await run(subnet('other'))).toEqual({ status: 7, stdout: '', stderr: expect.stringContaining('Connection timed out') });
    expect(await run('')).toEqual({ status: 7, stdout: '', stderr: expect.stringContaining('Connection timed out') });
    expect(await run(subnet('compute'), 27001)).toEqual({ status: 7, stdout: '', stderr: expect.stringContaining('Connection refused') });
  });
});

describe('through the emulator', () => {
  let emu: BatchEmulatorHandle;
  let sdk: BatchServiceClient;
  beforeAll(async () => {
    emu = await startBatchEmulator({
      timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, jobDeleteMs: 20, poolDeleteMs: 20 },
      nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')],
      networkServices: [{ ...licence(), exports: [] }],
    });
    sdk = sdkClient(emu);
  }, 60_000);
  afterAll(async () => {
    await emu?.stop();
  }, 60_000);

  it('nodes of pools in the subnet reach 10.0.0.4:27000; nodes of other pools time out', async () => {
    expect(emu.tcpServices).toEqual({ available: true });
    const pools: [string, string | undefined][] = [
      ['in-net', subnet('compute')],
      ['other-net', subnet('other')],
      ['no-net', undefined],
    ];
    for (const [id, subnetId] of pools) {
      await sdk.pool.add({
        id,
        vmSize: 'standard_d2s_v3',
        virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
        targetDedicatedNodes: 1,
        ...(subnetId ? { networkConfiguration: { subnetId } } : {}),
      });
      await waitForNodes(sdk, id, 1);
      await sdk.job.add({ id: `j-${id}`, poolInfo: { poolId: id } });
      await sdk.task.add(`j-${id}`, { id: 'lm', commandLine: `/bin/bash -c '${client(27000)}'` });
    }
    const results: Record<string, { exitCode?: number; stdout: string; timedOut: boolean }> = {};
    for (const [id] of pools) {
      const t = await waitForTask(sdk, `j-${id}`, 'lm');
      const stderr = await readTaskFile(sdk, `j-${id}`, 'lm', 'stderr.txt');
      results[id] = {
        exitCode: t.executionInfo?.exitCode,
        stdout: await readTaskFile(sdk, `j-${id}`, 'lm', 'stdout.txt'),
        timedOut: stderr.includes('Connection timed out'),
      };
    }
    expect(results).toEqual({
      'in-net': { exitCode: 0, stdout: 'echo ping\n', timedOut: false },
      'other-net': { exitCode: 7, stdout: '', timedOut: true },
      'no-net': { exitCode: 7, stdout: '', timedOut: true },
    });
  }, 60_000);
});
