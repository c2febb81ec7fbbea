/**
 * Outputs and the cleanup order, replayed with the real mpiJob orchestrator against typed fakes: the pool is never
 * deleted before the outputs are uploaded (the MPI task's own output files, then one upload task per node), upload
 * failures are reported on the job without changing its state (unless the spec says so), and a cancel while the MPI
 * task runs lets Batch upload its output files before the pool goes.
 */
import { parseJobSpec } from '../../shared/core/spec';
import type { MpiJobInput, MpiResult, NodeTaskObservation, OutputsResult } from '../../shared/core/contract';
import { EventType, type HistoryEvent } from '../../local/durable/history';
import { healthyJob, type FakeActivities, type FakeJob } from './fakeActivities';
import { cancelOnEntering, expectFinishedOnceAndLast, replay, scheduled, scheduledInputs, SETTINGS } from './jobReplay';

const CONTAINER_URL = 'https://data1.blob.core.windows.net/results?sv=x&sig=WRITE';

function input(id: string, outputs: string | undefined, extra = ''): MpiJobInput {
  const text = `
id: ${id}
name: ${id}
pool: { vmSize: Standard_D8s_v5, nodes: 2 }
mpi: { runtime: openmpi, processesPerNode: 1, command: app }
limits: { maxWallClock: PT10M }
files: [ { url: "https://releases.example.org/a/run.sh", path: run.sh, mode: "0755" } ]
${outputs ? `outputs: ${outputs}` : ''}
${extra}`;
  const parsed = parseJobSpec(text, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return { jobId: id, spec: parsed.spec, settings: SETTINGS };
}

/** What Batch reports for the MPI task on the fake pool: master node-0, one subtask on node-1, same task directory. */
function mpiResult(exitCode: number, extra: Partial<MpiResult> = {}): MpiResult {
  return {
    taskId: 'mpi',
    exitCode,
    subtasks: [{ id: 1, nodeId: 'node-1', exitCode: 0, state: 'completed', taskRootDirectory: 'workitems/hpc-j/job-1/mpi' }],
    logs: [{ node: 'node-0', stdout: 'https://b/stdout', stderr: 'https://b/stderr' }],
    stdoutTail: '',
    taskRootDirectory: 'workitems/hpc-j/job-1/mpi',
    ...extra,
  };
}

function listing(prefix: string, errors: string[]): OutputsResult {
  return {
    container: 'https://data1.blob.core.windows.net/results',
    prefix,
    files: [{ name: 'logs/stdout.txt', size: 12, url: 'https://data1.blob.core.windows.net/results/x/logs/stdout.txt' }],
    count: 1,
    bytes: 12,
    truncated: false,
    errors,
  };
}

function outputsJob(overrides: FakeActivities = {}): FakeJob {
  return healthyJob({
    workloadUrls: ({ files, outputs }) => ({
      files: files.map((f) =>
        f.kind === 'url' ? { httpUrl: f.url, filePath: f.filePath, fileMode: f.fileMode } : { httpUrl: 'https://sas', filePath: f.filePath },
      ),
      ...(outputs ? { outputsContainerUrl: CONTAINER_URL } : {}),
    }),
    mpiResultCollect: () => mpiResult(0),
    outputsList: ({ prefix, errors }) => listing(prefix, errors),
    ...overrides,
  });
}

/** Position of the first (or last) scheduling of `name` in the history. */
function at(history: HistoryEvent[], name: string, which: 'first' | 'last' = 'first'): number {
  const names = history.map((e) => (e.EventType === EventType.TaskScheduled ? e.Name : undefined));
  return which === 'first' ? names.indexOf(name) : names.lastIndexOf(name);
}

describe('mpiJob with outputs, replayed', () => {
  it("uploads the MPI task's outputs, then each node's, lists them, and only then terminates the job and deletes the pool", async () => {
    const job = outputsJob();
    const r = await replay(
      input('out-ok', '{ account: data1, container: results, files: [ { pattern: "*.log", from: allNodes }, { pattern: "out/*" } ] }'),
      job,
    );
    const outcome = job.finished();
    expect(outcome.state).toBe('Succeeded');
    expect(outcome.reason).toBeUndefined();
    expect(outcome.result.outputs).toEqual(listing('out-ok', []));

    // The SAS minted for the run reach the MPI task: the files for every node, the outputs' container and prefix (the SAS scope) for its uploads.
    const urls = scheduledInputs(r.history, 'workloadUrls')[0];
    expect(urls.outputs).toEqual({ account: 'data1', container: 'results', prefix: 'out-ok' });
    const task = scheduledInputs(r.history, 'mpiTaskAdd')[0];
    expect(task.commonResourceFiles).toEqual([{ httpUrl: 'https://releases.example.org/a/run.sh', filePath: 'wd/run.sh', fileMode: '0755' }]);
    expect(task.outputFiles?.map((f) => [f.filePattern, f.path, f.containerUrl])).toEqual([
      ['out/*', 'out-ok/workdir/out', CONTAINER_URL],
      ['../*.txt', 'out-ok/logs', CONTAINER_URL],
      ['.mpijob-ranks/**', 'out-ok/logs/ranks', CONTAINER_URL],
    ]);

    // One upload task per node, pinned to it: the master's every-node files; the other node's files and its task logs.
    const uploads = scheduledInputs(r.history, 'nodeTasksAdd')
      .flatMap((a) => a.tasks)
      .filter((t) => t.id.startsWith('up-'));
    expect(uploads.map((t) => [t.id, t.affinityId, t.outputFiles?.map((f) => f.path)])).toEqual([
      ['up-0-a1', 'aff-0', ['out-ok/nodes/node-0']],
      ['up-1-a1', 'aff-1', ['out-ok/nodes/node-1', 'out-ok/logs/nodes/node-1']],
    ]);

    // The order: no auto-termination until the node uploads are in (the job would end with the MPI task), then the
    // listing, then cleanup.
    const h = r.history;
    expect(at(h, 'batchJobAutoComplete')).toBeGreaterThan(at(h, 'nodeTasksObserve', 'last'));
    expect(at(h, 'mpiResultCollect')).toBeLessThan(at(h, 'nodeTasksAdd', 'last'));
    expect(at(h, 'outputsList')).toBeGreaterThan(at(h, 'batchJobAutoComplete'));
    expect(at(h, 'batchJobTerminate')).toBeGreaterThan(at(h, 'outputsList'));
    expect(at(h, 'poolDelete')).toBeGreaterThan(at(h, 'outputsList'));
    expectFinishedOnceAndLast(r, job);
  });

  it('an upload task Batch ran on another node fails itself and is added again for its node', async () => {
    let first = true;
    const job: FakeJob = outputsJob({
      nodeTasksObserve: ({ taskIds }) =>
        taskIds.map((id): NodeTaskObservation => {
          if (id === 'up-1-a1' && first) {
            first = false;
            return { id, state: 'completed', exitCode: 3, nodeId: 'node-0', failure: 'FailureExitCode: exit 3' };
          }
          return { id, state: 'completed', exitCode: 0, nodeId: job.pinnedNode(id) };
        }),
    });
    const r = await replay(input('out-affinity', '{ account: data1, container: results, files: [ { pattern: "*.log", from: allNodes } ] }'), job);
    expect(job.finished()).toMatchObject({ state: 'Succeeded', result: { outputs: { errors: [] } } });
    const ids = scheduledInputs(r.history, 'nodeTasksAdd')
      .flatMap((a) => a.tasks.map((t) => t.id))
      .filter((id) => id.startsWith('up-'));
    expect(ids).toEqual(['up-0-a1', 'up-1-a1', 'up-1-a2']);
    expect(at(r.history, 'poolDelete')).toBeGreaterThan(at(r.history, 'nodeTasksObserve', 'last'));
  });

  it("failed uploads (the master's output files, a node's task every time) are a note on the job and in result.outputs.errors; the state follows the exit code", async () => {
    // Node 1's upload task runs where it was pinned and exits 0, but Batch could not upload its files.
    const failing = (fake: () => FakeJob): FakeActivities => ({
      mpiResultCollect: () =>
        mpiResult(0, { fileUploadFailure: 'FileUploadAccessDenied: Access to the Azure Storage container for uploading output files was denied' }),
      nodeTasksObserve: ({ taskIds }) =>
        taskIds.map((id): NodeTaskObservation =>
          id.startsWith('up-1')
            ? {
                id,
                state: 'completed',
                exitCode: 0,
                nodeId: 'node-1',
                failure: 'FileUploadMiscError: The compute node hit an unexpected error when uploading output files',
              }
            : { id, state: 'completed', exitCode: 0, nodeId: fake().pinnedNode(id) },
        ),
    });
    const job: FakeJob = outputsJob(failing(() => job));
    const r = await replay(input('out-report', '{ account: data1, container: results, files: [ { pattern: "*.log", from: allNodes } ] }'), job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Succeeded');
    expect(outcome.result.outputs?.errors).toEqual([
      'master: FileUploadAccessDenied: Access to the Azure Storage container for uploading output files was denied',
      'node node-1: FileUploadMiscError: The compute node hit an unexpected error when uploading output files',
    ]);
    expect(outcome.reason).toMatch(/^outputs incomplete: master: FileUploadAccessDenied.*; node node-1: FileUploadMiscError/);
    // Each failing node upload was tried nodeTaskMaxAttempts times.
    expect(
      scheduledInputs(r.history, 'nodeTasksAdd')
        .flatMap((a) => a.tasks.map((t) => t.id))
        .filter((id) => id.startsWith('up-1')),
    ).toHaveLength(SETTINGS.nodeTaskMaxAttempts);
    expectFinishedOnceAndLast(r, job);

    const strict: FakeJob = outputsJob(failing(() => strict));
    await replay(input('out-fail', '{ account: data1, container: results, onUploadFailure: fail, files: [ { pattern: "*.log", from: allNodes } ] }'), strict);
    expect(strict.finished()).toMatchObject({ state: 'Failed', reason: expect.stringMatching(/^outputs incomplete: master: FileUploadAccessDenied/) });
  });

  it('a failed run with when: success uploads only the logs from the other nodes, and keeps its own failure as the reason', async () => {
    const job = outputsJob({ mpiResultCollect: () => mpiResult(2, { failure: 'FailureExitCode: exit 2' }) });
    const r = await replay(
      input('out-mpi-failed', '{ account: data1, container: results, when: success, files: [ { pattern: "*.log", from: allNodes } ] }'),
      job,
    );
    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason: 'MPI task exited with code 2: FailureExitCode: exit 2',
      result: { exitCode: 2, outputs: { errors: [] } },
    });
    const uploads = scheduledInputs(r.history, 'nodeTasksAdd')
      .flatMap((a) => a.tasks)
      .filter((t) => t.id.startsWith('up-'));
    expect(uploads.map((t) => t.outputFiles?.map((f) => f.path))).toEqual([['out-mpi-failed/logs/nodes/node-1']]);
    expect(scheduledInputs(r.history, 'mpiTaskAdd')[0].outputFiles?.[0]).toMatchObject({ filePattern: '../*.txt', uploadCondition: 'taskCompletion' });
  });

  it('outputs that cannot be listed are a note; the MPI outcome and result stand', async () => {
    const job = outputsJob({
      outputsList: () => {
        throw new Error('storage account data1 unreachable');
      },
    });
    const r = await replay(input('out-list-fails', '{ account: data1, container: results, logs: true }'), job);
    const outcome = job.finished();
    expect(outcome).toMatchObject({ state: 'Succeeded', result: { exitCode: 0 } });
    expect(outcome.result.outputs).toBeUndefined();
    expect(outcome.reason).toMatch(/^outputs incomplete: outputs not listed: .*storage account data1 unreachable/);
    expect(scheduled(r.history)).toContain('poolDelete');
  });

  it('a job with neither files nor outputs mints nothing and lists nothing', async () => {
    const job = outputsJob();
    const plain = input('out-none', undefined);
    const { files: _files, ...spec } = plain.spec;
    const r = await replay({ ...plain, spec }, job);
    expect(job.finished().state).toBe('Succeeded');
    expect(scheduled(r.history)).not.toContain('workloadUrls');
    expect(scheduled(r.history)).not.toContain('outputsList');
    expect(scheduled(r.history).filter((n) => n === 'batchJobAutoComplete')).toHaveLength(1);
  });
});

