/**
 * Every function of the Batch adapter (shared/adapters/batch) through the real @azure/batch SDK against the
 * local Batch emulator: pools, nodes, jobs with preparation/release tasks, node-pinned tasks, the
 * multi-instance task, bounded file reads, idempotent creates and deletes, and error context.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import {
  BatchError,
  addMpiTask,
  addNodeTask,
  createJob,
  createJobPool,
  deleteJob,
  deletePool,
  deleteTask,
  enableAutoTerminate,
  getJob,
  getNodeLifecycleStatus,
  getPoolSnapshot,
  getTask,
  inspectPool,
  listNodes,
  listOwnedJobs,
  listOwnedPools,
  listSubtasks,
  listTaskFiles,
  listTasks,
  readNodeFile,
  readTaskFile,
  removeNodes,
  resizePool,
  terminateJob,
  terminateTask,
  type BatchContext,
  type JobPoolSpec,
  type PoolSnapshot,
  type TaskSnapshot,
} from '../../shared/adapters/batch';
import { until } from './until';
import { emulatorBatchContext } from './emulatorContext';

const JOB = 'adapterjob';
const POOL = `${JOB}-pool`;
const BATCH_JOB = `${JOB}-run`;

const completed = (ctx: BatchContext, job: string, task: string) =>
  until<TaskSnapshot>(`task ${task} completed`, async () => {
    const t = await getTask(ctx, job, task);
    return t.state === 'completed' ? t : undefined;
  });

const poolSpec: JobPoolSpec = {
  poolId: POOL,
  jobId: JOB,
  vmSize: 'standard_hb120rs_v3',
  targetDedicatedNodes: 2,
  image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
  nodeAgentSkuId: 'batch.node.ubuntu 22.04',
  startTask: { commandLine: '/bin/sh -c "echo start task on $AZ_BATCH_NODE_ID"', waitForSuccess: true },
};

describe('Batch adapter against the emulator', () => {
  let emu: BatchEmulatorHandle;
  let ctx: BatchContext;
  let ready: PoolSnapshot;

  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 } });
    ctx = emulatorBatchContext(emu);
  });

  afterAll(async () => {
    await emu?.stop();
  });

  test('createJobPool creates once; a repeat is success; another job cannot claim it', async () => {
    expect(await createJobPool(ctx, poolSpec)).toEqual({ poolId: POOL, created: true });
    expect(await createJobPool(ctx, poolSpec)).toEqual({ poolId: POOL, created: false });
    const err = await createJobPool(ctx, { ...poolSpec, jobId: 'someoneelse' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BatchError);
    expect(err).toMatchObject({ code: 'PoolExists', operation: 'pools.create', resource: `pool ${POOL}` });
    expect((err as Error).message).toMatch(/not ours for job someoneelse \(owner job: adapterjob/);
  });

  test('inspectPool and listOwnedPools see the ownership tags and MPI settings', async () => {
    expect(await inspectPool(ctx, POOL)).toMatchObject({
      exists: true,
      state: 'active',
      enableInterNodeCommunication: true,
      taskSlotsPerNode: 1,
      ownedByJob: JOB,
    });
    expect(await inspectPool(ctx, 'nosuchpool')).toEqual({ exists: false });
    expect(await listOwnedPools(ctx)).toEqual([expect.objectContaining({ poolId: POOL, jobId: JOB, state: 'active' })]);
  });

  test('getPoolSnapshot reports allocation until the nodes are idle', async () => {
    ready = await until('2 idle nodes', async () => {
      const s = await getPoolSnapshot(ctx, POOL);
      return s && s.nodes.length === 2 && s.nodes.every((n) => n.state === 'idle') ? s : undefined;
    });
    expect(ready).toMatchObject({
      poolId: POOL,
      state: 'active',
      allocationState: 'steady',
      currentDedicatedNodes: 2,
      targetDedicatedNodes: 2,
      resizeErrors: [],
    });
    for (const n of ready.nodes) {
      expect(n.ipAddress).toMatch(/^127\./);
      expect(n.affinityId).not.toBe('');
      expect(n.startTask).toMatchObject({ state: 'completed', exitCode: 0 });
    }
    expect(await listNodes(ctx, POOL)).toEqual(ready.nodes);
    expect(await getPoolSnapshot(ctx, 'nosuchpool')).toBeUndefined();
  });

  test('the start task output is readable as a node file', async () => {
    const node = ready.nodes[0];
    const f = await readNodeFile(ctx, POOL, node.id, 'startup/stdout.txt');
    expect(f).toMatchObject({ exists: true, truncated: false });
    expect(f.content).toContain(`start task on ${node.id}`);
    expect(await readNodeFile(ctx, POOL, node.id, 'startup/nosuch.txt')).toEqual({ exists: false, size: 0, content: '', truncated: false });
  });

  test('createJob with preparation and release tasks is idempotent and tagged', async () => {
    const spec = {
      batchJobId: BATCH_JOB,
      jobId: JOB,
      poolId: POOL,
      preparationTask: { commandLine: '/bin/sh -c "echo prep"' },
      releaseTask: { commandLine: '/bin/sh -c "echo release"' },
      environment: [{ name: 'JOB_WIDE', value: 'yes' }],
    };
    expect(await createJob(ctx, spec)).toEqual({ batchJobId: BATCH_JOB, created: true });
    expect(await createJob(ctx, spec)).toEqual({ batchJobId: BATCH_JOB, created: false });
    await expect(createJob(ctx, { ...spec, poolId: 'otherpool' })).rejects.toMatchObject({ code: 'JobExists', status: 409 });
    expect(await getJob(ctx, BATCH_JOB)).toMatchObject({ state: 'active', poolId: POOL, onAllTasksComplete: 'noaction', ownedByJob: JOB });
    expect(await listOwnedJobs(ctx)).toEqual([expect.objectContaining({ batchJobId: BATCH_JOB, jobId: JOB })]);
    expect(await getJob(ctx, 'nosuchjob')).toBeUndefined();
  });

  test('addNodeTask pins a task to a node; the snapshot says where it ran; files are read bounded', async () => {
    const target = ready.nodes[1];
    const spec = {
      id: 'pin-1',
      affinityId: target.affinityId,
      commandLine: '/bin/sh -c "echo on $AZ_BATCH_NODE_ID env=$JOB_WIDE; echo oops >&2; seq 1 2000"',
      maxWallClockSeconds: 60,
    };
    expect(await addNodeTask(ctx, BATCH_JOB, spec)).toEqual({ taskId: 'pin-1', created: true });
    expect(await addNodeTask(ctx, BATCH_JOB, spec)).toEqual({ taskId: 'pin-1', created: false });
    await expect(addNodeTask(ctx, BATCH_JOB, { ...spec, commandLine: '/bin/true' })).rejects.toMatchObject({ code: 'TaskExists' });

    const t = await completed(ctx, BATCH_JOB, 'pin-1');
    expect(t).toMatchObject({ state: 'completed', exitCode: 0, result: 'success', nodeId: target.id, poolId: POOL });
    expect(t.startTime).toBeDefined();

    const whole = await readTaskFile(ctx, BATCH_JOB, 'pin-1', 'stdout.txt');
    expect(whole.exists).toBe(true);
    expect(whole.content.startsWith(`on ${target.id} env=yes\n1\n`)).toBe(true);
    expect(whole.content.length).toBe(whole.size);
    const tail = await readTaskFile(ctx, BATCH_JOB, 'pin-1', 'stdout.txt', { maxBytes: 10 });
    expect(tail).toEqual({ exists: true, size: whole.size, content: whole.content.slice(-10), truncated: true });
    const head = await readTaskFile(ctx, BATCH_JOB, 'pin-1', 'stdout.txt', { maxBytes: 5, from: 'start' });
    expect(head.content).toBe(whole.content.slice(0, 5));
    expect((await readTaskFile(ctx, BATCH_JOB, 'pin-1', 'stderr.txt')).content).toBe('oops\n');
    expect((await readTaskFile(ctx, BATCH_JOB, 'pin-1', 'nosuch.txt')).exists).toBe(false);

    const files = await listTaskFiles(ctx, BATCH_JOB, 'pin-1');
    expect(files).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'stdout.txt', isDirectory: false, size: whole.size })]));
  });

  test('a failing node task reports exit code and failure', async () => {
    await addNodeTask(ctx, BATCH_JOB, { id: 'pin-fail', affinityId: ready.nodes[0].affinityId, commandLine: '/bin/sh -c "exit 3"' });
    const t = await completed(ctx, BATCH_JOB, 'pin-fail');
    expect(t).toMatchObject({ exitCode: 3, result: 'failure', failure: { category: 'usererror' } });
  });

  test('addMpiTask runs on every node; subtasks say where; auto-terminate ends the job', async () => {
    const spec = {
      batchJobId: BATCH_JOB,
      taskId: 'mpi',
      numberOfInstances: 2,
      coordinationCommandLine: '/bin/sh -c "echo coord on $AZ_BATCH_NODE_ID"',
      applicationCommandLine: '/bin/sh -c "echo hosts=$AZ_BATCH_HOST_LIST master=$AZ_BATCH_IS_CURRENT_NODE_MASTER"',
      environment: [{ name: 'MPI_FLAVOUR', value: 'openmpi' }],
      commonResourceFiles: [],
      maxWallClockSeconds: 120,
    };
    expect(await addMpiTask(ctx, spec)).toEqual({ taskId: 'mpi', created: true });
    expect(await addMpiTask(ctx, spec)).toEqual({ taskId: 'mpi', created: false });
    expect(await enableAutoTerminate(ctx, BATCH_JOB)).toBe('enabled');
    // Idempotent: a repeat is fine whether or not the job has ended in between.
    expect(['enabled', 'alreadyEnded']).toContain(await enableAutoTerminate(ctx, BATCH_JOB));

    const t = await completed(ctx, BATCH_JOB, 'mpi');
    expect(t).toMatchObject({ exitCode: 0, result: 'success' });
    const out = await readTaskFile(ctx, BATCH_JOB, 'mpi', 'stdout.txt');
    const ips = ready.nodes.map((n) => n.ipAddress).sort();
    const hosts = /hosts=(\S+) master=true/.exec(out.content)?.[1]?.split(',').sort();
    expect(hosts).toEqual(ips);

    const subtasks = await listSubtasks(ctx, BATCH_JOB, 'mpi');
    // Subtasks are 1..N-1; the primary is the task itself, on the remaining node.
    expect(subtasks.map((s) => s.id)).toEqual([1]);
    expect(new Set([t.nodeId, ...subtasks.map((s) => s.nodeId)])).toEqual(new Set(ready.nodes.map((n) => n.id)));
    for (const s of subtasks) {
      expect(s).toMatchObject({ state: 'completed', exitCode: 0 });
      expect(s.taskRootDirectory).toBeDefined();
    }
    const worker = subtasks.find((s) => s.id === 1)!;
    const coord = await readNodeFile(ctx, POOL, worker.nodeId!, `${worker.taskRootDirectory}/stdout.txt`);
    expect(coord.content).toContain(`coord on ${worker.nodeId}`);

    const job = await until('job completed', async () => {
      const j = await getJob(ctx, BATCH_JOB);
      return j?.state === 'completed' ? j : undefined;
    });
    expect(job).toMatchObject({ terminateReason: 'AllTasksComplete', onAllTasksComplete: 'terminatejob' });
  });

  test('preparation and release task status per node', async () => {
    const status = await until('release tasks done', async () => {
      const s = await getNodeLifecycleStatus(ctx, BATCH_JOB);
      return s.length > 0 && s.every((n) => n.release?.state === 'completed') ? s : undefined;
    });
    for (const n of status) expect(n.preparation).toMatchObject({ state: 'completed', exitCode: 0 });
  });

  test('listTasks, terminateTask and deleteTask', async () => {
    const tasks = await listTasks(ctx, BATCH_JOB);
    expect(tasks.map((t) => t.taskId).sort()).toEqual(['mpi', 'pin-1', 'pin-fail']);
    await terminateTask(ctx, BATCH_JOB, 'pin-1'); // already completed: not an error
    await deleteTask(ctx, BATCH_JOB, 'pin-fail');
    await deleteTask(ctx, BATCH_JOB, 'pin-fail'); // gone: not an error
    expect(await getTask(ctx, BATCH_JOB, 'pin-fail')).toEqual({ taskId: 'pin-fail', state: 'missing' });
  });

  test('terminate and delete the job: repeats and missing jobs are not errors', async () => {
    expect(await terminateJob(ctx, BATCH_JOB)).toBe('alreadyEnded');
    expect(await terminateJob(ctx, 'nosuchjob')).toBe('notFound');
    expect(await deleteJob(ctx, BATCH_JOB)).toEqual({ deleted: true });
    expect(await deleteJob(ctx, BATCH_JOB)).toEqual({ deleted: expect.any(Boolean) });
    await until('job gone', async () => ((await getJob(ctx, BATCH_JOB)) === undefined ? true : undefined));
    expect(await deleteJob(ctx, BATCH_JOB)).toEqual({ deleted: false });
  });

  test('terminateJob on a running job terminates it', async () => {
    await createJob(ctx, { batchJobId: 'longjob', jobId: JOB, poolId: POOL });
    await addNodeTask(ctx, 'longjob', { id: 'sleeper', affinityId: ready.nodes[0].affinityId, commandLine: '/bin/sh -c "sleep 30"' });
    await until('sleeper running', async () => ((await getTask(ctx, 'longjob', 'sleeper')).state === 'running' ? true : undefined));
    expect(await terminateJob(ctx, 'longjob', 'CancelledByUser')).toBe('terminated');
    const j = await until('job completed', async () => {
      const s = await getJob(ctx, 'longjob');
      return s?.state === 'completed' ? s : undefined;
    });
    expect(j.terminateReason).toBe('CancelledByUser');
    expect((await getTask(ctx, 'longjob', 'sleeper')).state).toBe('completed');
    await deleteJob(ctx, 'longjob');
  });

  test('terminateJob and enableAutoTerminate on a job still terminating (release tasks running) answer alreadyEnded', async () => {
    // Batch answers 409 JobBeingTerminated while the release tasks run; the adapter counts that as ended.
    await createJob(ctx, {
      batchJobId: 'slowrelease',
      jobId: JOB,
      poolId: POOL,
      preparationTask: { commandLine: '/bin/true' },
      releaseTask: { commandLine: '/bin/sh -c "sleep 2"' },
    });
    await addNodeTask(ctx, 'slowrelease', { id: 'quick', affinityId: ready.nodes[0].affinityId, commandLine: '/bin/true' });
    await completed(ctx, 'slowrelease', 'quick');
    expect(await terminateJob(ctx, 'slowrelease')).toBe('terminated');
    expect((await getJob(ctx, 'slowrelease'))?.state).toBe('terminating');
    expect(await terminateJob(ctx, 'slowrelease')).toBe('alreadyEnded');
    expect(await enableAutoTerminate(ctx, 'slowrelease')).toBe('alreadyEnded');
    await until('job completed', async () => ((await getJob(ctx, 'slowrelease'))?.state === 'completed' ? true : undefined));
    await deleteJob(ctx, 'slowrelease');
  });

  test('resizePool and removeNodes replace nodes; repeats are not errors', async () => {
    await resizePool(ctx, POOL, 3, 5);
    await resizePool(ctx, POOL, 3, 5); // resize already under way (or done) towards 3
    const three = await until('3 idle nodes', async () => {
      const s = await getPoolSnapshot(ctx, POOL);
      return s && s.allocationState === 'steady' && s.nodes.filter((n) => n.state === 'idle').length === 3 ? s : undefined;
    });
    expect(three.targetDedicatedNodes).toBe(3);
    const victim = three.nodes[2].id;
    await removeNodes(ctx, POOL, [victim]);
    await removeNodes(ctx, POOL, [victim]); // already leaving or gone
    const after = await until('node removed', async () => {
      const s = await getPoolSnapshot(ctx, POOL);
      return s && s.allocationState === 'steady' && !s.nodes.some((n) => n.id === victim) ? s : undefined;
    });
    expect(after.targetDedicatedNodes).toBe(2);
  });

  test('deletePool: gone or going counts as done', async () => {
    expect(await deletePool(ctx, POOL)).toEqual({ deleted: true });
    expect(await deletePool(ctx, POOL)).toEqual({ deleted: false });
    await until('pool gone', async () => ((await getPoolSnapshot(ctx, POOL)) === undefined ? true : undefined));
    expect(await deletePool(ctx, POOL)).toEqual({ deleted: false });
  });

  test('errors carry operation, resource, code, status and request id', async () => {
    const err = (await addNodeTask(ctx, 'nosuchjob', { id: 't', affinityId: 'x', commandLine: '/bin/true' }).catch((e: unknown) => e)) as BatchError;
    expect(err).toBeInstanceOf(BatchError);
    expect(err).toMatchObject({ code: 'JobNotFound', status: 404, operation: 'tasks.addNodeTask', resource: 'task nosuchjob/t', attempts: 1 });
    expect(err.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(err.message).toMatch(/^tasks\.addNodeTask on task nosuchjob\/t failed: HTTP 404 JobNotFound: /);
  });
});
