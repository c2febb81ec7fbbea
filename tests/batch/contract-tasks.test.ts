/**
 * Jobs and tasks: what Batch refuses and the user variables it sets, through the real @azure/batch SDK (issue 29).
 * Each refusal here was accepted before.
 */
import type { BatchServiceClient } from '@azure/batch';
import { FAST_TIMING, refusal } from './batchRefusal';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';

const POOL = 'tasks-pool';
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

describe('job and task contract', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: FAST_TIMING });
    client = sdkClient(emu);
    await client.pool.add({
      id: POOL,
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 1,
      userAccounts: [{ name: 'runner', password: 'p@ssw0rd-Local1' }],
    });
    await waitForNodes(client, POOL, 1);
  });
  afterAll(async () => {
    await emu?.stop();
  });

  it('refuses job preparation and release task ids with characters other than letters, digits, - and _', async () => {
    for (const [key, id] of [
      ['jobPreparationTask', 'prep.1'],
      ['jobReleaseTask', 'rel.1'],
      ['jobPreparationTask', 'x'.repeat(65)],
    ] as const) {
      const job = { id: uid('job'), poolInfo: { poolId: POOL }, jobPreparationTask: { commandLine: '/bin/true' }, [key]: { id, commandLine: '/bin/true' } };
      expect(await refusal(client.job.add(job))).toEqual({ status: 400, code: 'InvalidPropertyValue', property: `${key}.id` });
    }
    await client.job.add({ id: uid('job'), poolInfo: { poolId: POOL }, jobPreparationTask: { id: 'prep_1-a', commandLine: '/bin/true' } });
  });

  it('refuses a preparation task maxTaskRetryCount below -1', async () => {
    const job = { id: uid('job'), poolInfo: { poolId: POOL }, jobPreparationTask: { commandLine: '/bin/true', constraints: { maxTaskRetryCount: -2 } } };
    expect(await refusal(client.job.add(job))).toEqual({
      status: 400,
      code: 'InvalidPropertyValue',
      property: 'jobPreparationTask.constraints.maxTaskRetryCount',
    });
  });

  describe('on a job', () => {
    const job = uid('job');
    beforeAll(async () => {
      await client.job.add({ id: job, poolInfo: { poolId: POOL }, usesTaskDependencies: true });
    });

    it('refuses a userIdentity with both username and autoUser', async () => {
      const task = { id: uid('t'), commandLine: '/bin/true', userIdentity: { userName: 'runner', autoUser: { elevationLevel: 'admin' as const } } };
      expect(await refusal(client.task.add(job, task))).toEqual({ status: 400, code: 'InvalidPropertyValue', property: 'userIdentity.autoUser' });
    });

    it("refuses a username that is not one of the pool's user accounts", async () => {
      expect(await refusal(client.task.add(job, { id: uid('t'), commandLine: '/bin/true', userIdentity: { userName: 'ghost' } }))).toEqual({
        status: 400,
        code: 'InvalidPropertyValue',
        property: 'userIdentity.username',
      });
    });

    it('refuses a reversed taskIdRanges (start after end)', async () => {
      const task = { id: uid('t'), commandLine: '/bin/true', dependsOn: { taskIdRanges: [{ start: 9, end: 3 }] } };
      expect(await refusal(client.task.add(job, task))).toEqual({ status: 400, code: 'InvalidPropertyValue', property: 'dependsOn.taskIdRanges[0].end' });
    });

    it('refuses the same rules inside a task collection, naming the task', async () => {
      const res = await client.task.addCollection(job, [{ id: uid('t'), commandLine: '/bin/true', userIdentity: { userName: 'ghost' } }]);
      expect(res.value?.[0]?.status).toBe('clienterror');
      expect(res.value?.[0]?.error?.code).toBe('InvalidPropertyValue');
    });

    it('sets AZ_BATCH_TASK_USER and AZ_BATCH_TASK_USER_IDENTITY for the auto user and for a named user', async () => {
      const cmd = '/bin/sh -c \'echo "$AZ_BATCH_TASK_USER|$AZ_BATCH_TASK_USER_IDENTITY"\'';
      const cases = [
        [uid('auto'), undefined, '_azbatch|PoolNonAdmin'],
        [uid('admin'), { autoUser: { scope: 'task' as const, elevationLevel: 'admin' as const } }, '_azbatch|TaskAdmin'],
        [uid('named'), { userName: 'runner' }, 'runner|runner'],
      ] as const;
      for (const [id, userIdentity] of cases) await client.task.add(job, { id, commandLine: cmd, userIdentity });
      for (const [id, , expected] of cases) {
        await waitForTask(client, job, id);
        expect(await readTaskFile(client, job, id, 'stdout.txt')).toBe(`${expected}\n`);
      }
    });
  });
});