describe('cancel while the MPI task of a job with outputs runs, replayed', () => {
  it('terminates the Batch job first, waits until Batch has ended the task (and uploaded its output files), then deletes the pool', async () => {
    let terminated = false;
    let observedAfterTerminate = 0;
    const job = outputsJob({
      batchJobTerminate: () => {
        terminated = true;
        return 'terminated';
      },
      mpiTaskObserve: () => {
        if (!terminated) return { state: 'running' };
        // Batch takes a while to end the task and upload its files.
        return ++observedAfterTerminate < 3 ? { state: 'running' } : { state: 'completed' };
      },
    });
    const r = await replay(
      input('out-cancel', '{ account: data1, container: results, files: [ { pattern: "out/*" } ] }'),
      job,
      cancelOnEntering('Running', 'wrong mesh'),
    );
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: 'wrong mesh' });
    const h = r.history;
    const terminate = at(h, 'batchJobTerminate');
    expect(terminate).toBeGreaterThan(0);
    expect(at(h, 'mpiTaskObserve', 'last')).toBeGreaterThan(terminate);
    expect(at(h, 'poolDelete')).toBeGreaterThan(at(h, 'mpiTaskObserve', 'last'));
    expect(observedAfterTerminate).toBe(3);
    // Issue 28: what Batch uploaded when the task ended is listed in the result (before: not listed at all).
    expect(at(h, 'outputsList')).toBeGreaterThan(at(h, 'mpiTaskObserve', 'last'));
    expect(job.finished().result?.outputs).toBeDefined();
    expectFinishedOnceAndLast(r, job);
  });

  it('a task that does not end in time: the pool is deleted anyway and the cleanup says the outputs may be incomplete', async () => {
    const job = outputsJob({ mpiTaskObserve: () => ({ state: 'running' }) });
    const r = await replay(input('out-cancel-stuck', '{ account: data1, container: results }'), job, cancelOnEntering('Running', 'stop'));
    expect(job.finished()).toMatchObject({
      state: 'Cancelled',
      reason: expect.stringMatching(/^stop; cleanup incomplete: outputs: the MPI task had not finished uploading/),
    });
    expect(scheduled(r.history)).toContain('poolDelete');
  });
});
