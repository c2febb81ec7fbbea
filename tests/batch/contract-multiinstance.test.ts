/**
 * Contract (issue 29, category multi-instance): a multi-instance task through the real @azure/batch SDK runs its
 * coordination command on every node and its application command on the primary, lists its subtasks, and sets
 * Batch's variables (AZ_BATCH_HOST_LIST, AZ_BATCH_NODE_LIST, AZ_BATCH_MASTER_NODE, AZ_BATCH_IS_CURRENT_NODE_MASTER,
 * AZ_BATCH_TASK_SHARED_DIR); what Batch refuses is refused.
 */
import type { BatchServiceClient } from '@azure/batch';
import { FAST_TIMING, refusal } from './batchRefusal';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, signedFetch, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

const POOL = 'mi-pool';
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('multi-instance contract', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  let job: string;
  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: FAST_TIMING });
    client = sdkClient(emu);
    await client.pool.add({
      id: POOL,
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 2,
      enableInterNodeCommunication: true,
      taskSlotsPerNode: 1,
    });
    await waitForNodes(client, POOL, 2);
    job = uid('job');
    await client.job.add({ id: job, poolInfo: { poolId: POOL } });
  });
  afterAll(async () => {
    await emu?.stop();
  });

  it('runs coordination on every node and the application on the primary, with the Batch variables', async () => {
    const nodes = await client.computeNode.list(POOL);
    await client.task.add(job, {
      id: 'mi',
      commandLine:
        "/bin/sh -c 'echo hosts=$AZ_BATCH_HOST_LIST; echo nodes=$AZ_BATCH_NODE_LIST; echo master=$AZ_BATCH_MASTER_NODE; echo ismaster=$AZ_BATCH_IS_CURRENT_NODE_MASTER; cat $AZ_BATCH_TASK_SHARED_DIR/coord-*'",
      multiInstanceSettings: {
        numberOfInstances: 2,
        coordinationCommandLine: "/bin/sh -c 'echo $AZ_BATCH_NODE_ID > $AZ_BATCH_TASK_SHARED_DIR/coord-$AZ_BATCH_NODE_ID'",
      },
    });
    const task = await waitForTask(client, job, 'mi');
    expect(task.executionInfo?.result).toBe('success');
    const out = await readTaskFile(client, job, 'mi', 'stdout.txt');
    const ips = nodes.map((n) => String(n.ipAddress)).sort();
    expect(out).toMatch(/^ismaster=true$/m);
    const hosts = /^hosts=(.*)$/m.exec(out)?.[1].split(',').sort();
    expect(hosts).toEqual(ips);
    const master = /^master=(.*)$/m.exec(out)?.[1] ?? '';
    expect(ips.map((ip) => master.startsWith(ip)).some(Boolean)).toBe(true);
    // AZ_BATCH_NODE_LIST: the same addresses, ';'-separated.
    expect(/^nodes=(.*)$/m.exec(out)?.[1].split(';').sort()).toEqual(ips);
    // The coordination command ran on the primary before the application command (it wrote the file cat read).
    expect(out.split('\n').some((line) => nodes.some((n) => line === n.id))).toBe(true);
  });

  it('lists its subtasks, each completed on its own node', async () => {
    const subtasks = await client.task.listSubtasks(job, 'mi');
    const ids = (subtasks.value ?? []).map((s) => s.id);
    expect(ids.length).toBeGreaterThanOrEqual(1);
    for (const s of subtasks.value ?? []) expect(s.state).toBe('completed');
    const nodes = new Set((subtasks.value ?? []).map((s) => s.nodeInfo?.nodeId));
    expect(nodes.size).toBe(subtasks.value?.length);
  });

  it('an ordinary task has no subtasks', async () => {
    await client.task.add(job, { id: 'plain', commandLine: '/bin/true' });
    await waitForTask(client, job, 'plain');
    expect((await client.task.listSubtasks(job, 'plain')).value ?? []).toEqual([]);
  });

  it('refuses numberOfInstances below 1 and requiredSlots other than 1', async () => {
    const zero = await signedFetch(emu, 'POST', `/jobs/${job}/tasks`, {
      id: uid('zero'),
      commandLine: '/bin/true',
      multiInstanceSettings: { numberOfInstances: 0, coordinationCommandLine: '/bin/true' },
    });
    expect({ status: zero.status, code: (zero.json as { code?: string }).code }).toEqual({ status: 400, code: 'InvalidPropertyValue' });
    // api-version 2022-10-01 requires the coordination command line.
    const noCoord = await signedFetch(emu, 'POST', `/jobs/${job}/tasks`, {
      id: uid('nocoord'),
      commandLine: '/bin/true',
      multiInstanceSettings: { numberOfInstances: 2 },
    });
    expect({ status: noCoord.status, code: (noCoord.json as { code?: string }).code }).toEqual({ status: 400, code: 'MissingRequiredProperty' });
    expect(
      await refusal(
        client.task.add(job, {
          id: uid('slots'),
          commandLine: '/bin/true',
          requiredSlots: 2,
          multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: '/bin/true' },
        }),
      ),
    ).toEqual({ status: 400, code: 'InvalidPropertyValue', property: 'requiredSlots' });
  });
});
