/**
 * Local Batch emulator benchmark: `node --import tsx bench/batch.ts`
 * Prints: task start latency (add → running), multi-instance start on 8 nodes (and a real
 * 8-node mpirun when mpicc is present), request throughput for "get task", memory per emulated node.
 * The SDK client runs in the same process as the emulator, so throughput includes the SDK's own cost.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import v8 from 'node:v8';
import vm from 'node:vm';
import http from 'node:http';
import { startBatchEmulator } from '../local/batch';
import { sign, stringToSign } from '../local/batch/auth/sharedKey';
import { LINUX_VM_CONFIGURATION, sdkClient, sleep, waitFor, waitForNodes, waitForTask } from '../local/batch/testing/sdkHelpers';

// A real gc() without needing --expose-gc on the command line, so heap figures are settled.
v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

const TIMING = { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 250 };

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))].toFixed(1);
  return `median ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${s[s.length - 1].toFixed(1)} ms (n=${s.length})`;
}

async function main(): Promise<void> {
  const emu = await startBatchEmulator({ timing: TIMING });
  const client = sdkClient(emu);
  try {
    // 1. Task start latency: add → running, seen by a client polling every 2 ms, and by the service's own timestamps.
    await client.pool.add({
      id: 'lat',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 1,
      taskSlotsPerNode: 8,
    });
    await waitForNodes(client, 'lat', 1);
    await client.job.add({ id: 'lat', poolInfo: { poolId: 'lat' } });
    const observed: number[] = [];
    const service: number[] = [];
    for (let i = 0; i < 30; i++) {
      const t0 = performance.now();
      await client.task.add('lat', { id: `t${i}`, commandLine: '/bin/sleep 0.05' });
      const t = await waitFor(
        'running',
        async () => {
          const got = await client.task.get('lat', `t${i}`);
          return got.state === 'running' || got.state === 'completed' ? got : undefined;
        },
        10_000,
        2,
      );
      observed.push(performance.now() - t0);
      if (t.executionInfo?.startTime && t.creationTime) service.push(+t.executionInfo.startTime - +t.creationTime);
    }
    console.log(`task start latency (client, add → running): ${stats(observed)}`);
    console.log(`task start latency (service creationTime → startTime): ${stats(service)}`);

    // 2. Multi-instance start on 8 nodes.
    await client.pool.add({
      id: 'mi8',
      vmSize: 'standard_hb120rs_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 8,
      taskSlotsPerNode: 1,
      enableInterNodeCommunication: true,
    });
    const poolT0 = performance.now();
    await waitForNodes(client, 'mi8', 8);
    console.log(`8-node pool add → all idle: ${(performance.now() - poolT0).toFixed(0)} ms (allocateMs=${TIMING.allocateMs}, bootMs=${TIMING.bootMs})`);
    await client.job.add({ id: 'mi8', poolInfo: { poolId: 'mi8' } });
    const miRunning: number[] = [];
    const miDone: number[] = [];
    for (let i = 0; i < 5; i++) {
      const t0 = performance.now();
      await client.task.add('mi8', {
        id: `mi${i}`,
        commandLine: '/bin/true',
        multiInstanceSettings: { numberOfInstances: 8, coordinationCommandLine: '/bin/true' },
      });
      await waitFor('running', async () => ((await client.task.get('mi8', `mi${i}`)).state !== 'active' ? true : undefined), 10_000, 2);
      miRunning.push(performance.now() - t0);
      await waitForTask(client, 'mi8', `mi${i}`, 'completed', 20_000);
      miDone.push(performance.now() - t0);
    }
    console.log(`multi-instance (8 nodes, trivial commands) add → running: ${stats(miRunning)}`);
    console.log(`multi-instance (8 nodes, trivial commands) add → completed: ${stats(miDone)}`);

    let mpicc = true;
    try {
      execFileSync('which', ['mpicc'], { stdio: 'ignore' });
    } catch {
      mpicc = false;
    }
    if (mpicc) {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-mpi-'));
      const bin = path.join(dir, 'reduce_nodes');
      execFileSync('mpicc', ['-O2', '-o', bin, path.join(__dirname, '../tests/fixtures/mpi/reduce_nodes.c')]);
      const t0 = performance.now();
      await client.task.add('mi8', {
        id: 'mpirun',
        commandLine: `/bin/sh -c 'mpirun --host $AZ_BATCH_HOST_LIST -np 8 ${bin}'`,
        multiInstanceSettings: { numberOfInstances: 8, coordinationCommandLine: '/bin/true' },
      });
      const t = await waitForTask(client, 'mi8', 'mpirun', 'completed', 60_000);
      console.log(`real mpirun, 8 nodes × 1 rank, add → completed: ${(performance.now() - t0).toFixed(0)} ms (exit ${t.executionInfo?.exitCode})`);
      rmSync(dir, { recursive: true, force: true });
    } else {
      console.log('real mpirun: skipped (mpicc not installed; scripts/ensure-deps.sh installs Open MPI)');
    }

    // 3. Throughput: get task, 32 concurrent callers, for about 3 s.
    const until = Date.now() + 3000;
    let done = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (Date.now() < until) {
          await client.task.get('lat', 't0');
          done++;
        }
      }),
    );
    console.log(`get task throughput: ${((done / (performance.now() - t0)) * 1000).toFixed(0)} requests/s (${done} requests, 32 concurrent, SDK in-process)`);

    // 3b. The same without the SDK: keep-alive HTTP, each request signed (shared key) by our signer.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
    const pathOnly = '/jobs/lat/tasks/t0';
    const query = { 'api-version': '2022-10-01.16.0' };
    const getRaw = () =>
      new Promise<number>((resolve, reject) => {
        const headers: Record<string, string> = { 'ocp-date': new Date().toUTCString() };
        const sig = sign(stringToSign({ method: 'GET', rawPath: pathOnly, query, headers }, emu.accountName, ''), emu.accountKey);
        headers.authorization = `SharedKey ${emu.accountName}:${sig}`;
        const req = http.get(`${emu.url}${pathOnly}?api-version=${query['api-version']}`, { agent, headers }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
    const rawUntil = Date.now() + 3000;
    let rawDone = 0;
    const r0 = performance.now();
    const cpu0 = process.cpuUsage();
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (Date.now() < rawUntil) {
          if ((await getRaw()) !== 200) throw new Error('raw get task failed');
          rawDone++;
        }
      }),
    );
    const cpu = process.cpuUsage(cpu0);
    agent.destroy();
    console.log(
      `get task throughput without the SDK: ${((rawDone / (performance.now() - r0)) * 1000).toFixed(0)} requests/s (${rawDone} requests, 32 concurrent keep-alive)`,
    );
    // Wall-clock rates depend on how busy the machine is; CPU per request (client + server in this process) does not.
    console.log(
      `CPU per get-task request (client and emulator together): ${((cpu.user + cpu.system) / 1000 / rawDone).toFixed(2)} ms → at most ~${Math.round(rawDone / ((cpu.user + cpu.system) / 1e6))} requests/s per core`,
    );

    // 4. Memory per emulated node (idle nodes; tasks' own processes are not counted).
    // Warm up the node code paths first so that compiled code is not counted as node memory.
    await client.pool.add({ id: 'warm', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 5 });
    await waitForNodes(client, 'warm', 5);
    await client.pool.deleteMethod('warm');
    await sleep(500);
    gc();
    await sleep(100);
    const before = process.memoryUsage();
    const N = 400;
    await client.pool.add({ id: 'mem', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: N });
    await waitForNodes(client, 'mem', N, ['idle'], 60_000);
    gc();
    await sleep(100);
    const after = process.memoryUsage();
    const kib = (b: number) => (b / 1024).toFixed(1);
    console.log(
      `emulator memory per idle node: heap ${kib((after.heapUsed - before.heapUsed) / N)} KiB, RSS ${kib((after.rss - before.rss) / N)} KiB (RSS is noisy) ` +
        `(${N} nodes; RSS ${(before.rss / 2 ** 20).toFixed(0)} → ${(after.rss / 2 ** 20).toFixed(0)} MiB; no processes per idle node)`,
    );
    const du = execFileSync('du', ['-sk', path.join(emu.dataDir, 'nodes', 'mem')])
      .toString()
      .split('\t')[0];
    console.log(`disk per idle node sandbox: ${(Number(du) / N).toFixed(1)} KiB`);
  } finally {
    await emu.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exitCode = 1;
});
