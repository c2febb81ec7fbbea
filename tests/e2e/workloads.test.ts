/**
 * Real-world job shapes end to end on the local stack (one stack for the file), submitted from examples/workloads over
 * the public HTTP API: real processes, real Open MPI across emulated nodes, the real emulated node tools. Each job runs
 * a real program on 2 nodes and its own output is checked, not just its state:
 *  - openfoam-modules-openmpi: `module load mpi/openmpi` in the start task and the pre-execution command, then the
 *    module's `$MPI_BIN/mpirun` (shardsum, examples/mpi/shardsum.c);
 *  - hpcg-vendor-env: a vendor environment script that reads unset variables, sourced before the launcher;
 *  - namd-custom-launcher: the user's own launch script, run once with the launch variables, calling mpirun itself;
 *  - mpibench-singularity-docker: Singularity from `docker://` on the local registry, pulled once per node;
 *  - mpibench-openmpi-docker: mpiBench's collectives (examples/mpi/mpibench.c) in docker containers reached over ssh;
 *  - osu-latency-bw-native: OSU-style latency and bandwidth between the two nodes (examples/mpi/osu_pingpong.c);
 *  - hpl-openmpi-native: an HPL-shaped LU solve reading HPL.dat from files, passing HPL's residual check;
 *  - hpcg-openmpi-singularity: an HPCG-shaped CG solve in Singularity reading hpcg.dat, converging to all ones;
 *  - openfoam-tcp-openmpi-docker: decompose / solve / reconstruct in docker on the NFS scratch, launcher from $mpirun;
 *    the reconstructed field in blob storage equals the scheme computed here.
 * Every example is submitted as written (tests/helpers/examplesAsWritten.ts): the committed bytes, through the public
 * API with the user `dev`'s token, to a stack whose data is seeded as `npm start` seeds it (local/seedExamples.ts) and
 * which rewrites `localhost:5000` to its registry (REGISTRY_ALIASES, as `npm start` sets it); the job ids come from the
 * specs' content (none names an id).
 * Before submitting, each spec goes through `POST /api/jobs?dryRun=true`: nothing may be created (no row, no Durable
 * instance, no Batch request, no container); after the runs, every Batch request the pipeline made for the job
 * (Pool_Add, Job_Add, Task_Add, Job_Patch) must be the one the dry run showed (placeholders standing for run-time
 * values). The nine jobs run at the same time (2 nodes x 2 ranks at most) to keep the file cheap.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT, STAGING_ACCOUNTS } from '../../local/azurite';
import type { ExchangeRecord } from '../../local/batch/config';
import { asUser, checkCleanup, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import { seedExamples } from '../../local/seedExamples';
import type { ExplainDocument } from '../../shared/core/contract/explain';
import { durableInstances, jobRows } from '../intake/support';
import { differences, downloadTaskDifferences } from '../helpers/explainMatch';
import { fieldValues, heat1dReference } from '../helpers/heat1d';
import { WORKLOADS_AS_WRITTEN } from '../helpers/examplesAsWritten';

let stack: Stack;
const WORKLOADS = path.join(REPO_ROOT, 'examples', 'workloads');
const exchanges: ExchangeRecord[] = [];

/** A short label for each example this file submits (the test names use them). */
const LABELS: Record<(typeof WORKLOADS_AS_WRITTEN)[number], string> = {
  'examples/workloads/openfoam-modules-openmpi.yaml': 'wl-modules',
  'examples/workloads/hpcg-vendor-env.yaml': 'wl-vendor',
  'examples/workloads/namd-custom-launcher.yaml': 'wl-custom',
  'examples/workloads/mpibench-singularity-docker.yaml': 'wl-singularity',
  'examples/workloads/mpibench-openmpi-docker.yaml': 'wl-mpibench-docker',
  'examples/workloads/osu-latency-bw-native.yaml': 'wl-osu',
  'examples/workloads/hpl-openmpi-native.yaml': 'wl-hpl',
  'examples/workloads/hpcg-openmpi-singularity.yaml': 'wl-hpcg',
  'examples/workloads/openfoam-tcp-openmpi-docker.yaml': 'wl-openfoam-docker',
};

