/**
 * The MPI result collection (collectMpiResult, behind activity mpiResultCollect) and the node-task observation
 * (observeNodeTasks, behind nodeTasksObserve) against the real local Batch emulator: the tasks are real processes
 * on emulated nodes, the multi-instance task runs its coordination command on every node, and every answer is
 * read back through the @azure/batch SDK, as the activities do in Azure.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import {
  addMpiTask,
  addNodeTask,
  createJob,
  createJobPool,
  getPoolSnapshot,
  getTask,
  type BatchContext,
  type NodeSnapshot,
  type TaskSnapshot,
} from '../../shared/adapters/batch';
import { collectMpiResult, type MpiResultDeps } from '../../orchestrations/activities/mpi';
import type { MpiTaskRequest } from '../../shared/core/contract';
import { observeNodeTasks } from '../../orchestrations/activities/nodeTasks';
import { until } from '../batch/until';
import { emulatorBatchContext } from '../batch/emulatorContext';

const POOL = 'activities-pool';
const JOB = 'activities-job';
const BATCH_JOB = 'activities-run';

let emu: BatchEmulatorHandle;
let ctx: BatchContext;
let deps: MpiResultDeps;
let nodes: NodeSnapshot[];

const completed = (taskId: string) =>
  until<TaskSnapshot>(`task ${taskId} completed`, async () => {
    const t = await getTask(ctx, BATCH_JOB, taskId);
    return t.state === 'completed' ? t : undefined;
  });

/** GET of a recorded log location, signed by the SDK client exactly as the logs endpoint's reads are. */
async function fetchLog(url: string): Promise<string> {
  const res = await ctx.client.sendRequest({ method: 'GET', url: `${url}?api-version=2022-10-01.16.0` });
  if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${res.bodyAsText ?? ''}`);
  return res.bodyAsText ?? '';
}

function mpiTask(id: string, coordination: string, application: string): MpiTaskRequest {
  return {
    batchJobId: BATCH_JOB,
    taskId: id,
    numberOfInstances: 2,
    coordinationCommandLine: coordination,
    applicationCommandLine: application,
    environment: [],
    commonResourceFiles: [],
    maxWallClockSeconds: 60,
    maxTaskRetryCount: 0,
  };
}

beforeAll(async () => {
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 } });
  ctx = emulatorBatchContext(emu);
  deps = { batch: ctx, accountUrl: emu.url };
  await createJobPool(ctx, {
    poolId: POOL,
    jobId: JOB,
    vmSize: 'standard_hb120rs_v3',
    targetDedicatedNodes: 2,
    image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
  });
  nodes = await until('2 idle nodes', async () => {
    const s = await getPoolSnapshot(ctx, POOL);
    return s && s.nodes.length === 2 && s.nodes.every((n) => n.state === 'idle') ? s.nodes : undefined;
  });
  await createJob(ctx, { batchJobId: BATCH_JOB, jobId: JOB, poolId: POOL });
});

afterAll(async () => {
  await emu?.stop();
});

describe('collectMpiResult (activity mpiResultCollect)', () => {
  test("a subtask failing while the master succeeds: the exit code is the subtask's, the failure names its node, its log is where the result says", async () => {
    await addMpiTask(
      ctx,
      mpiTask(
        'mpi-subfail',
        // The master's coordination succeeds; the other node's fails as an sshd that cannot start would.
        '/bin/sh -c \'if [ "$AZ_BATCH_IS_CURRENT_NODE_MASTER" = true ]; then echo master ready; else echo "sshd on $AZ_BATCH_NODE_ID"; echo "sshd: bind to port 2222 failed" >&2; exit 7; fi\'',
        '/bin/sh -c "echo never runs"',
      ),
    );
    const task = await completed('mpi-subfail');
    const r = await collectMpiResult(deps, { batchJobId: BATCH_JOB, taskId: 'mpi-subfail' });

    const worker = nodes.find((n) => n.id !== task.nodeId)!;
    expect(r).toMatchObject({ taskId: 'mpi-subfail', exitCode: 7, subtasks: [{ id: 1, nodeId: worker.id, exitCode: 7, state: 'completed' }] });
    expect(r.failure).toMatch(/^SubtaskFailed: /);
    expect(r.failure).toContain(worker.id);
    // Master first (the task's files), then the subtask's node (its task directory on that node).
    expect(r.logs.map((l) => l.node)).toEqual([task.nodeId, worker.id]);
    expect(r.logs[0]).toEqual({
      node: task.nodeId,
      stdout: `${emu.url}/jobs/${BATCH_JOB}/tasks/mpi-subfail/files/stdout.txt`,
      stderr: `${emu.url}/jobs/${BATCH_JOB}/tasks/mpi-subfail/files/stderr.txt`,
    });
    expect(r.logs[1].stdout).toMatch(new RegExp(`^${emu.url}/pools/${POOL}/nodes/${worker.id}/files/.+/stdout\\.txt$`));
    expect(await fetchLog(r.logs[1].stderr)).toBe('sshd: bind to port 2222 failed\n');
    expect(await fetchLog(r.logs[1].stdout)).toBe(`sshd on ${worker.id}\n`);
    // The application command never ran: the master's own output is empty.
    expect(r.stdoutTail).toBe('');
    expect(r.stderrTail).toBeUndefined();
    expect(r.startTime).toBeDefined();
    expect(r.endTime).toBeDefined();
  });

  test("output files Batch could not upload: the program's exit code stands, the failure is an upload failure, not the run's", async () => {
    await addMpiTask(ctx, {
      ...mpiTask('mpi-upload', '/bin/true', '/bin/sh -c "echo result > out.dat"'),
      // No storage listens there: Batch reports FileUploadMiscError (the emulator as Batch does).
      outputFiles: [
        { filePattern: 'out.dat', containerUrl: 'http://127.0.0.1:9/results?sv=x&sig=none', path: 'job/out.dat', uploadCondition: 'taskCompletion' },
      ],
    });
    await completed('mpi-upload');
    const r = await collectMpiResult(deps, { batchJobId: BATCH_JOB, taskId: 'mpi-upload' });
    expect(r.exitCode).toBe(0);
    expect(r.failure).toBeUndefined();
    expect(r.fileUploadFailure).toMatch(/^FileUploadMiscError: /);
  });

  test("a master that succeeds: exit code 0, no failure, the last 40 lines of stdout and the stderr tail, every node's log readable", async () => {
    await addMpiTask(
      ctx,
      mpiTask(
        'mpi-ok',
        '/bin/sh -c "echo coordinated on $AZ_BATCH_NODE_ID"',
        '/bin/sh -c \'for i in $(seq 1 60); do echo "rank 0 step $i"; done; echo "warning: slow fabric" >&2\'',
      ),
    );
    const task = await completed('mpi-ok');
    const r = await collectMpiResult(deps, { batchJobId: BATCH_JOB, taskId: 'mpi-ok' });

    expect(r.exitCode).toBe(0);
    expect(r.failure).toBeUndefined();
    const worker = nodes.find((n) => n.id !== task.nodeId)!;
    // Where the MPI task's directory is on each node (relative to its root): the node upload tasks read from there.
    expect(r.subtasks).toEqual([{ id: 1, nodeId: worker.id, exitCode: 0, state: 'completed', taskRootDirectory: `workitems/${BATCH_JOB}/job-1/mpi-ok` }]);
    expect(r.taskRootDirectory).toBe(`workitems/${BATCH_JOB}/job-1/mpi-ok`);
    expect(r.fileUploadFailure).toBeUndefined();
    expect(r.stdoutTail.split('\n')).toEqual(Array.from({ length: 40 }, (_, i) => `rank 0 step ${i + 21}`));
    expect(r.stderrTail).toBe('warning: slow fabric');
    expect(await fetchLog(r.logs[0].stdout)).toMatch(/^rank 0 step 1\n[\s\S]*rank 0 step 60\n$/);
    expect(await fetchLog(r.logs[1].stdout)).toBe(`coordinated on ${worker.id}\n`);
  });

  test("a master whose application fails: its exit code and Batch's failure, with its stderr", async () => {
    await addMpiTask(ctx, mpiTask('mpi-appfail', '/bin/sh -c "true"', '/bin/sh -c \'echo "MPI_ABORT was invoked on rank 1" >&2; exit 134\''));
    await completed('mpi-appfail');
    const r = await collectMpiResult(deps, { batchJobId: BATCH_JOB, taskId: 'mpi-appfail' });
    expect(r).toMatchObject({ exitCode: 134, stderrTail: 'MPI_ABORT was invoked on rank 1', subtasks: [{ id: 1, exitCode: 0 }] });
    expect(r.failure).toMatch(/^FailureExitCode: /);
  });

  test('a task that does not exist: the documented missing result', async () => {
    const r = await collectMpiResult(deps, { batchJobId: BATCH_JOB, taskId: 'no-such-task' });
    const base = `${emu.url}/jobs/${BATCH_JOB}/tasks/no-such-task/files`;
    expect(r).toEqual({
      taskId: 'no-such-task',
      exitCode: -1,
      noExitCode: true,
      failure: 'the MPI task disappeared (job deleted?)',
      subtasks: [],
      logs: [{ node: 'master', stdout: `${base}/stdout.txt`, stderr: `${base}/stderr.txt` }],
      stdoutTail: '',
    });
  });
});

describe('observeNodeTasks (activity nodeTasksObserve)', () => {
  test("a failed task: exit code, Batch's failure and the last 5 lines of its stderr; where it ran", async () => {
    const pinned = nodes[0];
    await addNodeTask(ctx, BATCH_JOB, {
      id: 'pull-0-a1',
      affinityId: pinned.affinityId,
      elevated: true,
      commandLine:
        '/bin/sh -c \'echo pulling; for i in 1 2 3 4 5 6; do echo "layer $i" >&2; done; echo "Error response from daemon: manifest unknown" >&2; exit 2\'',
    });
    await completed('pull-0-a1');
    expect(await observeNodeTasks(ctx, { batchJobId: BATCH_JOB, taskIds: ['pull-0-a1'] })).toEqual([
      {
        id: 'pull-0-a1',
        state: 'completed',
        exitCode: 2,
        nodeId: pinned.id,
        failure: 'FailureExitCode: The task exited with an exit code representing a failure',
        outputTail: 'layer 3\nlayer 4\nlayer 5\nlayer 6\nError response from daemon: manifest unknown',
      },
    ]);
  });

  test('a task that ran on another node than its affinity: the node it really ran on', async () => {
    const [wanted, other] = nodes;
    emu.setFaults({ ignoreAffinity: true });
    try {
      await addNodeTask(ctx, BATCH_JOB, { id: 'pull-0-a2', affinityId: wanted.affinityId, elevated: true, commandLine: '/bin/sh -c "echo pulled"' });
      await completed('pull-0-a2');
    } finally {
      emu.setFaults({ ignoreAffinity: false });
    }
    expect(await observeNodeTasks(ctx, { batchJobId: BATCH_JOB, taskIds: ['pull-0-a2'] })).toEqual([
      { id: 'pull-0-a2', state: 'completed', exitCode: 0, nodeId: other.id },
    ]);
  });

  test('a missing task, among others: reported missing, in the order asked', async () => {
    const observed = await observeNodeTasks(ctx, { batchJobId: BATCH_JOB, taskIds: ['pull-9-a1', 'pull-0-a2', 'pull-0-a1'] });
    expect(observed.map((o) => [o.id, o.state])).toEqual([
      ['pull-9-a1', 'missing'],
      ['pull-0-a2', 'completed'],
      ['pull-0-a1', 'completed'],
    ]);
    expect(observed[0]).toEqual({ id: 'pull-9-a1', state: 'missing' });
    // A missing job reads the same as a missing task.
    expect(await observeNodeTasks(ctx, { batchJobId: 'no-such-job', taskIds: ['pull-0-a1'] })).toEqual([{ id: 'pull-0-a1', state: 'missing' }]);
  });
});
