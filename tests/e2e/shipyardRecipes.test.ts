/**
 * Batch Shipyard recipes imported by `importShipyard` and submitted to the local stack as generated, for the recipes
 * whose stack runs here (Open MPI in Docker over TCP): mpiBench-OpenMPI (docker) and OpenFOAM-TCP-OpenMPI. Both must
 * end Succeeded; mpiBench's whole output (more than the 40-line tail) must be in the outputs the import added, and
 * OpenFOAM's setup script, which does `cd $AZ_BATCH_TASK_DIR/auto_scratch` as Shipyard's does, must land every rank
 * in the job's shared scratch (the importer's scratch wiring), not fail in preflight.
 *
 * What the local stack cannot provide is replaced, each replacement named here and nothing else touched:
 * - the images (Docker Hub's vincentlabo/mpibench:openmpi, alfpark/openfoam:4.0-gcc-openmpi) → the local registry's
 *   hpc/mpi-demo, whose `mpi-demo bench mpibench` is mpiBench (examples/mpi/mpibench.c); OpenFOAM's solver → a rank
 *   program that proves where it runs (its working directory holds the setup script's hostfile, on every node);
 * - OpenFOAM's set_up_sample.sh (downloaded from GitHub) → a stand-in with the same shape, seeded in the data account:
 *   it is sourced, cds into $AZ_BATCH_TASK_DIR/auto_scratch, writes a hostfile and exports $mpirun, $np, $hostfile
 *   and the -x lists, as the original does;
 * - the network: every emulated node is a loopback address, so Open MPI's TCP interface is `lo`, not `eth0`;
 * - the outputs' destination: --outputs data1/results (the local data account) instead of Shipyard's account alias.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import YAML from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import { seedExamples } from '../../local/seedExamples';
import { importShipyard } from '../../cli/import/shipyard/importShipyard';
import { defaultRecipesDir, listRecipeConfigs, readRecipe } from '../../cli/import/shipyard/recipeTable';
import type { OutputsResult } from '../../shared/core/contract';

let stack: Stack;
const DEMO_IMAGE = 'localhost:5000/hpc/mpi-demo:1.0';
const SETUP_BLOB = 'shipyard/set_up_sample.sh';

const SETUP_STANDIN = [
  "# stand-in for the OpenFOAM recipe's set_up_sample.sh: the same directory moves and exports",
  'AUTO_SCRATCH_DIR=$AZ_BATCH_TASK_DIR/auto_scratch',
  'cd $AUTO_SCRATCH_DIR',
  'mkdir -p pitzDaily && cd pitzDaily',
  'nodes=0; hostfile=hostfile; : > $hostfile',
  'for node in $(echo "$AZ_BATCH_HOST_LIST" | tr , " "); do echo "$node slots=2 max-slots=2" >> $hostfile; nodes=$((nodes + 1)); done',
  'np=$((nodes * 2))',
  'export mpirun=$(command -v mpirun) mpienvopts=PATH mpienvopts2=PATH np hostfile',
  '',
].join('\n');

function imported(name: string): Record<string, unknown> {
  const recipe = listRecipeConfigs(defaultRecipesDir(REPO_ROOT)).find((r) => r.name === name);
  if (!recipe) throw new Error(`recipe ${name} not in the corpus`);
  const result = importShipyard(readRecipe(recipe), { outputs: { account: DATA_ACCOUNT.name, container: 'results' } });
  expect(result.specs).toHaveLength(1);
  expect(result.specs[0].errors).toEqual([]);
  expect(result.specs[0].verdict.kind).toBe('runs with changes');
  return YAML.parse(result.specs[0].yaml) as Record<string, unknown>;
}

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function run(spec: Obj): Promise<JobViewLite> {
  const id = await submitSpec(stack, JSON.stringify(spec));
  const view = await watchJob(stack, id, 420_000);
  if (view.state !== 'Succeeded') throw new Error(`job ${view.id} ${view.state}: ${view.error?.message ?? ''}\n${await mpiOutput(stack, view)}`);
  return view;
}

async function blobText(name: string): Promise<string> {
  const buf = await stack.operator.blobService(DATA_ACCOUNT.name).getContainerClient('results').getBlobClient(name).downloadToBuffer();
  return buf.toString('utf8');
}

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'e2e-shipyard-recipes-host.log'), demoImageFillerBytes: 64 * 1024 });
  await seedExamples(stack.operator.blobService(DATA_ACCOUNT.name), REPO_ROOT);
  await stack.operator
    .blobService(DATA_ACCOUNT.name)
    .getContainerClient('software')
    .getBlockBlobClient(SETUP_BLOB)
    .upload(SETUP_STANDIN, Buffer.byteLength(SETUP_STANDIN));
}, 300_000);
afterAll(async () => stack?.stop(), 60_000);

test('mpiBench-OpenMPI (docker) runs as imported, and its whole output outlives the pool', async () => {
  const spec: Obj = imported('mpiBench-OpenMPI (docker)');
  expect(spec.container.images).toEqual(['vincentlabo/mpibench:openmpi']);
  expect(spec.mpi.command).toBe('/mpiBench/mpiBench -e 1K');
  spec.container.images = [DEMO_IMAGE];
  // The recipe's own size: Azure still offers the Dv2 series, and so does the emulator's catalog.
  expect(spec.pool.vmSize).toBe('STANDARD_D1_V2');
  spec.mpi.command = 'mpi-demo bench mpibench -e 1K';
  spec.mpi.options = [...spec.mpi.options, '--mca', 'btl_tcp_if_include', 'lo'];
  const view = await run(spec);
  const outputs = view.result?.outputs as OutputsResult;
  const stdout = await blobText(`${outputs.prefix}/logs/stdout.txt`);
  // More lines than the job view's tail keeps: only the outputs the import added hold them all.
  expect(stdout.split('\n').filter(Boolean).length).toBeGreaterThan(40);
  expect(stdout).toMatch(/Alltoall/);
}, 600_000);

test("OpenFOAM-TCP-OpenMPI runs as imported: its setup script's auto_scratch is the job's shared scratch on every node", async () => {
  const spec: Obj = imported('OpenFOAM-TCP-OpenMPI');
  expect(spec.scratch).toEqual({});
  expect(spec.files).toEqual([
    { url: 'https://raw.githubusercontent.com/Azure/batch-shipyard/master/recipes/OpenFOAM-TCP-OpenMPI/docker/set_up_sample.sh', path: 'set_up_sample.sh' },
  ]);
  spec.files = [{ account: DATA_ACCOUNT.name, container: 'software', blob: SETUP_BLOB, path: 'set_up_sample.sh' }];
  spec.container.images = [DEMO_IMAGE];
  expect(spec.pool.vmSize).toBe('STANDARD_D2_V2');
  expect(spec.mpi.command).toMatch(/--mca btl_tcp_if_include eth0 --allow-run-as-root simpleFoam -parallel$/);
  spec.mpi.command = (spec.mpi.command as string)
    .replace('btl_tcp_if_include eth0', 'btl_tcp_if_include lo')
    .replace('simpleFoam -parallel', '/bin/sh -c \'test -f hostfile && echo "RANKDIR $(pwd -P)"\'');
  const view = await run(spec);
  const outputs = view.result?.outputs as OutputsResult;
  const stdout = await blobText(`${outputs.prefix}/logs/stdout.txt`);
  const dirs = stdout
    .split('\n')
    .filter((l) => l.startsWith('RANKDIR '))
    .map((l) => l.slice('RANKDIR '.length));
  // 2 nodes × 2 slots, every rank in the same directory of the scratch (not under the task directory).
  expect(dirs).toHaveLength(4);
  expect(new Set(dirs).size).toBe(1);
  expect(dirs[0]).toMatch(/\/pitzDaily$/);
  expect(dirs[0]).not.toMatch(/auto_scratch/);
}, 600_000);
