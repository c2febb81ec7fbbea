/**
 * Real-world job shapes end to end on the local stack (one stack for the file), submitted from examples/workloads over
 * the public HTTP API: real processes, real Open MPI across emulated nodes, the real emulated node tools.
 *  - openfoam-modules-openmpi: `module load mpi/openmpi` (Debian's environment-modules) in the start task and the
 *    pre-execution command, then the module's `$MPI_BIN/mpirun`;
 *  - hpcg-vendor-env: a vendor environment script that reads unset variables, sourced before the launcher;
 *  - namd-custom-launcher: the user's own launch script, run once with the launch variables, calling mpirun itself;
 *  - mpibench-singularity-docker: Singularity from `docker://` on the local registry, pulled once per node into the
 *    job's SIF file, each rank running in the image.
 * Each job runs shardsum (examples/mpi/shardsum.c, MPI_Reduce over every rank) on 2 nodes × 2 ranks. The four jobs run
 * at the same time to keep the file cheap.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { checkCleanup, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';

let stack: Stack;
const WORKLOADS = path.join(REPO_ROOT, 'examples', 'workloads');

/** The example as committed, with the local registry's address for "localhost:5000" (as the demo does) and an id. */
function example(file: string, id: string): string {
  const text = readFileSync(path.join(WORKLOADS, file), 'utf8').replace(/localhost:5000\//g, `${stack.registry.host}/`);
  return `id: ${id}\n${text}`;
}

async function explain(view: JobViewLite): Promise<string> {
  const mpi = view.result?.mpi;
  return `job ${view.id} ${view.state}: ${view.error?.message ?? ''}\n--- stdout ---\n${mpi?.stdoutTail ?? ''}\n--- stderr ---\n${mpi?.stderrTail ?? ''}\n${view.state === 'Succeeded' ? '' : await mpiOutput(stack, view)}`;
}

function resultOf(view: JobViewLite): Record<string, number> | undefined {
  const line = (view.result?.mpi?.stdoutTail ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  return line ? (JSON.parse(line.slice('RESULT '.length)) as Record<string, number>) : undefined;
}

const views = new Map<string, JobViewLite>();

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'e2e-workloads-host.log'), demoImageFillerBytes: 64 * 1024 });
  // What the examples' start tasks download: the MPI program's source and the two scripts.
  const software = stack.operator.blobService(DATA_ACCOUNT.name).getContainerClient('software');
  await software.createIfNotExists();
  await software.getBlockBlobClient('shardsum.c').uploadFile(path.join(REPO_ROOT, 'examples', 'mpi', 'shardsum.c'));
  for (const f of ['mklvars.sh', 'run-solver.sh']) await software.getBlockBlobClient(f).uploadFile(path.join(WORKLOADS, 'files', f));

  const jobs = [
    ['openfoam-modules-openmpi.yaml', 'wl-modules'],
    ['hpcg-vendor-env.yaml', 'wl-vendor'],
    ['namd-custom-launcher.yaml', 'wl-custom'],
    ['mpibench-singularity-docker.yaml', 'wl-singularity'],
  ] as const;
  const ids = await Promise.all(jobs.map(([file, id]) => submitSpec(stack, example(file, id))));
  const done = await Promise.all(ids.map((id) => watchJob(stack, id, 420_000)));
  for (const v of done) views.set(v.id, v);
}, 600_000);
afterAll(async () => stack?.stop(), 60_000);

async function expectSucceeded(id: string): Promise<JobViewLite> {
  const view = views.get(id) as JobViewLite;
  if (view.state !== 'Succeeded') throw new Error(await explain(view));
  expect(resultOf(view)).toMatchObject({ ranks: 4, nodes: 2, badRecords: 0 });
  expect(await checkCleanup(stack, view)).toEqual([]);
  return view;
}

test('module load mpi/openmpi, then the module\'s mpirun', async () => {
  const view = await expectSucceeded('wl-modules');
  // The pre-execution command's output is the master's stdout: the module system really loaded the module.
  expect(view.result?.mpi?.stdoutTail).toMatch(/loaded mpi\/openmpi from \/usr\/lib\/[^/]+\/openmpi/);
});

test('a vendor environment script that reads unset variables does not abort the job, and its variables reach every rank', async () => {
  await expectSucceeded('wl-vendor'); // every rank ran `test "$MKL_ARCH" = intel64 && test -d "$MKLROOT"` before shardsum
});

test('a custom launcher script runs once with the host file and rank counts, and launches the ranks itself', async () => {
  const view = await expectSucceeded('wl-custom');
  const out = view.result?.mpi?.stdoutTail ?? '';
  expect(out).toMatch(/custom launcher: np=4 ppn=2 nodes=2 hosts=\S+,\S+/);
  expect(out.match(/^\S+ slots=2$/gm)).toHaveLength(2);
});

test('singularity runs the image pulled from docker:// on the local registry, once per node', async () => {
  const view = await expectSucceeded('wl-singularity');
  const progress = (view.progress as { progress?: { imagesPulled?: { done: number; total: number } } } | null)?.progress;
  expect(progress?.imagesPulled).toEqual({ done: 2, total: 2 });
  // Every rank ran inside the image: shardsum was built and run by the image's mpi-demo entry point.
  expect(view.result?.mpi?.stdoutTail).toMatch(/rank \d node \S+ local/);
});
