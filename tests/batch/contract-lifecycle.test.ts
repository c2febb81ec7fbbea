/**
 * Contract (issue 29, category lifecycle): the state changes of pools, jobs and tasks as Batch reports them,
 * through the real @azure/batch SDK — allocation resizing → steady, deletion states (deleting, then 404; 409
 * PoolBeingDeleted / JobBeingDeleted meanwhile), auto-complete (onAllTasksComplete terminatejob ends the job with
 * terminateReason AllTasksComplete), task results (success / failure with the exit code).
 */
import { refusal } from './batchRefusal';
import { emulatorWithPool } from './contractEmulator';
import { LINUX_VM_CONFIGURATION, waitFor, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

const POOL = 'life-pool';
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('lifecycle contract', () => {
  const env = emulatorWithPool(POOL);

  it('a pool is active and steady once its nodes are up', async () => {
    const pool = await env.client.pool.get(POOL);
    expect(pool).toMatchObject({ state: 'active', allocationState: 'steady', currentDedicatedNodes: 1 });
  });

  it('a deleted pool is deleting (409 PoolBeingDeleted to changes), then 404 PoolNotFound', async () => {
    const id = uid('gone');
    await env.client.pool.add({ id, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
    await waitForNodes(env.client, id, 1);
    await env.client.pool.deleteMethod(id);
    const during = await env.client.pool.get(id).catch(() => undefined);
    if (during) {
      expect(during.state).toBe('deleting');
      expect(await refusal(env.client.pool.resize(id, { targetDedicatedNodes: 2 }))).toMatchObject({ status: 409, code: 'PoolBeingDeleted' });
    }
    await waitFor('the pool to go', async () => ((await refusal(env.client.pool.get(id))).code === 'PoolNotFound' ? true : undefined));
    expect(await refusal(env.client.pool.get(id))).toMatchObject({ status: 404, code: 'PoolNotFound' });
  });

  it('tasks end completed with result success, or failure and the exit code', async () => {
    const job = uid('job');
    await env.client.job.add({ id: job, poolInfo: { poolId: POOL } });
    await env.client.task.add(job, { id: 'ok', commandLine: '/bin/true' });
    await env.client.task.add(job, { id: 'bad', commandLine: "/bin/sh -c 'exit 3'" });
    const ok = await waitForTask(env.client, job, 'ok');
    const bad = await waitForTask(env.client, job, 'bad');
    expect(ok.executionInfo).toMatchObject({ result: 'success', exitCode: 0 });
    expect(bad.executionInfo).toMatchObject({ result: 'failure', exitCode: 3 });
    expect(bad.executionInfo?.failureInfo?.category).toBe('usererror');
    expect(ok.previousState).toBe('running');
  });

  it('auto-complete: onAllTasksComplete terminatejob completes the job with AllTasksComplete', async () => {
    const job = uid('auto');
    await env.client.job.add({ id: job, poolInfo: { poolId: POOL } });
    await env.client.task.add(job, { id: 't', commandLine: '/bin/true' });
    await env.client.job.patch(job, { onAllTasksComplete: 'terminatejob' });
    const done = await waitFor('the job to complete', async () => {
      const j = await env.client.job.get(job);
      return j.state === 'completed' ? j : undefined;
    });
    expect(done.executionInfo?.terminateReason).toBe('AllTasksComplete');
    expect(await refusal(env.client.task.add(job, { id: 'late', commandLine: '/bin/true' }))).toMatchObject({ status: 409, code: 'JobCompleted' });
  });

  it('a deleted job is deleting (409 JobBeingDeleted to new tasks), then 404 JobNotFound', async () => {
    const job = uid('del');
    await env.client.job.add({ id: job, poolInfo: { poolId: POOL } });
    await env.client.task.add(job, { id: 'sleepy', commandLine: '/bin/sleep 30' });
    await waitForTask(env.client, job, 'sleepy', 'running');
    await env.client.job.deleteMethod(job);
    const during = await env.client.job.get(job).catch(() => undefined);
    if (during) {
      expect(during.state).toBe('deleting');
      expect(await refusal(env.client.task.add(job, { id: 'x', commandLine: '/bin/true' }))).toMatchObject({ status: 409, code: 'JobBeingDeleted' });
    }
    await waitFor('the job to go', async () => ((await refusal(env.client.job.get(job))).code === 'JobNotFound' ? true : undefined));
  });
});
