/**
 * Contract (issue 29, category jobs): job operations through the real @azure/batch SDK with Batch's statuses and
 * error codes — 409 JobExists, 404 JobNotFound, disable/enable (409 JobNotActive to disable a job that is not active),
 * terminate (terminateReason, 409 JobCompleted after), patch and update rules, and a job whose pool does not exist
 * yet (Batch takes it; its tasks wait).
 */
import type { BatchServiceClient } from '@azure/batch';
import { FAST_TIMING, refusal } from './batchRefusal';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, sdkClient, signedFetch, waitFor, waitForNodes } from '../../local/batch/testing/sdkHelpers';

const POOL = 'jobs-pool';
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('job contract', () => {
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

  it('409 JobExists for a repeated id (ids compare without case), 404 JobNotFound for an unknown one', async () => {
    const id = uid('Dup');
    await client.job.add({ id, poolInfo: { poolId: POOL } });
    expect(await refusal(client.job.add({ id: id.toLowerCase(), poolInfo: { poolId: POOL } }))).toMatchObject({ status: 409, code: 'JobExists' });
    expect(await refusal(client.job.get('no-such-job'))).toMatchObject({ status: 404, code: 'JobNotFound' });
  });

  it('refuses a job id that is too long or has other characters, and a job without poolInfo', async () => {
    expect(await refusal(client.job.add({ id: 'a'.repeat(65), poolInfo: { poolId: POOL } }))).toMatchObject({ status: 400 });
    expect(await refusal(client.job.add({ id: 'bad.id!', poolInfo: { poolId: POOL } }))).toMatchObject({ status: 400 });
    const r = await signedFetch(emu, 'POST', '/jobs', { id: uid('nopool') });
    expect(r.status).toBe(400);
  });

  it('disables and enables: disabled, then active; disabling a job that is not active is 409 JobNotActive', async () => {
    const id = uid('dis');
    await client.job.add({ id, poolInfo: { poolId: POOL } });
    await client.job.disable(id, 'requeue');
    await waitFor('disabled', async () => ((await client.job.get(id)).state === 'disabled' ? true : undefined));
    expect(await refusal(client.job.disable(id, 'requeue'))).toMatchObject({ status: 409, code: 'JobNotActive' });
    await client.job.enable(id);
    expect((await client.job.get(id)).state).toBe('active');
  });

  it('terminates with the given reason; a completed job refuses terminate and new tasks with 409 JobCompleted', async () => {
    const id = uid('term');
    await client.job.add({ id, poolInfo: { poolId: POOL } });
    await client.job.terminate(id, { terminateReason: 'ByHand' });
    const done = await waitFor('completed', async () => {
      const j = await client.job.get(id);
      return j.state === 'completed' ? j : undefined;
    });
    expect(done.executionInfo?.terminateReason).toBe('ByHand');
    expect(await refusal(client.job.terminate(id))).toMatchObject({ status: 409, code: 'JobCompleted' });
    expect(await refusal(client.task.add(id, { id: 't', commandLine: '/bin/true' }))).toMatchObject({ status: 409, code: 'JobCompleted' });
  });

  it('patches priority within -1000..1000 and refuses one outside', async () => {
    const id = uid('prio');
    await client.job.add({ id, poolInfo: { poolId: POOL } });
    await client.job.patch(id, { priority: 500 });
    expect((await client.job.get(id)).priority).toBe(500);
    expect(await refusal(client.job.patch(id, { priority: 1001 }))).toMatchObject({ status: 400, code: 'InvalidPropertyValue' });
  });

  it('refuses onAllTasksComplete going back from terminatejob to noaction', async () => {
    const id = uid('oatc');
    // A running task keeps the job open (a job with no tasks left would complete at once under terminatejob).
    await client.job.add({ id, poolInfo: { poolId: POOL } });
    await client.task.add(id, { id: 'long', commandLine: '/bin/sleep 30' });
    await client.job.patch(id, { onAllTasksComplete: 'terminatejob' });
    expect(await refusal(client.job.patch(id, { onAllTasksComplete: 'noaction' }))).toEqual({ status: 400, code: 'InvalidPropertyValue', property: 'onAllTasksComplete' });
    await client.job.terminate(id);
  });

  it('takes a job on a pool that does not exist: the job is active, its task waits', async () => {
    const id = uid('later');
    await client.job.add({ id, poolInfo: { poolId: 'not-yet' } });
    await client.task.add(id, { id: 't', commandLine: '/bin/true' });
    expect((await client.job.get(id)).state).toBe('active');
    expect((await client.task.get(id, 't')).state).toBe('active');
  });
});
