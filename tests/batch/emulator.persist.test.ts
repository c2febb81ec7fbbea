/**
 * With `persist`, a restarted emulator on the same dataDir still has its pools, nodes, jobs and
 * tasks. Its nodes come back the way Batch recovers a node whose host failed: they reboot (the start
 * task runs again) and the tasks that were running are requeued (requeueCount, not retryCount) and run
 * again. An emulator that was killed could not end its task processes; the next one ends them first.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEV_ACCOUNT_KEY, DEV_ACCOUNT_NAME, startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { killLeftoverNodeProcesses } from '../../local/batch/runner/leftovers';
import { isAlive } from '../../local/batch/runner/processes';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, waitFor, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

const TIMING = { allocateMs: 20, bootMs: 20, leaveMs: 20 };

describe('Batch emulator persistence across restarts', () => {
  let dataDir: string;
  let emu: BatchEmulatorHandle | undefined;

  beforeAll(() => {
    dataDir = mkdtempSync(path.join(os.tmpdir(), 'batch-persist-'));
  });
  afterAll(async () => {
    await emu?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps the account, reboots the nodes and requeues what was running', async () => {
    emu = await startBatchEmulator({ dataDir, persist: true, timing: TIMING });
    let client = sdkClient(emu);
    await client.pool.add({
      id: 'keep',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 1,
      taskSlotsPerNode: 2,
      // Counts its runs: once when the node joins, once more per reboot.
      startTask: { commandLine: `/bin/sh -c 'echo boot >> $AZ_BATCH_NODE_SHARED_DIR/boots'`, waitForSuccess: true },
    });
    const [before] = await waitForNodes(client, 'keep', 1);
    await client.job.add({ id: 'kj', poolInfo: { poolId: 'keep' } });
    await client.task.add('kj', { id: 'done', commandLine: '/bin/sh -c "echo finished"' });
    await waitForTask(client, 'kj', 'done');
    await client.task.add('kj', { id: 'busy', commandLine: `/bin/sh -c 'echo run >> $AZ_BATCH_NODE_SHARED_DIR/runs; sleep 30'` });
    await waitForTask(client, 'kj', 'busy', 'running');
    // 'running' means the process was started, not that its shell has written yet: under load the stop could
    // otherwise end it before its line, and the check below would wait for a line that was never written.
    await waitFor('first run recorded', async () =>
      (await client.file.getPropertiesFromComputeNode('keep', before.id as string, 'shared/runs').catch(() => undefined))?.contentLength === 4
        ? true
        : undefined,
    );
    await emu.stop();

    emu = await startBatchEmulator({ dataDir, persist: true, timing: TIMING });
    client = sdkClient(emu);
    const [after] = await waitForNodes(client, 'keep', 1, ['idle', 'running']);
    expect({ id: after.id, ip: after.ipAddress }).toEqual({ id: before.id, ip: before.ipAddress });
    expect(await readTaskFile(client, 'kj', 'done', 'stdout.txt')).toBe('finished\n');
    const busy = await waitFor('busy running again', async () => {
      const t = await client.task.get('kj', 'busy');
      return t.state === 'running' && t.executionInfo?.requeueCount === 1 ? t : undefined;
    });
    expect(busy.nodeInfo?.nodeId).toBe(before.id);
    expect(busy.executionInfo?.retryCount).toBe(0);
    // The node rebooted: its start task ran a second time.
    expect((await client.file.getPropertiesFromComputeNode('keep', before.id as string, 'shared/boots')).contentLength).toBe(10);
    expect((await client.computeNode.get('keep', before.id as string)).lastBootTime?.getTime()).toBeGreaterThan(before.lastBootTime?.getTime() ?? 0);
    // The sandbox survived: the first run's line is still there, and the rerun added its own.
    await waitFor('second run recorded', async () =>
      (await client.file.getPropertiesFromComputeNode('keep', before.id as string, 'shared/runs')).contentLength === 8 ? true : undefined,
    );
    await client.task.add('kj', { id: 'new', commandLine: '/bin/true' });
    expect((await client.task.list('kj')).map((t) => t.id)).toEqual(['done', 'busy', 'new']);
  });

  it('ends the task processes of an emulator that was killed before it requeues their tasks', async () => {
    await emu?.stop();
    emu = undefined;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'batch-killed-'));
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, 'emulatorProcess.ts'), dir], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = '';
        child.stdout!.on('data', (c: Buffer) => {
          out += c.toString();
          const m = /READY (\S+)/.exec(out);
          if (m) resolve(m[1]);
        });
        child.once('exit', (code) => reject(new Error(`emulator child exited (${code})`)));
      });
      let client = sdkClient({ url, accountName: DEV_ACCOUNT_NAME, accountKey: DEV_ACCOUNT_KEY });
      await client.pool.add({ id: 'crashed', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
      await waitForNodes(client, 'crashed', 1);
      await client.job.add({ id: 'cj', poolInfo: { poolId: 'crashed' } });
      await client.task.add('cj', { id: 'long', commandLine: `/bin/sh -c 'echo $$ >> $AZ_BATCH_NODE_SHARED_DIR/pids; exec sleep 120'` });
      await waitForTask(client, 'cj', 'long', 'running');
      const [node] = await client.computeNode.list('crashed');
      const pidsFile = path.join(dir, 'nodes', 'crashed', node.id as string, 'shared', 'pids');
      const firstPid = await waitFor('the task to record its pid', async () => Number(readFileSync(pidsFile, 'utf8').trim().split('\n')[0]) || undefined);
      // Let the periodic save record the running task, then kill the emulator: no stop() runs.
      await new Promise((r) => setTimeout(r, 1500));
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      expect(isAlive(firstPid)).toBe(true);

      emu = await startBatchEmulator({ dataDir: dir, persist: true, timing: TIMING, port: Number(new URL(url).port) });
      client = sdkClient(emu);
      // The new emulator sent SIGKILL before it answered; the kernel may take a moment under load (the old task would
      // otherwise sleep on for two minutes).
      await waitFor('the old task process to end', async () => (isAlive(firstPid) ? undefined : true), 5_000);
      const rerun = await waitFor('the task running again', async () => {
        const t = await client.task.get('cj', 'long');
        return t.state === 'running' && t.executionInfo?.requeueCount === 1 ? t : undefined;
      });
      expect(rerun.executionInfo?.retryCount).toBe(0);
      const pids = await waitFor('a second run', async () => {
        const lines = readFileSync(pidsFile, 'utf8').trim().split('\n').map(Number);
        return lines.length === 2 ? lines : undefined;
      });
      expect(pids[1]).not.toBe(firstPid);
      expect(isAlive(pids[1])).toBe(true);
      await emu.stop();
      emu = undefined;
      // stop() sent SIGKILL to the task's group; under load the kernel may take a moment to end it.
      await waitFor('the rerun task process to end', async () => (isAlive(pids[1]) ? undefined : true), 5_000);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await emu?.stop();
      emu = undefined;
      killLeftoverNodeProcesses(dir); // whatever a failed run left
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('an accepted change is on disk when the answer is: a pool deleted and a pool added right before a kill stay so', async () => {
    // The periodic save runs every second; a SIGKILL between an accepted Pool_Delete and that save lost the delete,
    // and the control plane then waited for a pool Batch never deletes. The state file is read right after each answer.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'batch-persist-ack-'));
    const own = await startBatchEmulator({ dataDir: dir, persist: true, timing: TIMING });
    try {
      const client = sdkClient(own);
      const onDisk = () => JSON.parse(readFileSync(path.join(dir, 'state.json'), 'utf8')) as { pools: { id: string; state: string }[] };
      await client.pool.add({ id: 'gone', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 0 });
      expect(onDisk().pools.map((p) => p.id)).toContain('gone');
      await client.pool.deleteMethod('gone');
      const saved = onDisk().pools.find((p) => p.id === 'gone');
      expect(saved === undefined || saved.state === 'deleting').toBe(true);
    } finally {
      await own.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
