/**
 * Outputs verified before success, replayed with the real mpiJob orchestrator against typed fakes: the blobs the MPI
 * task's own output files must have produced (from the files on the master when it ended) are looked up before the
 * job ends; a lost upload is an error in result.outputs.errors and follows onUploadFailure, never a Succeeded job
 * with empty errors.
 */
import { parseJobSpec } from '../../shared/core/spec';
import type { MpiJobInput, MpiResult, OutputsResult } from '../../shared/core/contract';
import { EventType, type HistoryEvent } from '../../local/durable/history';
import { expectedMasterUploads } from '../../shared/core/planning/outputsCheck';
import { healthyJob, type FakeActivities, type FakeJob } from './fakeActivities';
import { expectFinishedOnceAndLast, replay, scheduledInputs, SETTINGS } from './jobReplay';

const OUTPUTS = '{ account: data1, container: results, files: [ { pattern: result.txt }, { pattern: "out/**/*.dat" } ] }';
/** What was in the MPI task's directory on the master when it ended. */
const ON_MASTER = [
  'stdout.txt',
  'stderr.txt',
  'fileuploadout.txt',
  'wd/result.txt',
  'wd/out/a.dat',
  'wd/out/b/c.dat',
  'wd/out/skip.log',
  'wd/.mpijob-ranks/1/rank.0/stdout',
];

function input(id: string, outputs: string): MpiJobInput {
  const parsed = parseJobSpec(
    `
id: ${id}
name: ${id}
pool: { vmSize: Standard_D8s_v5, nodes: 1 }
mpi: { runtime: openmpi, processesPerNode: 1, command: app }
limits: { maxWallClock: PT10M }
outputs: ${outputs}
`,
    'application/yaml',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return { jobId: id, spec: parsed.spec, settings: SETTINGS };
}

const mpiResult = (exitCode: number): MpiResult => ({
  taskId: 'mpi',
  exitCode,
  subtasks: [],
  logs: [{ node: 'node-0', stdout: 'https://b/stdout', stderr: 'https://b/stderr' }],
  stdoutTail: '',
  taskRootDirectory: 'workitems/j/job-1/mpi',
});

function listing(prefix: string, errors: string[]): OutputsResult {
  return { container: 'https://data1.blob.core.windows.net/results', prefix, files: [], count: 0, bytes: 0, truncated: false, errors };
}

/** A job whose master held ON_MASTER, and whose container lacks `lost`. */
function verifiedJob(lost: string[], overrides: FakeActivities = {}): FakeJob {
  return healthyJob({
    workloadUrls: () => ({ files: [], outputsContainerUrl: 'https://data1.blob.core.windows.net/results?sig=W' }),
    mpiResultCollect: () => mpiResult(0),
    outputsList: ({ prefix, errors }) => listing(prefix, errors),
    mpiTaskUploads: ({ master, exitCode }) =>
      expectedMasterUploads(
        master,
        ON_MASTER.map((name) => ({ name, isDirectory: false })),
        exitCode,
      ),
    outputsMissing: ({ names }) => names.filter((n) => lost.includes(n)),
    ...overrides,
  });
}

const at = (h: HistoryEvent[], name: string) => h.findIndex((e) => e.EventType === EventType.TaskScheduled && e.Name === name);

describe('outputs verified before success, replayed', () => {
  it("looks up every blob the master's files make due (logs included) before cleanup; all there: Succeeded with no errors", async () => {
    const job = verifiedJob([]);
    const r = await replay(input('ver-ok', OUTPUTS), job);
    expect(job.finished()).toMatchObject({ state: 'Succeeded', result: { outputs: { errors: [] } } });
    expect(scheduledInputs(r.history, 'outputsMissing')).toEqual([
      {
        account: 'data1',
        container: 'results',
        names: [
          'ver-ok/logs/ranks/1/rank.0/stdout',
          'ver-ok/logs/stderr.txt',
          'ver-ok/logs/stdout.txt',
          'ver-ok/workdir/out/a.dat',
          'ver-ok/workdir/out/b/c.dat',
          'ver-ok/workdir/result.txt',
        ],
      },
    ]);
    expect(at(r.history, 'outputsMissing')).toBeLessThan(at(r.history, 'poolDelete'));
    expect(at(r.history, 'mpiTaskUploads')).toBeGreaterThan(at(r.history, 'mpiResultCollect'));
    expectFinishedOnceAndLast(r, job);
  });

  it('a lost upload (report): the job follows the MPI exit and the missing file is in result.outputs.errors', async () => {
    const job = verifiedJob(['ver-report/workdir/result.txt', 'ver-report/logs/stdout.txt']);
    await replay(input('ver-report', OUTPUTS), job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Succeeded');
    expect(outcome.result.outputs?.errors).toEqual([
      'master: ver-report/logs/stdout.txt was on the node but is not in the outputs container (its upload was lost)',
      'master: ver-report/workdir/result.txt was on the node but is not in the outputs container (its upload was lost)',
    ]);
    expect(outcome.reason).toMatch(/^outputs incomplete: master: ver-report\/logs\/stdout.txt/);
  });

  it('a lost upload (fail): the job fails', async () => {
    const job = verifiedJob(['ver-fail/workdir/result.txt']);
    await replay(input('ver-fail', OUTPUTS.replace('{ account', '{ onUploadFailure: fail, account')), job);
    expect(job.finished()).toMatchObject({ state: 'Failed', reason: expect.stringMatching(/^outputs incomplete: master: ver-fail\/workdir\/result.txt/) });
  });

  it('a check that cannot be made is an error, not a silent success', async () => {
    const job = verifiedJob([], {
      mpiTaskUploads: () => {
        throw new Error('TaskNotFound: the task does not exist');
      },
    });
    await replay(input('ver-unknown', OUTPUTS.replace('{ account', '{ onUploadFailure: fail, account')), job);
    expect(job.finished()).toMatchObject({ state: 'Failed', reason: expect.stringMatching(/outputs not verified: .*TaskNotFound/) });
  });

  it('files of another upload condition are not looked for (when: success, MPI exit 1: the logs only)', async () => {
    const job = verifiedJob([], { mpiResultCollect: () => ({ ...mpiResult(1), failure: 'FailureExitCode: exit 1' }) });
    const r = await replay(input('ver-cond', OUTPUTS.replace('{ account', '{ when: success, account')), job);
    expect(job.finished().state).toBe('Failed');
    expect(scheduledInputs(r.history, 'outputsMissing')[0].names).toEqual([
      'ver-cond/logs/ranks/1/rank.0/stdout',
      'ver-cond/logs/stderr.txt',
      'ver-cond/logs/stdout.txt',
    ]);
  });
});
