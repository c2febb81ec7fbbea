/**
 * Acceptance: a real Open MPI job across four emulated Batch nodes, driven only through @azure/batch.
 * The MPI program is compiled with mpicc during the test and reaches the nodes as a
 * commonResourceFile served over HTTP, as a real pool would download it.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { BatchServiceClient } from '@azure/batch';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { processesMentioning, readTaskFile, sdkClient, waitFor, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

const POOL = 'mpi-pool';
const JOB = 'mpi-job';
const NODES = 4;
const RANKS_PER_NODE = 2;

describe('multi-instance task running real mpirun across emulated nodes', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let buildDir: string;
  let fileServer: http.Server;
  let binaryUrl: string;

  beforeAll(async () => {
    buildDir = mkdtempSync(path.join(os.tmpdir(), 'mpi-fixture-'));
    const binary = path.join(buildDir, 'reduce_nodes');
    execFileSync('mpicc', ['-O2', '-o', binary, path.join(__dirname, '../fixtures/mpi/reduce_nodes.c')]);
    const content = readFileSync(binary);
    fileServer = http.createServer((_req, res) => res.end(content));
    await new Promise<void>((r) => fileServer.listen(0, '127.0.0.1', r));
    binaryUrl = `http://127.0.0.1:${(fileServer.address() as AddressInfo).port}/reduce_nodes`;
    emu = await startBatchEmulator({ timing: { allocateMs: 30, bootMs: 30, leaveMs: 30 } });
    client = sdkClient(emu);
  });

  afterAll(async () => {
    await emu?.stop();
    await new Promise<void>((r) => (fileServer ? fileServer.close(() => r()) : r()));
    rmSync(buildDir, { recursive: true, force: true });
  });

  it('runs 4 nodes × 2 ranks, each rank on its own node, and cleans everything up', async () => {
    await client.pool.add({
      id: POOL,
      vmSize: 'standard_hb120rs_v3',
      virtualMachineConfiguration: {
        imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
        nodeAgentSKUId: 'batch.node.ubuntu 22.04',
      },
      targetDedicatedNodes: NODES,
      taskSlotsPerNode: 1,
      enableInterNodeCommunication: true,
    });
    const nodes = await waitForNodes(client, POOL, NODES);
    const nodeByIp = new Map(nodes.map((n) => [n.ipAddress as string, n.id as string]));
    expect(nodeByIp.size).toBe(NODES);

    await client.job.add({ id: JOB, poolInfo: { poolId: POOL } });
    // Not run under a shell on Batch: the shell is explicit so $AZ_BATCH_HOST_LIST expands.
    const hostsWithSlots = `$(echo "$AZ_BATCH_HOST_LIST" | sed "s/,/:${RANKS_PER_NODE},/g"):${RANKS_PER_NODE}`;
    await client.task.add(JOB, {
      id: 'reduce',
      commandLine: `/bin/sh -c 'mpirun --host ${hostsWithSlots} -np ${NODES * RANKS_PER_NODE} $AZ_BATCH_TASK_SHARED_DIR/reduce_nodes'`,
      multiInstanceSettings: {
        numberOfInstances: NODES,
        // Like a coordination command that starts a daemon: a background process that outlives the command.
        coordinationCommandLine: '/bin/sh -c "sleep 300 & test -x $AZ_BATCH_TASK_SHARED_DIR/reduce_nodes && echo ready on $AZ_BATCH_NODE_ID"',
        commonResourceFiles: [{ httpUrl: binaryUrl, filePath: 'reduce_nodes', fileMode: '0755' }],
      },
    });

    const task = await waitForTask(client, JOB, 'reduce', 'completed', 60_000);
    const stdout = await readTaskFile(client, JOB, 'reduce', 'stdout.txt');
    const stderr = await readTaskFile(client, JOB, 'reduce', 'stderr.txt');
    expect({ exitCode: task.executionInfo?.exitCode, result: task.executionInfo?.result }).toEqual({ exitCode: 0, result: 'success' });
    expect(stderr).not.toMatch(/error/i);
    expect([...nodeByIp.values()]).toContain(task.nodeInfo?.nodeId);

    const ranks = [...stdout.matchAll(/^RANK (\d+)\/(\d+) NODE (\S+) IP (\S+)$/gm)].map((m) => ({
      rank: Number(m[1]),
      size: Number(m[2]),
      node: m[3],
      ip: m[4],
    }));
    expect(ranks.map((r) => r.rank).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    for (const r of ranks) {
      expect(r.size).toBe(NODES * RANKS_PER_NODE);
      // The rank saw the AZ_BATCH_NODE_ID of the node that owns the address it was launched on.
      expect(r.node).toBe(nodeByIp.get(r.ip));
    }
    const perNode = new Map<string, number>();
    for (const r of ranks) perNode.set(r.node, (perNode.get(r.node) ?? 0) + 1);
    expect([...perNode.keys()].sort()).toEqual([...nodeByIp.values()].sort());
    expect([...perNode.values()]).toEqual(Array(NODES).fill(RANKS_PER_NODE));
    const n = NODES * RANKS_PER_NODE;
    expect(stdout).toContain(`SUM ${(n * (n + 1)) / 2}`);

    // Subtasks 1..3 ran the coordination command on the other nodes.
    const subtasks = await client.task.listSubtasks(JOB, 'reduce');
    expect(subtasks.value?.map((s) => s.id)).toEqual([1, 2, 3]);
    expect(new Set(subtasks.value?.map((s) => s.nodeInfo?.nodeId))).toEqual(new Set([...nodeByIp.values()].filter((id) => id !== task.nodeInfo?.nodeId)));
    expect(subtasks.value?.every((s) => s.state === 'completed' && s.result === 'success')).toBe(true);

    // Something still running when the job ends: a long task that also starts a detached
    // process recorded as a container (the nodetools' config.json format).
    await client.task.add(JOB, {
      id: 'lingering',
      commandLine:
        `/bin/sh -c 'mkdir -p $AZ_BATCH_NODE_ROOT_DIR/containers/c1; setsid sleep 600 & ` +
        `echo "{\\"name\\":\\"c1\\",\\"image\\":\\"x\\",\\"env\\":{},\\"rootfs\\":\\"/\\",\\"pid\\":$!,\\"state\\":\\"running\\"}" > $AZ_BATCH_NODE_ROOT_DIR/containers/c1/config.json; sleep 600'`,
    });
    await waitForTask(client, JOB, 'lingering', 'running');
    await waitFor('the lingering processes to appear', async () => (processesMentioning(emu.dataDir).length >= 2 ? true : undefined));
    const sandboxes = emu.nodes(POOL).map((x) => x.rootDir);
    expect(sandboxes.every((d) => existsSync(d))).toBe(true);

    await client.job.terminate(JOB);
    await waitFor('job completed', async () => ((await client.job.get(JOB)).state === 'completed' ? true : undefined));
    await client.pool.deleteMethod(POOL);
    await waitFor('pool gone', async () => ((await client.pool.exists(POOL)).body === false ? true : undefined));

    expect(sandboxes.filter((d) => existsSync(d))).toEqual([]);
    await waitFor('processes gone', async () => (processesMentioning(emu.dataDir).length === 0 ? true : undefined), 5_000);
  });
});