/** The jobs, by label: the example file each submits as written. */
const JOBS: Record<string, string> = Object.fromEntries(WORKLOADS_AS_WRITTEN.map((p) => [LABELS[p], p]));

/** The example as committed, byte for byte. */
function example(file: string): string {
  return readFileSync(path.join(REPO_ROOT, file), 'utf8');
}

/** The job id each label got (from the spec's content, scoped to the caller): the dry run's, then the submission's. */
const jobIds = new Map<string, string>();
const jobId = (label: string): string => jobIds.get(label) as string;

function data() {
  return stack.operator.blobService(DATA_ACCOUNT.name);
}

async function containersOf(account: string): Promise<string[]> {
  const names: string[] = [];
  for await (const c of stack.operator.blobService(account).listContainers()) names.push(c.name);
  return names.sort();
}

/** Job rows with this prefix; none when a dry run left even the Jobs table uncreated. */
async function rowsOf(prefix: string): Promise<unknown[]> {
  return jobRows(stack, prefix).catch((err: { statusCode?: number }) => {
    if (err.statusCode === 404) return [];
    throw err;
  });
}

async function dryRun(specText: string, headers?: Record<string, string>): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, {
    method: 'POST',
    headers: { 'content-type': 'application/yaml', ...(headers ?? (await asUser(stack)())) },
    body: specText,
  });
  return { status: res.status, body: await res.json() };
}

async function explain(view: JobViewLite): Promise<string> {
  const mpi = view.result?.mpi;
  return `job ${view.id} ${view.state}: ${view.error?.message ?? ''}\n--- stdout ---\n${mpi?.stdoutTail ?? ''}\n--- stderr ---\n${mpi?.stderrTail ?? ''}\n${view.state === 'Succeeded' ? '' : await mpiOutput(stack, view)}`;
}

