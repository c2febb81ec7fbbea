/**
 * Outputs verified before success, for the node uploads, replayed with the real mpiJob orchestrator against typed
 * fakes: after the upload tasks (one per node: every-node files, the other nodes' logs) report success, the blobs each
 * must have produced (from the files below the MPI task's directory on its node) are looked up; a lost one is an error
 * naming the node in result.outputs.errors and follows onUploadFailure.
 */
import { parseJobSpec } from '../../shared/core/spec';
import type { MpiJobInput, MpiResult, OutputsResult } from '../../shared/core/contract';
import { EventType, type HistoryEvent } from '../../local/durable/history';
import { expectedNodeUploads } from '../../shared/core/planning/outputsCheck';
import { healthyJob, type FakeActivities, type FakeJob } from './fakeActivities';
import { expectFinishedOnceAndLast, replay, scheduledInputs, SETTINGS } from './jobReplay';

const OUTPUTS = '{ account: data1, container: results, files: [ { pattern: "*.log", from: allNodes } ] }';
const DIR = 'workitems/hpc-j/job-1/mpi';
/** What was below the MPI task's directory on each node (names relative to the node root). */
const ON_NODE: Record<string, string[]> = {
  'node-0': [`${DIR}/wd/rank.log`, `${DIR}/wd/skip.txt`],
  'node-1': [`${DIR}/wd/rank.log`, `${DIR}/stdout.txt`, `${DIR}/stderr.txt`],
};

function input(id: string, outputs: string): MpiJobInput {
  const parsed = parseJobSpec(
    `
id: ${id}
name: ${id}
pool: { vmSize: Standard_D8s_v5, nodes: 2 }
mpi: { runtime: openmpi, processesPerNode: 1, command: app }
limits: { maxWallClock: PT10M }
outputs: ${outputs}
`,
    'application/yaml',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return { jobId: id, spec: parsed.spec, settings: SETTINGS };
}

const mpiResult = (): MpiResult => ({
  taskId: 'mpi',
  exitCode: 0,
  subtasks: [{ id: 1, nodeId: 'node-1', exitCode: 0, state: 'completed', taskRootDirectory: DIR }],
  logs: [{ node: 'node-0', stdout: 'https://b/stdout', stderr: 'https://b/stderr' }],
  stdoutTail: '',
  taskRootDirectory: DIR,
});

function listing(prefix: string, errors: string[]): OutputsResult {
  return { container: 'https://data1.blob.core.windows.net/results', prefix, files: [], count: 0, bytes: 0, truncated: false, errors };
}

/** A two-node job whose nodes held ON_NODE, and whose container lacks `lost`. */
function verifiedJob(lost: string[], overrides: FakeActivities = {}): FakeJob {
  return healthyJob({
    workloadUrls: () => ({ files: [], outputsContainerUrl: 'https://data1.blob.core.windows.net/results?sig=W' }),
    mpiResultCollect: mpiResult,
    outputsList: ({ prefix, errors }) => listing(prefix, errors),
    nodeTaskUploads: ({ nodeId, outputFiles }) =>
      expectedNodeUploads(
        outputFiles,
        (ON_NODE[nodeId] ?? []).map((name) => ({ name, isDirectory: false })),
      ),
    outputsMissing: ({ names }) => names.filter((n) => lost.includes(n)),
    ...overrides,
  });
}

const at = (h: HistoryEvent[], name: string, which: 'first' | 'last' = 'first') => {
  const names = h.map((e) => (e.EventType === EventType.TaskScheduled ? e.Name : undefined));
  return which === 'first' ? names.indexOf(name) : names.lastIndexOf(name);
};

describe('node uploads verified before success, replayed', () => {
  it("lists each node's files after its upload task and looks up what they make due, before cleanup; all there: no errors", async () => {
    const job = verifiedJob([]);
    const r = await replay(input('nv-ok', OUTPUTS), job);
    expect(job.finished()).toMatchObject({ state: 'Succeeded', result: { outputs: { errors: [] } } });
    const listed = scheduledInputs(r.history, 'nodeTaskUploads');
    expect(listed.map((l) => [l.nodeId, l.taskRootDirectory, l.outputFiles.map((f) => f.path)])).toEqual([
      ['node-0', DIR, ['nv-ok/nodes/node-0']],
      ['node-1', DIR, ['nv-ok/nodes/node-1', 'nv-ok/logs/nodes/node-1']],
    ]);
    expect(listed.every((l) => typeof l.poolId === 'string' && l.poolId.length > 0)).toBe(true);
    const looked = scheduledInputs(r.history, 'outputsMissing')
      .flatMap((l) => l.names)
      .filter((n) => n.includes('/nodes/'));
    expect(looked.sort()).toEqual([
      'nv-ok/logs/nodes/node-1/stderr.txt',
      'nv-ok/logs/nodes/node-1/stdout.txt',
      'nv-ok/nodes/node-0/rank.log',
      'nv-ok/nodes/node-1/rank.log',
    ]);
    const h = r.history;
    expect(at(h, 'nodeTaskUploads')).toBeGreaterThan(at(h, 'nodeTasksObserve', 'last'));
    expect(at(h, 'outputsMissing', 'last')).toBeLessThan(at(h, 'poolDelete'));
    expectFinishedOnceAndLast(r, job);
  });

  it('a lost every-node blob (report): the job follows the MPI exit and the blob is in result.outputs.errors with its node', async () => {
    const job = verifiedJob(['nv-report/nodes/node-1/rank.log']);
    await replay(input('nv-report', OUTPUTS), job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Succeeded');
    expect(outcome.result.outputs?.errors).toEqual([
      'node node-1: nv-report/nodes/node-1/rank.log was on the node but is not in the outputs container (its upload was lost)',
    ]);
    expect(outcome.reason).toMatch(/^outputs incomplete: node node-1: nv-report\/nodes\/node-1\/rank.log/);
  });

  it('a lost every-node blob (fail): the job fails', async () => {
    const job = verifiedJob(['nv-fail/logs/nodes/node-1/stdout.txt']);
    await replay(input('nv-fail', OUTPUTS.replace('{ account', '{ onUploadFailure: fail, account')), job);
    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason: expect.stringMatching(/^outputs incomplete: node node-1: nv-fail\/logs\/nodes\/node-1\/stdout.txt was on the node/),
    });
  });

  it('a node check that cannot be made is an error, not a silent success', async () => {
    const job = verifiedJob([], {
      nodeTaskUploads: () => {
        throw new Error('NodeNotFound: the node does not exist');
      },
    });
    await replay(input('nv-unknown', OUTPUTS.replace('{ account', '{ onUploadFailure: fail, account')), job);
    expect(job.finished()).toMatchObject({ state: 'Failed', reason: expect.stringMatching(/node outputs not verified: .*NodeNotFound/) });
  });
});
