/**
 * A repeated task add that finds its Batch job completed (the first add went through and the job ended with its tasks,
 * as after a storage loss rolled the orchestration's history back past the add while Batch kept going): the task that
 * is there is the answer; a task that is not there is refused with Batch's JobCompleted. Against the emulator, which
 * answers 409 JobCompleted as Batch does.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { addNodeTask, createJob, terminateJob, type BatchContext } from '../../shared/adapters/batch';
import { emulatorBatchContext } from './emulatorContext';

let emu: BatchEmulatorHandle;
let ctx: BatchContext;

beforeAll(async () => {
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 } });
  ctx = emulatorBatchContext(emu);
});
afterAll(async () => {
  await emu?.stop();
});

test('a repeated add to a completed job finds its task; a new task is refused with JobCompleted', async () => {
  await ctx.client.pool.add({
    id: 'done-pool',
    vmSize: 'standard_d2s_v3',
    targetDedicatedNodes: 0,
    virtualMachineConfiguration: {
      imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
      nodeAgentSKUId: 'batch.node.ubuntu 22.04',
    },
  });
  await createJob(ctx, { batchJobId: 'done-job', jobId: 'done', poolId: 'done-pool' });
  const spec = { id: 't-1', affinityId: 'none', commandLine: '/bin/true' };
  expect(await addNodeTask(ctx, 'done-job', spec)).toEqual({ taskId: 't-1', created: true });
  await terminateJob(ctx, 'done-job', 'test');
  for (let i = 0; (await ctx.client.job.get('done-job')).state !== 'completed'; i++) {
    if (i > 200) throw new Error('the job never completed');
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(await addNodeTask(ctx, 'done-job', spec)).toEqual({ taskId: 't-1', created: false });
  await expect(addNodeTask(ctx, 'done-job', { ...spec, commandLine: '/bin/false' })).rejects.toMatchObject({ code: 'TaskExists' });
  await expect(addNodeTask(ctx, 'done-job', { ...spec, id: 't-2' })).rejects.toMatchObject({ code: 'JobCompleted', status: 409 });
});
