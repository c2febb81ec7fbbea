/**
 * Contract (issue 29, category jobs): job operations through the real @azure/batch SDK with Batch's statuses and
 * error codes — 409 JobExists, 404 JobNotFound, disable/enable (409 JobNotActive to disable a job that is not active),
 * terminate (terminateReason, 409 JobCompleted after), patch and update rules, and a job whose pool does not exist
 * yet (Batch takes it; its tasks wait).
 */
import { refusal } from './batchRefusal';
import { emulatorWithPool } from './contractEmulator';
import { signedFetch, waitFor } from '../../local/batch/testing/sdkHelpers';

const POOL = 'jobs-pool';
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('job contract', () => {
  const env = emulatorWithPool(POOL);

  it('409 JobExists for a repeated id (ids compare without case), 404 JobNotFound for an unknown one', async () => {
    const id = uid('Dup');
    await env.client.job.add({ id, poolInfo: { poolId: POOL } });
    expect(await refusal(env.client.job.add({ id: id.toLowerCase(), poolInfo: { poolId: POOL } }))).toMatchObject({ status: 409, code: 'JobExists' });
    expect(await refusal(env.client.job.get('no-such-job'))).toMatchObject({ status: 404, code: 'JobNotFound' });
  });

  it('refuses a job id that is too long or has other characters, and a job without poolInfo', async () => {
    expect(await refusal(env.client.job.add({ id: 'a'.repeat(65), poolInfo: { poolId: POOL } }))).toMatchObject({ status: 400 });
    expect(await refusal(env.client.job.add({ id: 'bad.id!', poolInfo: { poolId: POOL } }))).toMatchObject({ status: 400 });
    const r = await signedFetch(env.emu, 'POST', '/jobs', { id: uid('nopool') });
    expect(r.status).toBe(400);
  });

  it('disables and enables: disabled, then active; disabling a job that is not active is 409 JobNotActive', async () => {
    const id = uid('dis');
    await env.client.job.add({ id, poolInfo: { poolId: POOL } });
    await env.client.job.disable(id, 'requeue');
    await waitFor('disabled', async () => ((await env.client.job.get(id)).state === 'disabled' ? true : undefined));
    expect(await refusal(env.client.job.disable(id, 'requeue'))).toMatchObject({ status: 409, code: 'JobNotActive' });
    await env.client.job.enable(id);
    expect((await env.client.job.get(id)).state).toBe('active');
  });

  it('terminates with the given reason; a completed job refuses terminate and new tasks with 409 JobCompleted', async () => {
    const id = uid('term');
    await env.client.job.add({ id, poolInfo: { poolId: POOL } });
    await env.client.job.terminate(id, { terminateReason: 'ByHand' });
    const done = await waitFor('completed', async () => {
      const j = await env.client.job.get(id);
      return j.state === 'completed' ? j : undefined;
    });
    expect(done.executionInfo?.terminateReason).toBe('ByHand');
    expect(await refusal(env.client.job.terminate(id))).toMatchObject({ status: 409, code: 'JobCompleted' });
    expect(await refusal(env.client.task.add(id, { id: 't', commandLine: '/bin/true' }))).toMatchObject({ status: 409, code: 'JobCompleted' });
  });

  it('patches priority within -1000..1000 and refuses one outside', async () => {
    const id = uid('prio');
    await env.client.job.add({ id, poolInfo: { poolId: POOL } });
    await env.client.job.patch(id, { priority: 500 });
    expect((await env.client.job.get(id)).priority).toBe(500);
    expect(await refusal(env.client.job.patch(id, { priority: 1001 }))).toMatchObject({ status: 400, code: 'InvalidPropertyValue' });
  });

  it('refuses onAllTasksComplete going back from terminatejob to noaction', async () => {
    const id = uid('oatc');
    // A running task keeps the job open (a job with no tasks left would complete at once under terminatejob).
    await env.client.job.add({ id, poolInfo: { poolId: POOL } });
    await env.client.task.add(id, { id: 'long', commandLine: '/bin/sleep 30' });
    await env.client.job.patch(id, { onAllTasksComplete: 'terminatejob' });
    expect(await refusal(env.client.job.patch(id, { onAllTasksComplete: 'noaction' }))).toEqual({
      status: 400,
      code: 'InvalidPropertyValue',
      property: 'onAllTasksComplete',
    });
    await env.client.job.terminate(id);
  });

  it('takes a job on a pool that does not exist: the job is active, its task waits', async () => {
    const id = uid('later');
    await env.client.job.add({ id, poolInfo: { poolId: 'not-yet' } });
    await env.client.task.add(id, { id: 't', commandLine: '/bin/true' });
    expect((await env.client.job.get(id)).state).toBe('active');
    expect((await env.client.task.get(id, 't')).state).toBe('active');
  });
});
