/**
 * With `persist`, a restarted emulator on the same dataDir still has its pools, nodes, jobs and
 * tasks; tasks that were running when it stopped are requeued and run again.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
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

  it('keeps the account and requeues what was running', async () => {
    emu = await startBatchEmulator({ dataDir, persist: true, timing: TIMING });
    let client = sdkClient(emu);
    await client.pool.add({ id: 'keep', vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1, taskSlotsPerNode: 2 });
    const [before] = await waitForNodes(client, 'keep', 1);
    await client.job.add({ id: 'kj', poolInfo: { poolId: 'keep' } });
    await client.task.add('kj', { id: 'done', commandLine: '/bin/sh -c "echo finished"' });
    await waitForTask(client, 'kj', 'done');
    await client.task.add('kj', { id: 'busy', commandLine: `/bin/sh -c 'echo run >> $AZ_BATCH_NODE_SHARED_DIR/runs; sleep 30'` });
    await waitForTask(client, 'kj', 'busy', 'running');
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
    // The sandbox survived: the first run's line is still there, and the rerun added its own.
    await waitFor('second run recorded', async () => ((await client.file.getPropertiesFromComputeNode('keep', before.id as string, 'shared/runs')).contentLength === 8 ? true : undefined));
    await client.task.add('kj', { id: 'new', commandLine: '/bin/true' });
    expect((await client.task.list('kj')).map((t) => t.id)).toEqual(['done', 'busy', 'new']);
  });
});
