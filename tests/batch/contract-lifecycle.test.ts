/**
 * Contract (issue 29, category lifecycle): the state changes of pools, jobs and tasks as Batch reports them,
 * through the real @azure/batch SDK — allocation resizing → steady, deletion states (deleting, then 404; 409
 * PoolBeingDeleted / JobBeingDeleted meanwhile), auto-complete (onAllTasksComplete terminatejob ends the job with
 * terminateReason AllTasksComplete), task results (success / failure with the exit code).
 */
import type { BatchServiceClient } from '@azure/batch';
import { FAST_TIMING, refusal } from './batchRefusal';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, sdkClient, waitFor, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

const POOL = 'life-pool';
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('lifecycle contract', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: FAST_TIMING });
    client = sdkClient(emu);
    await client.pool.add({ id: POOL, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
    await waitForNodes(client, POOL, 1);
  });
  afterAll(async () => {
    await emu?.stop();
  });

  it('a pool is active and steady once its nodes are up', async () => {
    const pool = await client.pool.get(POOL);
    expect(pool).toMatchObject({ state: 'active', allocationState: 'steady', currentDedicatedNodes: 1 });
  });

  it('a deleted pool is deleting (409 PoolBeingDeleted to changes), then 404 PoolNotFound', async () => {
    const id = uid('gone');
    await client.pool.add({ id, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
    await waitForNodes(client, id, 1);
    await client.pool.deleteMethod(id);
    const during = await client.pool.get(id).catch(() => undefined);
    if (during) {
      expect(during.state).toBe('deleting');
      expect(await refusal(client.pool.resize(id, { targetDedicatedNodes: 2 }))).toMatchObject({ status: 409, code: 'PoolBeingDeleted' });
    }
    await waitFor('the pool to go', async () => ((await refusal(client.pool.get(id))).code === 'PoolNotFound' ? true : undefined));
    expect(await refusal(client.pool.get(id))).toMatchObject({ status: 404, code: 'PoolNotFound' });
  });

  it('tasks end completed with result success, or failure and the exit code', async () => {
    const job = uid('job');
    await client.job.add({ id: job, poolInfo: { poolId: POOL } });
    await client.task.add(job, { id: 'ok', commandLine: '/bin/true' });
    await client.task.add(job, { id: 'bad', commandLine: "/bin/sh -c 'exit 3'" });
    const ok = await waitForTask(client, job, 'ok');
    const bad = await waitForTask(client, job, 'bad');
    expect(ok.executionInfo).toMatchObject({ result: 'success', exitCode: 0 });
    expect(bad.executionInfo).toMatchObject({ result: 'failure', exitCode: 3 });
    expect(bad.executionInfo?.failureInfo?.category).toBe('usererror');
    expect(ok.previousState).toBe('running');
  });

  it('auto-complete: onAllTasksComplete terminatejob completes the job with AllTasksComplete', async () => {
    const job = uid('auto');
    await client.job.add({ id: job, poolInfo: { poolId: POOL } });
    await client.task.add(job, { id: 't', commandLine: '/bin/true' });
    await client.job.patch(job, { onAllTasksComplete: 'terminatejob' });
    const done = await waitFor('the job to complete', async () => {
      const j = await client.job.get(job);
      return j.state === 'completed' ? j : undefined;
    });
    expect(done.executionInfo?.terminateReason).toBe('AllTasksComplete');
    expect(await refusal(client.task.add(job, { id: 'late', commandLine: '/bin/true' }))).toMatchObject({ status: 409, code: 'JobCompleted' });
  });

  it('a deleted job is deleting (409 JobBeingDeleted to new tasks), then 404 JobNotFound', async () => {
    const job = uid('del');
    await client.job.add({ id: job, poolInfo: { poolId: POOL } });
    await client.task.add(job, { id: 'sleepy', commandLine: '/bin/sleep 30' });
    await waitForTask(client, job, 'sleepy', 'running');
    await client.job.deleteMethod(job);
    const during = await client.job.get(job).catch(() => undefined);
    if (during) {
      expect(during.state).toBe('deleting');
      expect(await refusal(client.task.add(job, { id: 'x', commandLine: '/bin/true' }))).toMatchObject({ status: 409, code: 'JobBeingDeleted' });
    }
    await waitFor('the job to go', async () => ((await refusal(client.job.get(job))).code === 'JobNotFound' ? true : undefined));
  });
});
