/**
 * The default logs' check by one listing (settings.nodeLogsListed, docs/call-budgets.md): after the node upload tasks,
 * the non-master nodes' logs (stdout.txt, stderr.txt, due whatever the task did) are looked up by one nodeLogsMissing
 * call over every node, not by listing each node's files; only the every-node files a spec asks for are still listed
 * per node. A missing log is an error naming its node and follows onUploadFailure. (Fails on the old stage: one
 * nodeTaskUploads per non-master node, for the logs too.)
 */
import { parseJobSpec } from '../../shared/core/spec';
import type { MpiJobInput, MpiResult, OutputsResult } from '../../shared/core/contract';
import { expectedNodeUploads } from '../../shared/core/planning/outputsCheck';
import { healthyJob, type FakeJob } from './fakeActivities';
import { replay, scheduledInputs, SETTINGS } from './jobReplay';

const DIR = 'workitems/hpc-j/job-1/mpi';
const NODES = 4;

function input(id: string, outputs: string): MpiJobInput {
  const parsed = parseJobSpec(
    `
id: ${id}
name: ${id}
pool: { vmSize: Standard_D8s_v5, nodes: ${NODES} }
mpi: { runtime: openmpi, processesPerNode: 1, command: app }
limits: { maxWallClock: PT10M }
outputs: ${outputs}
`,
    'application/yaml',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return { jobId: id, spec: parsed.spec, settings: { ...SETTINGS, nodeLogsListed: true } };
}

const mpiResult = (): MpiResult => ({
  taskId: 'mpi',
  exitCode: 0,
  subtasks: Array.from({ length: NODES - 1 }, (_, i) => ({
    id: i + 1,
    nodeId: `node-${i + 1}`,
    exitCode: 0,
    state: 'completed' as const,
    taskRootDirectory: DIR,
  })),
  logs: [{ node: 'node-0', stdout: 'https://b/stdout', stderr: 'https://b/stderr' }],
  stdoutTail: '',
  taskRootDirectory: DIR,
});

const listing = (prefix: string, errors: string[]): OutputsResult => ({
  container: 'https://data1.blob.core.windows.net/results',
  prefix,
  files: [],
  count: 0,
  bytes: 0,
  truncated: false,
  errors,
});

function job(lostLogs: string[]): FakeJob {
  return healthyJob({
    poolObserve: () => ({
      state: 'active',
      allocationState: 'steady',
      currentDedicatedNodes: NODES,
      targetDedicatedNodes: NODES,
      resizeErrors: [],
      nodes: Array.from({ length: NODES }, (_, i) => ({ id: `node-${i}`, state: 'idle', affinityId: `aff-${i}`, ipAddress: `10.0.0.${i}` })),
    }),
    workloadUrls: () => ({ files: [], outputsContainerUrl: 'https://data1.blob.core.windows.net/results?sig=W' }),
    mpiResultCollect: mpiResult,
    outputsList: ({ prefix, errors }) => listing(prefix, errors),
    nodeTaskUploads: ({ outputFiles }) => expectedNodeUploads(outputFiles, [{ name: `${DIR}/wd/rank.log`, isDirectory: false }]),
    nodeLogsMissing: ({ prefix, nodes, files }) => nodes.flatMap((n) => files.map((f) => `${prefix}${n}/${f}`)).filter((name) => lostLogs.includes(name)),
  });
}

test('logs only (master files): one nodeLogsMissing over the 3 other nodes, no node file listing', async () => {
  const j = job([]);
  const r = await replay(input('nl-ok', '{ account: data1, container: results, files: [ { pattern: "*.out" } ] }'), j);
  expect(j.finished()).toMatchObject({ state: 'Succeeded', result: { outputs: { errors: [] } } });
  expect(scheduledInputs(r.history, 'nodeTaskUploads')).toEqual([]);
  expect(scheduledInputs(r.history, 'nodeLogsMissing')).toEqual([
    { account: 'data1', container: 'results', prefix: 'nl-ok/logs/nodes/', nodes: ['node-1', 'node-2', 'node-3'], files: ['stdout.txt', 'stderr.txt'] },
  ]);
});

test('every-node files: those still listed per node, without the logs; the logs in the one check', async () => {
  const j = job([]);
  const r = await replay(input('nl-all', '{ account: data1, container: results, files: [ { pattern: "*.log", from: allNodes } ] }'), j);
  expect(j.finished()).toMatchObject({ state: 'Succeeded', result: { outputs: { errors: [] } } });
  const listed = scheduledInputs(r.history, 'nodeTaskUploads');
  expect(listed.map((l) => l.outputFiles.map((f) => f.path))).toEqual([
    ['nl-all/nodes/node-0'],
    ['nl-all/nodes/node-1'],
    ['nl-all/nodes/node-2'],
    ['nl-all/nodes/node-3'],
  ]);
  expect(scheduledInputs(r.history, 'nodeLogsMissing')).toHaveLength(1);
});

test('a lost log (fail): the job fails naming the node and the blob', async () => {
  const j = job(['nl-fail/logs/nodes/node-2/stderr.txt']);
  await replay(input('nl-fail', '{ onUploadFailure: fail, account: data1, container: results, files: [ { pattern: "*.out" } ] }'), j);
  expect(j.finished()).toMatchObject({
    state: 'Failed',
    reason: expect.stringMatching(/^outputs incomplete: node node-2: nl-fail\/logs\/nodes\/node-2\/stderr.txt/),
  });
});
