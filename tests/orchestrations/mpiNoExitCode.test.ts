/**
 * An MPI task Batch ended before its program exited has no exit code: the result says so (noExitCode, placeholder
 * -1) instead of the 0 the collector used to invent, which read as a success in the job's attempts. The case is the
 * pipeline's own: a node was lost, Batch requeued the task, the orchestrator terminated it while it waited.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { addMpiTask, createJob, createJobPool, getPoolSnapshot, getTask, terminateTask, type BatchContext } from '../../shared/adapters/batch';
import { collectMpiResult } from '../../orchestrations/activities/mpi';
import { classifyAttempt } from '../../shared/core/planning/failureClass';
import { until } from '../batch/until';
import { emulatorBatchContext } from '../batch/emulatorContext';

let emu: BatchEmulatorHandle;
let ctx: BatchContext;

beforeAll(async () => {
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 } });
  ctx = emulatorBatchContext(emu);
  await createJobPool(ctx, {
    poolId: 'noexit-pool',
    jobId: 'noexit',
    vmSize: 'standard_hb120rs_v3',
    targetDedicatedNodes: 1,
    image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
  });
  await until('1 idle node', async () => {
    const s = await getPoolSnapshot(ctx, 'noexit-pool');
    return s && s.nodes.length === 1 && s.nodes.every((n) => n.state === 'idle') ? true : undefined;
  });
  await createJob(ctx, { batchJobId: 'noexit-job', jobId: 'noexit', poolId: 'noexit-pool' });
});

afterAll(async () => {
  await emu?.stop();
});

test('a task terminated while it waited for nodes: noExitCode, exit code -1, never 0', async () => {
  // Two instances on a one-node pool: the task waits, active, as a requeued task does after its node was lost.
  await addMpiTask(ctx, {
    batchJobId: 'noexit-job',
    taskId: 'mpi',
    numberOfInstances: 2,
    coordinationCommandLine: '/bin/true',
    applicationCommandLine: '/bin/true',
    environment: [],
    commonResourceFiles: [],
    maxWallClockSeconds: 60,
    maxTaskRetryCount: 0,
  });
  expect((await getTask(ctx, 'noexit-job', 'mpi')).state).toBe('active');
  await terminateTask(ctx, 'noexit-job', 'mpi');
  await until('the task completed', async () => ((await getTask(ctx, 'noexit-job', 'mpi')).state === 'completed' ? true : undefined));

  const r = await collectMpiResult({ batch: ctx, accountUrl: emu.url }, { batchJobId: 'noexit-job', taskId: 'mpi' });
  expect(r).toMatchObject({ exitCode: -1, noExitCode: true });

  // Not a success even without the requeue flag; a node failure records no exit code.
  const end = { kind: 'mpi' as const, exitCode: r.exitCode, noExitCode: r.noExitCode, failure: r.failure, subtasks: [] };
  expect(classifyAttempt({ ...end, exitCode: 0, requeued: false }, ['n0'], [{ id: 'n0', state: 'idle' }], [])).toEqual({
    outcome: 'failed',
    failureClass: 'application',
    reason: 'MPI task ended without an exit code',
    nodes: [],
  });
  const lost = classifyAttempt({ ...end, requeued: true }, ['n0'], [{ id: 'n0', state: 'unusable' }], []);
  expect(lost).toEqual({ outcome: 'failed', failureClass: 'nodeFailure', reason: 'node failure: n0 unusable', nodes: ['n0'] });
  expect(classifyAttempt({ ...end, requeued: true }, ['n0'], [{ id: 'n0', state: 'idle' }], [])).not.toHaveProperty('exitCode');
});