/** The program's RESULT line (JSON) in the master's stdout. */
function resultOf(view: JobViewLite): Record<string, unknown> | undefined {
  const line = (view.result?.mpi?.stdoutTail ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  return line ? (JSON.parse(line.slice('RESULT '.length)) as Record<string, unknown>) : undefined;
}

const views = new Map<string, JobViewLite>();
const docs = new Map<string, ExplainDocument>();
const afterDryRuns: { batchRequests: number; rows: unknown[]; views: number[]; instances: string[]; dataContainers: string[]; stagingContainers: string[] } = {
  batchRequests: -1,
  rows: [],
  views: [],
  instances: [],
  dataContainers: [],
  stagingContainers: [],
};
let dataContainersBefore: string[] = [];
let submittedIds: Record<string, string> = {};

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'e2e-workloads-host.log'),
    demoImageFillerBytes: 64 * 1024,
    batch: { onExchange: (ex) => exchanges.push(ex) },
  });
  // What the examples download, seeded as `npm start` seeds it: the programs' sources, the scripts and input files, the case.
  await seedExamples(data(), REPO_ROOT);
  dataContainersBefore = await containersOf(DATA_ACCOUNT.name);

  // The dry runs first, one after the other: nothing they do may reach Batch or write to storage (they only look up
  // the blobs the jobs read: fail before paying; and read the account's supported images, which validation checks
  // pool.image against: docs/azure-facts.md).
  const batchBefore = exchanges.length;
  for (const [label, file] of Object.entries(JOBS)) {
    const answer = await dryRun(example(file));
    if (answer.status !== 200) throw new Error(`dry run of ${file} answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    docs.set(label, answer.body as ExplainDocument);
    jobIds.set(label, (answer.body as ExplainDocument).jobId);
  }
  const dryRunExchanges = exchanges.slice(batchBefore);
  afterDryRuns.batchRequests = dryRunExchanges.filter((ex) => !(ex.method === 'GET' && /^\/supportedimages\b/.test(ex.path))).length;
  afterDryRuns.rows = await rowsOf('');
  afterDryRuns.views = await Promise.all(
    Object.keys(JOBS).map(async (label) => (await fetch(`${stack.baseUrl}/api/jobs/${jobId(label)}`, { headers: await asUser(stack)() })).status),
  );
  afterDryRuns.instances = (await durableInstances(stack)).map((i) => i.instanceId);
  afterDryRuns.dataContainers = await containersOf(DATA_ACCOUNT.name);
  afterDryRuns.stagingContainers = (await Promise.all(STAGING_ACCOUNTS.map((a) => containersOf(a.name)))).flat();

  const submitted = await Promise.all(Object.entries(JOBS).map(async ([label, file]) => ({ label, id: await submitSpec(stack, example(file)) })));
  submittedIds = Object.fromEntries(submitted.map((s) => [s.label, s.id]));
  const done = await Promise.all(submitted.map(async (s) => ({ label: s.label, view: await watchJob(stack, s.id, 540_000) })));
  for (const d of done) views.set(d.label, d.view);
}, 720_000);
afterAll(async () => stack?.stop(), 60_000);

async function succeeded(label: string): Promise<JobViewLite> {
  const view = views.get(label) as JobViewLite;
  if (view.state !== 'Succeeded') throw new Error(await explain(view));
  expect(await checkCleanup(stack, view)).toEqual([]);
  return view;
}

async function shardsumSucceeded(label: string): Promise<JobViewLite> {
  const view = await succeeded(label);
  expect(resultOf(view)).toMatchObject({ ranks: 4, nodes: 2, badRecords: 0 });
  return view;
}

describe('dry runs (POST /api/jobs?dryRun=true)', () => {
  it("answer the explain document with this deployment's settings and the id the job gets, and create nothing", () => {
    for (const [label, doc] of docs) {
      // No example names an id: the job's id is the spec content's, the same for the dry run and the submission.
      expect(doc).toMatchObject({
        version: 2,
        jobId: submittedIds[label],
        jobIdFrom: 'content',
        policiesChecked: true,
        settings: { source: 'deployment', stagingAccounts: STAGING_ACCOUNTS.map((a) => a.name) },
      });
    }
    expect(afterDryRuns).toEqual({
      batchRequests: 0,
      rows: [],
      views: Object.keys(JOBS).map(() => 404),
      instances: [],
      dataContainers: dataContainersBefore,
      stagingContainers: [],
    });
    // The outputs' container is created by a real run (workloadUrls), never by a dry run.
    expect(dataContainersBefore).not.toContain('results');
  });

  it('refuse a bad spec with its field paths (400), ask for credentials (401) and the submitter role (403)', async () => {
    const bad = await dryRun('name: x\npool: { nodes: 0, vmSize: Standard_D4s_v5 }\nmpi: { runtime: lam, command: a }\n');
    expect(bad.status).toBe(400);
    expect((bad.body as { errors: { path: string }[] }).errors.map((e) => e.path).sort()).toEqual(['mpi.runtime', 'pool.nodes']);
    const text = `id: wl-hpl-dry\n${example(JOBS['wl-hpl'])}`;
    const foreign = await dryRun(text.replace('account: data1, container: software, blob: HPL.dat', 'account: nosuchacct, container: software, blob: HPL.dat'));
    expect(foreign).toEqual({ status: 400, body: { errors: [{ path: 'files[0].account', message: expect.stringMatching(/not one jobs may use/) }] } });
    expect((await dryRun(text, {})).status).toBe(401);
    expect((await dryRun(text, await asUser(stack, 'reader')())).status).toBe(403);
    const garbage = await fetch(`${stack.baseUrl}/api/jobs?dryRun=yes`, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml', ...(await asUser(stack)()) },
      body: text,
    });
    expect(garbage.status).toBe(400);
    expect(await rowsOf('wl-hpl-dry')).toEqual([]);
  });
});

describe('the jobs ran what their dry runs showed', () => {
  const body = (ex: ExchangeRecord) => ex.requestBody as Record<string, unknown>;
  const pathOf = (ex: ExchangeRecord) => ex.path.split('?')[0];

  it.each(Object.keys(JOBS))('%s: pool, Batch job, every task and the auto-completion, request by request', (label) => {
    const doc = docs.get(label) as ExplainDocument;
    const batchJob = doc.batchJob.batchJobId;
    const ok = exchanges.filter((ex) => ex.status < 300);
    const pools = ok.filter((ex) => ex.method === 'POST' && pathOf(ex) === '/pools' && body(ex).id === doc.pool.poolId);
    expect(pools).toHaveLength(1);
    expect(differences(doc.pool.request, body(pools[0]), 'Pool_Add')).toEqual([]);
    const jobs = ok.filter((ex) => ex.method === 'POST' && pathOf(ex) === '/jobs' && body(ex).id === batchJob);
    expect(jobs).toHaveLength(1);
    expect(differences(doc.batchJob.request, body(jobs[0]), 'Job_Add')).toEqual([]);
    const patches = ok.filter((ex) => ex.method === 'PATCH' && pathOf(ex) === `/jobs/${batchJob}`);
    expect(patches.length).toBeGreaterThanOrEqual(1);
    for (const p of patches) expect(differences(doc.batchJob.autoComplete?.request, body(p), 'Job_Patch')).toEqual([]);

    // Tasks added one by one (the MPI task, preflight) and in collections (the per-node tasks: Task_AddCollection).
    const tasks = [
      ...ok.filter((ex) => ex.method === 'POST' && pathOf(ex) === `/jobs/${batchJob}/tasks`).map(body),
      ...ok
        .filter((ex) => ex.method === 'POST' && pathOf(ex) === `/jobs/${batchJob}/addtaskcollection`)
        .flatMap((ex) => body(ex).value as Record<string, unknown>[]),
    ];
    const ids = tasks.map((t) => String(t.id));
    expect(ids.filter((t) => t === 'mpi')).toHaveLength(1);
    for (const t of tasks) {
      const tid = String(t.id);
      const problems =
        tid === 'mpi'
          ? differences(doc.mpiTask.request, t, tid)
          : // The document shows the first check; a later round's differs in its id only.
            tid.startsWith('preflight-')
            ? differences(doc.preflight && { ...doc.preflight.request, id: tid }, t, tid)
            : tid.startsWith('pull-')
              ? differences(doc.imagePulls?.task.request, t, tid)
              : tid.startsWith('dl-')
                ? downloadTaskDifferences(doc.staging.task.request, t, tid)
                : tid.startsWith('up-')
                  ? [doc.outputs?.nodeUploads?.master, doc.outputs?.nodeUploads?.otherNodes].some((u) => u && differences(u, t).length === 0)
                    ? []
                    : [`${tid}: matches no upload task of the document`]
                  : [`${tid}: a task the document does not show`];
      expect(problems).toEqual([]);
    }
    expect(ids.filter((t) => t.startsWith('pull-')).length).toBe(doc.imagePulls ? 2 : 0);
    expect(ids.filter((t) => t.startsWith('dl-')).length).toBeGreaterThanOrEqual(2);
    expect(ids.some((t) => t.startsWith('preflight-'))).toBe(doc.preflight !== null);
  });
});

describe('launch-side shapes (shardsum over every rank)', () => {
  test("module load mpi/openmpi, then the module's mpirun", async () => {
    const view = await shardsumSucceeded('wl-modules');
    // The pre-execution command's output is the master's stdout: the module system really loaded the module.
    expect(view.result?.mpi?.stdoutTail).toMatch(/loaded mpi\/openmpi from \/usr\/lib\/[^/]+\/openmpi/);
  });

  test('a vendor environment script that reads unset variables does not abort the job, and its variables reach every rank', async () => {
    await shardsumSucceeded('wl-vendor'); // every rank ran `test "$MKL_ARCH" = intel64 && test -d "$MKLROOT"` before shardsum
  });

  test('a custom launcher script runs once with the host file and rank counts, and launches the ranks itself', async () => {
    const view = await shardsumSucceeded('wl-custom');
    const out = view.result?.mpi?.stdoutTail ?? '';
    expect(out).toMatch(/custom launcher: np=4 ppn=2 nodes=2 hosts=\S+,\S+/);
    expect(out.match(/^\S+ slots=2$/gm)).toHaveLength(2);
  });

  test('singularity runs the image pulled from docker:// on the local registry, once per node', async () => {
    const view = await shardsumSucceeded('wl-singularity');
    const progress = (view.progress as { progress?: { imagesPulled?: { done: number; total: number } } } | null)?.progress;
    expect(progress?.imagesPulled).toEqual({ done: 2, total: 2 });
    // Every rank ran inside the image: shardsum was built and run by the image's mpi-demo entry point.
    expect(view.result?.mpi?.stdoutTail).toMatch(/rank \d node \S+ local/);
  });
});

describe('benchmarks and solvers', () => {
  test('mpiBench in docker: every collective of every size timed on 4 ranks over 2 nodes, every result right', async () => {
    const view = await succeeded('wl-mpibench-docker');
    expect(resultOf(view)).toEqual({ benchmark: 'mpibench', ranks: 4, nodes: 2, ops: 6, lines: 41, maxBytes: 1024, errors: 0 });
    const out = view.result?.mpi?.stdoutTail ?? '';
    expect(out).toMatch(/^Allreduce +Bytes: +1024 Iters: +100 Avg: +[\d.]+ Min: +[\d.]+ Max: +[\d.]+ Comm: MPI_COMM_WORLD Ranks: 4$/m);
    expect(out).toMatch(/^Alltoall +Bytes: +8 /m);
  });

  test('OSU latency and bandwidth between the two nodes, every message checked', async () => {
    const view = await succeeded('wl-osu');
    const result = resultOf(view) as Record<string, number | boolean | number[]>;
    expect(result).toMatchObject({ benchmark: 'osu_pingpong', ranks: 2, pair: [0, 1], pairOnTwoNodes: true, sizes: 21, maxBytes: 1048576, errors: 0 });
    expect(result.latencyUs).toBeGreaterThan(0);
    expect(result.bandwidthMBs).toBeGreaterThan(0);
    expect(view.result?.mpi?.stdoutTail).toMatch(/^# OSU MPI Bandwidth Test/m);
    expect(view.result?.mpi?.stdoutTail).toMatch(/^1048576 +[\d.]+$/m);
  });

  test("HPL-shaped: the 2 x 2 grid of HPL.dat solves N = 800 and passes HPL's residual check", async () => {
    const view = await succeeded('wl-hpl');
    const result = resultOf(view) as Record<string, number | boolean>;
    expect(result).toMatchObject({ benchmark: 'hpl', n: 800, nb: 32, p: 2, q: 2, ranks: 4, threshold: 16, passed: true });
    expect(result.residual).toBeLessThan(16);
    expect(view.result?.mpi?.stdoutTail).toMatch(/\|\|Ax-b\|\|_oo\/\(eps\*\(\|\|A\|\|_oo\*\|\|x\|\|_oo\+\|\|b\|\|_oo\)\*N\)= +[\d.]+ \.\.\.\.\.\. PASSED/);
  });

  test("HPCG-shaped in singularity: hpcg.dat's grid on 4 ranks converges to the known solution", async () => {
    const view = await succeeded('wl-hpcg');
    const result = resultOf(view) as Record<string, number | boolean>;
    expect(result).toMatchObject({ benchmark: 'hpcg', ranks: 4, nx: 16, ny: 16, nz: 16, valid: true });
    expect(result.maxError).toBeLessThan(1e-6);
    expect(view.result?.mpi?.stdoutTail).toMatch(/HPCG result is VALID with a GFLOP\/s rating of=/);
  });

  test('OpenFOAM in docker: the setup script decomposes into the scratch, $mpirun solves on 4 ranks, the reconstructed field is right', async () => {
    const view = await succeeded('wl-openfoam-docker');
    expect(view.result?.mpi?.stdoutTail).toMatch(/set_up_sample: decomposing input\/heat1d into \S+ for 4 ranks/);
    const prefix = (view.result?.outputs as { prefix: string } | undefined)?.prefix;
    const blob = async (name: string) => (await data().getContainerClient('results').getBlobClient(`${prefix}/${name}`).downloadToBuffer()).toString('utf8');
    const initial = fieldValues(readFileSync(path.join(WORKLOADS, 'heat1d-case', '0', 'T'), 'utf8'));
    const expected = heat1dReference(initial, 200, 0.25);
    const got = fieldValues(await blob('scratch/case/200/T'));
    expect(got).toHaveLength(expected.length);
    got.forEach((v, i) => expect(v).toBeCloseTo(expected[i], 9));
    expect(await blob('scratch/case/log.reconstruct')).toMatch(/reconstructed 96 cells from 4 processors at time 200/);
  });
});
