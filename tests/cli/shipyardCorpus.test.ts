/**
 * Acceptance over Batch Shipyard's published MPI recipes (every `config` of ../shared/corpus/shipyard-recipes, or
 * SHIPYARD_RECIPES_DIR):
 *
 * 1. Each configuration imports into a spec that parseJobSpec accepts; every setting of its files is in the report
 *    (none unknown), and the settings not mapped exactly are the ones listed below for it.
 * 2. The command lines match what Shipyard would run on the same nodes, flag by flag. Ours come from the pipeline's
 *    own builders (planJob + mpiTaskRequest); Shipyard's from a pure model of its command construction written from
 *    the design notes (tests/helpers/shipyardModel.ts, which says where each flag comes from). Both run under real
 *    bash with the recording stubs of tests/helpers/nodeCommands.ts (mpirun, docker, singularity, nproc,
 *    nvidia-smi: the boundary replaced, there is no fabric or container engine here) on the same emulated nodes
 *    (host list, Batch directories, the partition key file), and what the launcher, the container and each rank
 *    receive is read back as facts (tests/helpers/launchLine.ts) and compared. Every difference must be one listed
 *    for that recipe in DEVIATIONS, each with its reason in WHY: anything else fails.
 * 3. docs/migrating-from-shipyard.md's table is the one these results render.
 *
 * What the launch compares: the pre-execution command as text, then it runs on both sides with the recipes' setup
 * scripts, vendor scripts and modules (absent here) replaced by the same fixture (FIXTURE); a launcher named by an
 * absolute path is run as `mpirun` on both sides (its name is compared as text); a launch script of an image (no
 * mpi block, or a single-node task) is replaced on both sides by the recording stub, so its arguments and
 * environment are compared.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import YAML from 'yaml';
import { importCorpus, renderMigrationDoc, renderRecipeTable, defaultRecipesDir, readRecipe, type RecipeConfig } from '../../cli/import/shipyard/recipeTable';
import type { ImportResult } from '../../cli/import/shipyard/importShipyard';
import { formatReport } from '../../cli/import/shipyard/reportTable';
import { verdictLine } from '../../cli/import/shipyard/verdict';
import { leafPaths } from '../../cli/import/shipyard/report';
import { bashCommandLine } from '../../shared/core/mpi/shellQuote';
import { splitShellWords } from '../../shared/core/mpi/shellWords';
import { planJob } from '../../shared/core/planning/jobPlan';
import { mpiTaskRequest } from '../../shared/core/planning/mpiTaskRequest';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { commandHarness, dockerCalls, readEnv, readNulList, type RunResult } from '../helpers/nodeCommands';
import { FABRIC_ENV_RE, differences, dockerRunFacts, launchFacts, singularityFacts, type Difference, type Facts } from '../helpers/launchLine';
import { nativeTaskScript, shipyardTask, singleTaskScript, taskRunnerScript } from '../helpers/shipyardModel';

const REPO = path.join(__dirname, '..', '..');
const ROOT = defaultRecipesDir(REPO);
const corpus = importCorpus(ROOT);
const harness = commandHarness('shipyard-corpus-');
let extraBin = '';
beforeAll(() => {
  // `sleep` returns at once: our coordination command waits a second for the container to come up.
  extraBin = fs.mkdtempSync(path.join(os.tmpdir(), 'shipyard-corpus-bin-'));
  fs.writeFileSync(path.join(extraBin, 'sleep'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
});
afterAll(() => fs.rmSync(extraBin, { recursive: true, force: true }));

const byName = (name: string) => {
  const found = corpus.find((c) => c.recipe.name === name);
  if (!found) throw new Error(`recipe ${name} not in ${ROOT}`);
  return found;
};

test('the corpus is the published MPI recipes', () => {
  expect(corpus.map((c) => c.recipe.name)).toEqual(Object.keys(NOT_EXACT));
});

// Settings every recipe shares: its CentOS 7 / Ubuntu 16.04–18.04 image is past Batch's support (replaced by the
// default HPC image), and its pool creates an SSH user.
const IMAGE = 'pool.yaml pool_specification.vm_configuration.platform_image approximated';
const SSH = 'pool.yaml pool_specification.ssh unsupported';
const RETIRED_SIZE = 'pool.yaml pool_specification.vm_size approximated';
// A retired NetworkDirect size: Shipyard's implicit /opt/intel and dat.conf binds are dropped (reported).
const ND_BINDS = 'pool.yaml pool_specification.vm_size unsupported';
const NATIVE = 'pool.yaml pool_specification.vm_configuration.platform_image.native approximated';
const SINGULARITY_INSTALL = 'pool.yaml pool_specification.container_runtimes.install[0] approximated';
const SIGNED = 'config.yaml global_resources.singularity_images.signed[0].signing_key unsupported';
// The task's files reach every node, not only the master (files).
const TASK_FILE = (i: number) => `jobs.yaml job_specifications[0].tasks[0].resource_files[${i}].blob_source approximated`;
// One NFS server instead of BeeOND (scratch).
const SCRATCH = 'jobs.yaml job_specifications[0].auto_scratch approximated';
const SINGLE_NODE = 'jobs.yaml job_specifications[0].tasks[0].command approximated';
const NO_MPI_BLOCK = 'jobs.yaml job_specifications[0].tasks[0].multi_instance approximated';

/** Per recipe configuration: the settings not mapped exactly (file, path, status). */
// Flagged from the image catalog (cli/import/shipyard/imageFlags.ts): Ubuntu-HPC 22.04 has no Singularity/Apptainer,
// Apptainer has no library:// remote, and the CentOS-HPC module names and /opt/intel paths the pre-execution command
// uses are not on the image.
const NO_SINGULARITY = 'jobs.yaml job_specifications[0].tasks[0].container_runtime unsupported';
const LIBRARY = 'jobs.yaml job_specifications[0].tasks[0].singularity_image unsupported';
const HOST_NAMES = 'jobs.yaml job_specifications[0].tasks[0].multi_instance.mpi.options.pre_execution_command unsupported';
// Intel MPI by generation and size as Shipyard ran it (cli/import/shipyard/intelMpiMapping.ts): DAPL over the retired
// NetworkDirect sizes has no successor (the images ran the host's Intel MPI); without RDMA Shipyard set no fabric.
const INTEL_DAPL = 'jobs.yaml job_specifications[0].tasks[0].multi_instance.mpi.runtime unsupported';
const INTEL_TCP = 'jobs.yaml job_specifications[0].tasks[0].multi_instance.mpi.runtime approximated';

const NOT_EXACT: Record<string, string[]> = {
  'CNTK-CPU-Infiniband-IntelMPI': [IMAGE, RETIRED_SIZE, ND_BINDS, SSH, INTEL_DAPL],
  'CNTK-CPU-OpenMPI (multinode)': [IMAGE, SSH],
  'CNTK-CPU-OpenMPI (singlenode)': [IMAGE, SSH, SINGLE_NODE],
  'CNTK-GPU-Infiniband-IntelMPI': [IMAGE, RETIRED_SIZE, ND_BINDS, SSH, INTEL_DAPL],
  'CNTK-GPU-OpenMPI (multinode-multigpu)': [IMAGE, RETIRED_SIZE, SSH, NO_MPI_BLOCK],
  'CNTK-GPU-OpenMPI (singlenode-multigpu)': [IMAGE, RETIRED_SIZE, SSH, SINGLE_NODE],
  'CNTK-GPU-OpenMPI (singlenode-singlegpu)': [IMAGE, RETIRED_SIZE, SSH, SINGLE_NODE],
  'HPCG-Infiniband-IntelMPI (docker)': [IMAGE, SSH],
  'HPCG-Infiniband-IntelMPI (singularity)': [SIGNED, IMAGE, SSH, SINGULARITY_INSTALL, NO_SINGULARITY, LIBRARY, HOST_NAMES],
  'HPLinpack-Infiniband-IntelMPI (docker)': [IMAGE, SSH, TASK_FILE(0), TASK_FILE(1)],
  'HPLinpack-Infiniband-IntelMPI (singularity)': [SIGNED, IMAGE, SSH, SINGULARITY_INSTALL, NO_SINGULARITY, LIBRARY, TASK_FILE(0), TASK_FILE(1), HOST_NAMES],
  'HPMLA-CPU-OpenMPI': [
    'config.yaml global_resources.volumes.shared_data_volumes.azureblob_vol unsupported',
    IMAGE,
    'jobs.yaml job_specifications[0].id approximated',
    'jobs.yaml job_specifications[0].shared_data_volumes[0] unsupported',
    NO_MPI_BLOCK,
  ],
  'NAMD-GPU': [IMAGE, RETIRED_SIZE, SSH, SINGLE_NODE],
  'NAMD-Infiniband-IntelMPI': [IMAGE, RETIRED_SIZE, ND_BINDS, SSH, TASK_FILE(0), INTEL_DAPL],
  'NAMD-TCP': [IMAGE, SSH, NO_MPI_BLOCK],
  'OSUMicroBenchmarks-Infiniband-MVAPICH': [SIGNED, IMAGE, SSH, SINGULARITY_INSTALL, NO_SINGULARITY, LIBRARY, HOST_NAMES],
  'OpenFOAM-Infiniband-IntelMPI': [IMAGE, RETIRED_SIZE, ND_BINDS, SSH, SCRATCH, TASK_FILE(0), INTEL_DAPL],
  'OpenFOAM-Infiniband-OpenMPI': [IMAGE, SSH, SCRATCH, TASK_FILE(0)],
  'OpenFOAM-TCP-OpenMPI': [IMAGE, SSH, SCRATCH, TASK_FILE(0)],
  'mpiBench-Infiniband-MPICH': [IMAGE, SSH],
  'mpiBench-Infiniband-OpenMPI': [IMAGE, SSH],
  'mpiBench-IntelMPI (docker)': [IMAGE, NATIVE, SSH, INTEL_TCP],
  // Its start task installs with yum: the replacement image is Ubuntu.
  'mpiBench-IntelMPI (singularity)': [
    IMAGE,
    SSH,
    'pool.yaml pool_specification.additional_node_prep.commands.pre[0] approximated',
    SINGULARITY_INSTALL,
    NO_SINGULARITY,
    LIBRARY,
    HOST_NAMES,
    INTEL_TCP,
  ],
  'mpiBench-MPICH (docker)': [IMAGE, NATIVE, SSH],
  'mpiBench-MPICH (singularity)': [IMAGE, SSH, SINGULARITY_INSTALL, NO_SINGULARITY, LIBRARY],
  'mpiBench-OpenMPI (docker)': [IMAGE, NATIVE, SSH],
  'mpiBench-OpenMPI (singularity)': [IMAGE, SSH, SINGULARITY_INSTALL, NO_SINGULARITY, LIBRARY],
};

/**
 * Per recipe configuration: does it run as its author ran it? `runs with changes` lists every change (the report's
 * approximated/unsupported lines and the importer's CHANGED lines); `cannot run` gives the reason (matched here).
 */
const CANNOT_SINGULARITY = /^cannot run \(.*Singularity\/Apptainer is not installed|^cannot run \(.*not on Ubuntu-HPC 22\.04|^cannot run \(`module load mpi\//;
const CANNOT_DAPL =
  /^cannot run \(Intel MPI over DAPL\/NetworkDirect has no path on Standard_(HB120rs_v3|ND96asr_v4) \(SR-IOV InfiniBand; STANDARD_(H16R|NC24R) is retired\)\)$/;
const WITH_CHANGES = /^runs with changes \(\d+ listed\)$/;
const VERDICT: Record<string, RegExp> = {
  'CNTK-CPU-Infiniband-IntelMPI': CANNOT_DAPL,
  'CNTK-CPU-OpenMPI (multinode)': WITH_CHANGES,
  'CNTK-CPU-OpenMPI (singlenode)': WITH_CHANGES,
  'CNTK-GPU-Infiniband-IntelMPI': CANNOT_DAPL,
  'CNTK-GPU-OpenMPI (multinode-multigpu)': WITH_CHANGES,
  'CNTK-GPU-OpenMPI (singlenode-multigpu)': WITH_CHANGES,
  'CNTK-GPU-OpenMPI (singlenode-singlegpu)': WITH_CHANGES,
  'HPCG-Infiniband-IntelMPI (docker)': WITH_CHANGES,
  'HPCG-Infiniband-IntelMPI (singularity)': CANNOT_SINGULARITY,
  'HPLinpack-Infiniband-IntelMPI (docker)': WITH_CHANGES,
  'HPLinpack-Infiniband-IntelMPI (singularity)': CANNOT_SINGULARITY,
  'HPMLA-CPU-OpenMPI': WITH_CHANGES,
  'NAMD-GPU': WITH_CHANGES,
  'NAMD-Infiniband-IntelMPI': CANNOT_DAPL,
  'NAMD-TCP': WITH_CHANGES,
  'OSUMicroBenchmarks-Infiniband-MVAPICH': CANNOT_SINGULARITY,
  'OpenFOAM-Infiniband-IntelMPI': CANNOT_DAPL,
  'OpenFOAM-Infiniband-OpenMPI': WITH_CHANGES,
  'OpenFOAM-TCP-OpenMPI': WITH_CHANGES,
  'mpiBench-Infiniband-MPICH': WITH_CHANGES,
  'mpiBench-Infiniband-OpenMPI': WITH_CHANGES,
  'mpiBench-IntelMPI (docker)': WITH_CHANGES,
  'mpiBench-IntelMPI (singularity)': CANNOT_SINGULARITY,
  'mpiBench-MPICH (docker)': WITH_CHANGES,
  'mpiBench-MPICH (singularity)': CANNOT_SINGULARITY,
  'mpiBench-OpenMPI (docker)': WITH_CHANGES,
  'mpiBench-OpenMPI (singularity)': CANNOT_SINGULARITY,
};

describe.each(Object.keys(NOT_EXACT))('%s', (name) => {
  test('its verdict is the top line of its spec and report', () => {
    const spec = byName(name).result.specs[0];
    const line = verdictLine(spec.verdict);
    expect(line).toMatch(VERDICT[name]);
    expect(spec.yaml.split('\n')[0]).toBe(`# VERDICT: ${line}`);
    expect(formatReport(byName(name).result).split('\n')[0]).toBe(`VERDICT ${spec.file}: ${line}`);
    // A change listed is one of the report's lines or a CHANGED header line; no OpenFOAM recipe keeps a scratch TODO.
    if (spec.verdict.kind === 'runs with changes') expect(spec.verdict.items.length).toBeGreaterThanOrEqual(NOT_EXACT[name].length);
    expect(spec.yaml).not.toMatch(/TODO: the shared scratch/);
    // Outputs by default: the working directory's files and the full logs survive the pool.
    expect(spec.spec.outputs).toMatchObject({ files: [{ pattern: '**/*', from: 'workdir' }], logs: true });
  });

  test('imports into a valid spec, every setting reported', () => {
    const { recipe, result } = byName(name);
    expect(result.problems).toEqual([]);
    expect(result.outcome).toBe('partial');
    expect(result.specs).toHaveLength(1);
    const parsed = parseJobSpec(result.specs[0].yaml, 'application/yaml');
    if (!parsed.ok) throw new Error(`${name}: ${JSON.stringify(parsed.errors)}`);
    // Every leaf of every file is covered by an entry (its path or an ancestor's), and none is an unknown key.
    const files = readRecipe(recipe);
    for (const [role, file] of Object.entries(files)) {
      const entries = result.entries.filter((e) => e.role === role);
      for (const leaf of leafPaths(YAML.parse(file.text))) {
        expect({ leaf, covered: entries.some((e) => e.path === leaf || leaf.startsWith(`${e.path}.`) || leaf.startsWith(`${e.path}[`)) }).toEqual({
          leaf,
          covered: true,
        });
      }
    }
    expect(result.entries.filter((e) => e.unknownKey)).toEqual([]);
    expect(result.entries.filter((e) => e.status !== 'mapped').map((e) => `${e.file} ${e.path} ${e.status}`)).toEqual(NOT_EXACT[name]);
    expect(result.secrets).toEqual([]);
    // The spec's comments name where each value came from.
    expect(result.specs[0].yaml).toMatch(/# from pool\.yaml: pool_specification\.vm_size/);
  });

  test('runs what Shipyard ran, flag by flag (differences: only the listed deviations)', () => {
    const diffs = compareWithShipyard(byName(name).recipe, byName(name).result);
    if (process.env.SHIPYARD_CORPUS_PRINT) fs.appendFileSync(process.env.SHIPYARD_CORPUS_PRINT, `${JSON.stringify({ name, diffs })}\n`);
    for (const d of diffs) expect({ key: d.key, why: reasonFor(d.key) }).toEqual({ key: d.key, why: expect.any(String) });
    expect(diffs).toEqual(DEVIATIONS[name]);
  });
});

test('docs/migrating-from-shipyard.md shows these results (regenerate: node --import tsx cli/import/shipyard/recipeTable.ts --write docs/migrating-from-shipyard.md)', () => {
  const file = path.join(REPO, 'docs', 'migrating-from-shipyard.md');
  const doc = fs.readFileSync(file, 'utf8');
  expect(renderMigrationDoc(doc, renderRecipeTable(corpus))).toBe(doc);
});

// ---------------------------------------------------------------------------------------------------------------
// Running both sides.

const PKEY = '0x800b';
/** The harness has no task directory variable: both sides get this one (and it reads back as $AZ_BATCH_TASK_DIR). */
const TASK_DIR = '/mnt/batch/tasks/workitems/shipyard-cmp/job-1/mpi';
/** The recipes' setup scripts, vendor scripts and modules, the same on both sides (they are not in the corpus). */
const FIXTURE = [
  'source() { case "$1" in',
  '*set_up_sample.sh) export np=$(( $(printf "%s\\n" ${AZ_BATCH_HOST_LIST//,/ } | wc -l) * 3 )) ppn=3 hostfile="$AZ_BATCH_TASK_WORKING_DIR/fixture.hosts" mpirun=mpirun mpienvopts=FOAM_INST_DIR mpienvopts2=WM_PROJECT_DIR; printf "%s\\n" ${AZ_BATCH_HOST_LIST//,/ } > "$hostfile" ;;',
  '*set_up_namd.sh) export NAMD_DIR=/opt/namd ;;',
  '*setup_hplinpack.sh) export P=1 Q=2 B=192 PSIZE=50000 ;;',
  'esac; return 0; };',
  'module() { export MPI_BIN=/opt/mpi/bin; }',
].join(' ');

interface Side {
  argv: string[];
  env: Record<string, string>;
  run: RunResult;
}

function run(commandLine: string, env: Record<string, string>, hosts: string): RunResult {
  const r = harness.run(
    commandLine,
    Object.entries(env).map(([name, value]) => ({ name, value })),
    {
      AZ_BATCH_HOST_LIST: hosts,
      AZ_BATCH_TASK_DIR: TASK_DIR,
      DOCKER_STUB_EXEC: '1',
      PATH: `${extraBin}:${harness.bin()}:${harness.gpuBin()}:/usr/bin:/bin`,
    },
    (nodeDir) => fs.writeFileSync(path.join(nodeDir, 'startup', 'wd', 'UCX_IB_PKEY'), `UCX_IB_PKEY=${PKEY}\n`),
  );
  if (r.status !== 0) throw new Error(`exit ${r.status}: ${r.stderr}\n${commandLine.slice(0, 400)}`);
  return r;
}

function launched(r: RunResult): Side {
  return { argv: readNulList(path.join(r.out, 'mpirun.args')), env: readEnv(path.join(r.out, 'mpirun.env')), run: r };
}

/** Words of a command as a shell on the node would split and expand them, in that environment. */
function expandWords(command: string, env: Record<string, string>): string[] {
  const r = spawnSync('/bin/bash', ['-c', 'eval "set -- $1"; printf "%s\\0" "$@"', 'expand', command], {
    env: { ...env, PATH: `${harness.bin()}:${harness.gpuBin()}:/usr/bin:/bin` },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  if (r.status !== 0) throw new Error(`cannot expand ${command}: ${r.stderr}`);
  const parts = r.stdout.split('\0');
  parts.pop();
  return parts;
}

type Mode = 'managed' | 'custom' | 'script' | 'single';

function compareWithShipyard(recipe: RecipeConfig, result: ImportResult): Difference[] {
  const files = readRecipe(recipe);
  // A recipe's "<fill me in>" placeholders would be shell redirections: both sides run them filled in alike.
  const filled = (cmd: string) => cmd.replace(/<[^<>]+>/g, 'PLACEHOLDER');
  const poolRaw = YAML.parse(filled(files.pool.text)).pool_specification;
  const jobRaw = YAML.parse(filled(files.jobs.text)).job_specifications[0];
  const taskRaw = jobRaw.tasks[0];
  const parsed = parseJobSpec(result.specs[0].yaml, 'application/yaml');
  if (!parsed.ok) throw new Error('invalid spec');
  const spec = parsed.spec;
  const mode: Mode = !taskRaw.multi_instance ? 'single' : !taskRaw.multi_instance.mpi ? 'script' : spec.mpi.launcher.mode === 'custom' ? 'custom' : 'managed';
  const image = poolRaw.vm_configuration.platform_image ?? {};
  // "On the same nodes": Shipyard's model sees the VM size our spec runs on.
  const sy = shipyardTask(
    {
      vmSize: spec.pool.vmSize as string,
      interNodeCommunication: poolRaw.inter_node_communication_enabled === true,
      native: image.native === true,
      publisher: image.publisher,
      offer: image.offer,
    },
    jobRaw,
    taskRaw,
    spec.pool.nodes,
    files.config ? YAML.parse(files.config.text) : {},
  );
  const hosts = Array.from({ length: spec.pool.nodes }, (_, i) => `10.0.0.${4 + i}`).join(',');
  const userEnv = new Set(Object.keys(sy.environment).filter((k) => !FABRIC_ENV_RE.test(k)));
  const envNames = (k: string) => FABRIC_ENV_RE.test(k) || userEnv.has(k);

  const facts = { shipyard: {} as Facts, ours: {} as Facts };
  // The pre-execution command, as text; then both sides run it behind the same fixture.
  const pre = taskRaw.multi_instance?.pre_execution_command as string | undefined;
  facts.shipyard['pre-execution'] = pre ?? '';
  facts.ours['pre-execution'] = spec.mpi.preExecutionCommand ?? '';
  const syExe = String(taskRaw.multi_instance?.mpi?.executable_path ?? 'mpirun').toLowerCase();
  if (mode === 'managed') {
    facts.shipyard.launcher = syExe;
    facts.ours.launcher = spec.mpi.launcher.executable ?? 'mpirun';
  }

  // Ours, as the pipeline builds it, with the fixture and the stand-ins described at the top.
  const ourSpec: JobSpec = structuredClone(spec);
  ourSpec.mpi.preExecutionCommand = `${FIXTURE}; ${spec.mpi.preExecutionCommand ?? ':'}`;
  if (ourSpec.mpi.launcher.executable?.startsWith('/')) ourSpec.mpi.launcher.executable = 'mpirun';
  const firstWord = (cmd: string) => splitShellWords(cmd)[0];
  if (mode === 'script' || mode === 'single') ourSpec.mpi.command = ourSpec.mpi.command.replace(firstWord(ourSpec.mpi.command), 'mpirun');
  ourSpec.mpi.command = filled(ourSpec.mpi.command);
  const plan = planJob('shipyard-cmp', ourSpec);
  const nodes = hosts.split(',').map((_, i) => ({ id: `node-${i}` }));
  const req = mpiTaskRequest(plan, ourSpec, nodes, '$AZ_BATCH_NODE_SHARED_DIR/jobdata/shipyard-cmp', 'hpc-shipyard-cmp');
  const ours = launched(run(req.applicationCommandLine, Object.fromEntries(req.environment.map((e) => [e.name, e.value])), hosts));

  // Shipyard's, from the model: the task runner where the command runs (container or host), or a native task line.
  const syEnv: Record<string, string> = { ...sy.environment };
  const syPrologue = `${FIXTURE}; ${sy.userPrologue ?? ':'}`;
  let syCommand = sy.userCommand;
  if (mode === 'managed' && syExe.startsWith('/')) syCommand = syCommand.replace(syExe, 'mpirun');
  if (mode === 'script' || mode === 'single') syCommand = syCommand.replace(firstWord(syCommand), 'mpirun');
  syCommand = filled(syCommand);
  let shipyardRun: RunResult;
  if (mode === 'single' && sy.runtime === 'docker') {
    shipyardRun = run(bashCommandLine(singleTaskScript({ ...sy, userCommand: syCommand })), syEnv, hosts);
  } else if (sy.native) {
    shipyardRun = run(bashCommandLine(nativeTaskScript({ ...sy, userPrologue: syPrologue, userCommand: syCommand })), syEnv, hosts);
  } else {
    shipyardRun = run(bashCommandLine(taskRunnerScript()), { ...syEnv, SHIPYARD_USER_PROLOGUE_CMD: syPrologue, SHIPYARD_USER_CMD: syCommand }, hosts);
  }

  if (mode === 'single' && sy.runtime === 'docker') {
    // Shipyard: `docker run … <image> <command>`; ours: the command inside the job's container.
    const call = dockerCalls(shipyardRun.out).find((c) => c[0] === 'run') as string[];
    const d = dockerRunFacts(call);
    facts.shipyard.script = norm({ s: JSON.stringify([firstWord(sy.userCommand), ...d.command.slice(1)]) }, shipyardRun).s;
    facts.ours.script = norm({ s: JSON.stringify([firstWord(spec.mpi.command), ...ours.argv]) }, ours.run).s;
    addEnv(facts.ours, ours.env, envNames);
    addEnv(facts.shipyard, { ...syEnv }, envNames);
  } else if (mode === 'script' || mode === 'single') {
    const shipyard = launched(shipyardRun);
    facts.shipyard.script = norm({ s: JSON.stringify([firstWord(sy.userCommand), ...shipyard.argv]) }, shipyard.run).s;
    facts.ours.script = norm({ s: JSON.stringify([firstWord(spec.mpi.command), ...ours.argv]) }, ours.run).s;
    addEnv(facts.shipyard, shipyard.env, envNames);
    addEnv(facts.ours, ours.env, envNames);
  } else {
    const shipyard = launched(shipyardRun);
    const family = spec.mpi.runtime === 'openmpi' ? 'openmpi' : 'hydra';
    const s = launchFacts(family, shipyard.argv, shipyard.env, envNames);
    const o = launchFacts(family, ours.argv, ours.env, envNames);
    Object.assign(facts.shipyard, norm(s.facts, shipyard.run));
    Object.assign(facts.ours, norm(o.facts, ours.run));
    Object.assign(facts.shipyard, norm(programFacts(s.program, shipyard.env), shipyard.run));
    Object.assign(facts.ours, norm(programFacts(o.program, ours.env), ours.run));
  }

  // The container every node runs.
  if (sy.runtime === 'docker') {
    // The shared scratch's setup (NFS export and mounts, the data side's, tested with it) runs before the container
    // starts and needs a node's NFS server: the container is compared on the same spec without it.
    const { scratch: _scratch, ...withoutScratch } = ourSpec;
    const coordinationSpec = withoutScratch as JobSpec;
    const coordinationReq = mpiTaskRequest(
      planJob('shipyard-cmp', coordinationSpec),
      coordinationSpec,
      nodes,
      '$AZ_BATCH_NODE_SHARED_DIR/jobdata/shipyard-cmp',
      'hpc-shipyard-cmp',
    );
    const ourCoordination = run(coordinationReq.coordinationCommandLine, Object.fromEntries(coordinationReq.environment.map((e) => [e.name, e.value])), hosts);
    const ourRun = dockerRunFacts(dockerCalls(ourCoordination.out).find((c) => c[0] === 'run') as string[]);
    const o = norm({ ...ourRun.facts, 'container command': ourRun.command.join(' ') }, ourCoordination);
    // Our coordination exposes every /dev/infiniband/* device present (none here): read it from the command line.
    if (coordinationReq.coordinationCommandLine.includes('for d in /dev/infiniband/*')) o.devices = 'InfiniBand devices';
    let s: Facts;
    if (mode === 'single') {
      const d = dockerRunFacts(dockerCalls(shipyardRun.out).find((c) => c[0] === 'run') as string[]);
      s = norm({ ...d.facts, 'container command': "(the task's command)" }, shipyardRun);
      o['container command'] = o['container command'] ? '(a keep-alive loop; the command runs through docker exec)' : '';
    } else if (sy.native) {
      // §2.2: Batch runs the container of a native pool with these options; what Batch adds itself (networking,
      // devices, its directories) is not modelled, so only the options derived from the Shipyard files compare.
      const d = dockerRunFacts([
        'run',
        ...splitShellWords(sy.runOptions.join(' ').replace(/\$AZ_BATCH_TASK_WORKING_DIR/g, '$AZ_BATCH_NODE_ROOT_DIR/task/wd')),
        sy.image,
      ]);
      s = { ...d.facts, 'container command': sy.coordinationCommandLine ?? '' };
      for (const k of Object.keys(o)) if (!/^(name|rm|shm|privileged|cap |gpus|workdir|container command)/.test(k)) delete o[k];
    } else {
      const syCoordination = run(sy.coordinationCommandLine as string, syEnv, hosts);
      const d = dockerRunFacts(dockerCalls(syCoordination.out).find((c) => c[0] === 'run') as string[]);
      s = norm({ ...d.facts, 'container command': d.command.join(' ') }, syCoordination);
    }
    if (s.devices && /rdma_cm/.test(s.devices) && /uverbs0/.test(s.devices)) s.devices = 'InfiniBand devices';
    for (const [k, v] of Object.entries(s)) facts.shipyard[`container ${k}`] = v;
    for (const [k, v] of Object.entries(o)) facts.ours[`container ${k}`] = v;
  }
  if (process.env.SHIPYARD_CORPUS_FACTS) fs.appendFileSync(process.env.SHIPYARD_CORPUS_FACTS, `${JSON.stringify({ name: recipe.name, facts })}\n`);
  return differences(facts.shipyard, facts.ours);
}

/** Paths of one run's emulated node, written the way a command line names them, so two runs compare. */
function norm(facts: Facts, r: RunResult): Facts {
  const out: Facts = {};
  const fix = (v: string) => v.split(r.nodeDir).join('$AZ_BATCH_NODE_ROOT_DIR').split(r.out).join('$RUN_DIR').split(TASK_DIR).join('$AZ_BATCH_TASK_DIR');
  for (const [k, v] of Object.entries(facts)) out[fix(k)] = fix(v);
  return out;
}

function addEnv(into: Facts, env: Record<string, string>, names: (k: string) => boolean): void {
  for (const [k, v] of Object.entries(env)) if (names(k)) into[`env ${k}`] = v;
}

/**
 * What each rank runs: docker and native ranks run the command under `/bin/sh -c` (ours) or as words of the launcher
 * line (Shipyard): compared as the words a shell makes of it. Singularity ranks run `singularity exec`: ours through
 * a wrapper each rank's shell runs (run here with the singularity stub), Shipyard's directly.
 */
function programFacts(program: string[], env: Record<string, string>): Facts {
  let argv = program;
  if (argv[0] === '/bin/bash' && argv[1] === '-c' && argv[3] === 'mpijob-rank') {
    const r = spawnSync('/bin/bash', ['-c', argv[2], 'mpijob-rank', argv[4]], {
      env: { ...env, PATH: `${harness.bin()}:/usr/bin:/bin` },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    if (r.status !== 0) throw new Error(`rank wrapper: ${r.stderr}`);
    argv = ['singularity', ...readNulList(path.join(env.STUB_OUT, 'singularity.args'))];
  }
  const facts: Facts = {};
  let command = argv;
  if (argv[0] === 'singularity') {
    const s = singularityFacts(argv.slice(1));
    for (const [k, v] of Object.entries(s.facts)) facts[`singularity ${k}`] = v;
    facts['singularity image'] = s.image.startsWith('library://') ? s.image : s.image.replace(env.AZ_BATCH_NODE_SHARED_DIR ?? '', '$AZ_BATCH_NODE_SHARED_DIR');
    command = s.command;
  }
  if (command[0] === '/bin/sh' && command[1] === '-c') {
    const text = command[2].replace(/^export MPIJOB_DATA_DIR="[^"]*"; /, '');
    command = expandWords(text, env);
  }
  facts.program = JSON.stringify(command);
  return facts;
}

// ---------------------------------------------------------------------------------------------------------------
// The deviations, and why each is right (or at least deliberate).

const WHY: [RegExp, string][] = [
  [
    /^(mca plm_rsh_args|env I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS)$/,
    'ours points the launcher\'s ssh at the container\'s sshd (port 23); Shipyard relied on ~/.ssh/config in the image (notes §2.1 "SSH on the alternate port")',
  ],
  [/^env UCX_TLS$/, 'our Open MPI 4 / MPICH 4 InfiniBand presets pin the UCX transports (rc,sm,self); Shipyard let UCX choose'],
  [/^env UCX_NET_DEVICES$/, 'our MPICH 4 preset runs over UCX and names the IB port; Shipyard set nothing for MPICH'],
  [
    /^env UCX_IB_PKEY$/,
    "ours forwards the node's partition key to Intel MPI 2019 ranks too (its mlx provider is UCX); Shipyard forwarded it to Open MPI, MPICH and MVAPICH only",
  ],
  [/^env I_MPI_FALLBACK$/, 'Intel MPI 2019 removed I_MPI_FALLBACK; our 2018 preset sets it, the 2019+ one does not'],
  [/^env MANPATH$/, "Shipyard set MANPATH for Intel's mpivars.sh under set -u; our user code runs without -u (shared/core/mpi/userShell.ts)"],
  [
    /^env (I_MPI_FABRICS|FI_PROVIDER)$/,
    'our Intel MPI preset always names the fabric (shm:ofi with FI_PROVIDER mlx on InfiniBand, tcp without); Shipyard named it only on sizes its tables knew as InfiniBand',
  ],
  [
    /^container (devices|ulimit memlock)$/,
    'ours exposes the InfiniBand devices (and lifts memlock) on every RDMA size; Shipyard only on sizes its tables knew, which predate ND A100 v4',
  ],
  [/^flag -iface$/, 'without InfiniBand our MPICH / MVAPICH presets name the interface (-iface eth0); Shipyard passed nothing'],
  [/^env MV2_IBA_HCA$/, 'our MVAPICH2 preset names the HCA (mlx5_0); Shipyard set nothing'],
  [/^singularity image$/, 'each node pulled the image once in the staggered pull stage; ranks run that SIF file, never the registry reference'],
  [/^container name$/, 'the control plane names the container after the job (the release task removes it by that name)'],
  [
    /^container env passing$/,
    'ours passes the Batch variables, mpi.env and the fabric variables by name (-e NAME); Shipyard dumped the whole task environment into an env file',
  ],
  [/^container shm$/, "Shipyard left Docker's 64m /dev/shm when shm_size was unset (too small for Intel MPI, issue #8); ours defaults to 1g"],
  [
    /^container container command$/,
    "ours starts sshd -D -p 23 itself (or a keep-alive loop for a single-node task); Shipyard ran the image's CMD, which in the recipe images is that sshd (native pools: Batch ran sshd -p 23 in the container)",
  ],
  [/^container bind \/etc\/dat\.conf$/, 'only DAPL (Intel MPI ≤ 2018 over NetworkDirect) reads /etc/dat.conf; none of our presets uses DAPL'],
  [
    /^container gpus$/,
    "Shipyard's GPU size table predates the A100 sizes that replace the retired NC sizes: on these nodes it would not have given the container the GPUs",
  ],
  [
    /^container bind \$AZ_BATCH_TASK_DIR\/auto_scratch$/,
    "the shared scratch is at $MPIJOB_SCRATCH (under the node root, which the container binds); Shipyard bound its BeeOND mount at $AZ_BATCH_TASK_DIR/auto_scratch (the spec's header says to change the paths)",
  ],
  [
    /^container bind .*\/azblob$/,
    "the recipe's shared blob volume is reported unsupported until the job spec has mounts: the bind is missing (the spec's header says so)",
  ],
  [
    /^flag --output-filename$/,
    "the imported spec keeps every rank's full output (its default outputs, cli/import/shipyard/defaultOutputs.ts): Open MPI writes one file per rank as well as forwarding it; Shipyard kept only the task's stdout on the node",
  ],
  [
    /^pre-execution$/,
    "Shipyard's scratch was at $AZ_BATCH_TASK_DIR/auto_scratch; ours is at $MPIJOB_SCRATCH, and the pre-execution command first links the old path to it so the recipe's setup script (cd $AZ_BATCH_TASK_DIR/auto_scratch) lands in the scratch (cli/import/shipyard/scratchWiring.ts)",
  ],
  [/^container rm$/, 'Shipyard ran this container with --rm; ours is removed by the job release task'],
  [
    /^container (detached|network)$/,
    "a single-node task: ours runs in the job's long-running container (detached, host network) through docker exec; Shipyard ran docker run in the foreground",
  ],
];

function reasonFor(key: string): string | undefined {
  return WHY.find(([re]) => re.test(key))?.[1];
}

const d = (key: string, shipyard: string | undefined, ours: string | undefined): Difference => ({
  key,
  ...(shipyard !== undefined ? { shipyard } : {}),
  ...(ours !== undefined ? { ours } : {}),
});
/** Docker on a non-native pool: what every such recipe differs in. */
const dockerBase = (name: string, shm?: string): Difference[] => [
  d('container container command', '', '/usr/sbin/sshd -D -p 23'),
  d('container env passing', 'env-file .shipyard.envlist', expect.stringMatching(/^named \(\d+\)$/) as unknown as string),
  d('container name', name, 'mpijob-shipyard-cmp'),
  ...(shm ? [] : [d('container shm', undefined, '1g')]),
];
const DAT_CONF = d('container bind /etc/dat.conf', '/etc/dat.conf:/etc/dat.conf:ro', undefined);
const SSH_PORT = d('mca plm_rsh_args', undefined, '-p 23');
const PKEY_INTEL = d('env UCX_IB_PKEY', undefined, PKEY);
const SSH_PORT_HYDRA = d('env I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS', undefined, '-p 23');
const MANPATH = d('env MANPATH', '/usr/share/man:/usr/local/man', undefined);
const FALLBACK = d('env I_MPI_FALLBACK', '0', undefined);
const SIF = (uri: string) => d('singularity image', uri, '$AZ_BATCH_NODE_SHARED_DIR/mpijob/sif/shipyard-cmp/0.sif');
const AUTO_SCRATCH = (job: string) =>
  d('container bind $AZ_BATCH_TASK_DIR/auto_scratch', `$AZ_BATCH_NODE_ROOT_DIR/mounts/auto_scratch/${job}:$AZ_BATCH_TASK_DIR/auto_scratch`, undefined);
const RANK_LOGS = d('flag --output-filename', undefined, '.mpijob-ranks');
const SCRATCH_LINK = d(
  'pre-execution',
  'source set_up_sample.sh',
  'if [ -n "${MPIJOB_SCRATCH:-}" ]; then ln -sfn "$MPIJOB_SCRATCH" "$AZ_BATCH_TASK_DIR/auto_scratch"; fi; source set_up_sample.sh',
);
const sorted = (list: Difference[]) => [...list].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));

const DEVIATIONS: Record<string, Difference[]> = {
  // Intel MPI (2019+ preset) on HB120rs_v3, the H16r successor: SR-IOV now, where Shipyard chose shm:ofi + mlx too.
  'CNTK-CPU-Infiniband-IntelMPI': sorted([
    ...dockerBase('cntkjob-alfpark-cntk-2.1-cpu-1bitsgd-py36-intelmpi-refdata', '256m'),
    DAT_CONF,
    FALLBACK,
    MANPATH,
    PKEY_INTEL,
    SSH_PORT_HYDRA,
  ]),
  'CNTK-CPU-OpenMPI (multinode)': sorted([...dockerBase('cntkjob-alfpark-cntk-2.1-cpu-py35-refdata'), SSH_PORT, RANK_LOGS]),
  'CNTK-CPU-OpenMPI (singlenode)': sorted(singleNode('task', undefined)),
  // ND96asr_v4 (the NC24r successor): Shipyard's tables know it as neither RDMA nor GPU, so it ran TCP without GPUs.
  'CNTK-GPU-Infiniband-IntelMPI': sorted([
    ...dockerBase('cntkjob-alfpark-cntk-2.1-gpu-1bitsgd-py36-cuda8-cudnn6-intelmpi-refdata', '256m'),
    d('container devices', undefined, 'InfiniBand devices'),
    d('container gpus', undefined, 'all'),
    d('container ulimit memlock', undefined, 'unlimited'),
    d('env FI_PROVIDER', undefined, 'mlx'),
    d('env I_MPI_FABRICS', undefined, 'shm:ofi'),
    PKEY_INTEL,
    SSH_PORT_HYDRA,
  ]),
  'CNTK-GPU-OpenMPI (multinode-multigpu)': sorted([
    ...dockerBase('cntkjob-alfpark-cntk-2.1-gpu-1bitsgd-py35-cuda8-cudnn6-refdata'),
    d('container gpus', undefined, 'all'),
  ]),
  'CNTK-GPU-OpenMPI (singlenode-multigpu)': sorted([...singleNode('task', undefined), d('container gpus', undefined, 'all')]),
  'CNTK-GPU-OpenMPI (singlenode-singlegpu)': sorted([...singleNode('task', undefined), d('container gpus', undefined, 'all')]),
  // Intel MPI 2018 over OFA on HC44rs: the 2018 preset is Shipyard's intelmpi-ofa setting.
  'HPCG-Infiniband-IntelMPI (docker)': sorted([...dockerBase('hpcg-alfpark-linpack-2018-intel-mkl'), DAT_CONF, MANPATH, SSH_PORT_HYDRA]),
  'HPCG-Infiniband-IntelMPI (singularity)': sorted([MANPATH, SIF('library://alfpark/linpack/linpack:2018-intel-mkl')]),
  'HPLinpack-Infiniband-IntelMPI (docker)': sorted([...dockerBase('linpack-alfpark-linpack-2018-intel-mkl'), DAT_CONF, MANPATH, SSH_PORT_HYDRA]),
  'HPLinpack-Infiniband-IntelMPI (singularity)': sorted([MANPATH, SIF('library://alfpark/linpack/linpack:2018-intel-mkl')]),
  // The shared blob volume is not carried yet (reported unsupported): its bind is missing.
  'HPMLA-CPU-OpenMPI': sorted([
    ...dockerBase('PLACEHOLDER-msmadl-symsgd-0.0.1'),
    d(
      'container bind $AZ_BATCH_NODE_ROOT_DIR/shared/azblob',
      '$AZ_BATCH_NODE_ROOT_DIR/mounts/azureblob_vol:$AZ_BATCH_NODE_ROOT_DIR/shared/azblob:rw',
      undefined,
    ),
  ]),
  'NAMD-GPU': sorted([...singleNode('task', undefined), d('container gpus', undefined, 'all')]),
  'NAMD-Infiniband-IntelMPI': sorted([
    ...dockerBase('namdjob-alfpark-namd-2.11-icc-mkl-intelmpi', '256m'),
    DAT_CONF,
    FALLBACK,
    MANPATH,
    PKEY_INTEL,
    SSH_PORT_HYDRA,
  ]),
  'NAMD-TCP': sorted(dockerBase('namdjob-alfpark-namd-2.11-tcp')),
  'OSUMicroBenchmarks-Infiniband-MVAPICH': sorted([d('env MV2_IBA_HCA', undefined, 'mlx5_0'), SIF('library://alfpark/mvapich/mvapich:2.3.2')]),
  'OpenFOAM-Infiniband-IntelMPI': sorted([
    ...dockerBase('openfoamjob-alfpark-openfoam-4.0-icc-intelmpi', '256m'),
    AUTO_SCRATCH('openfoamjob'),
    DAT_CONF,
    FALLBACK,
    SCRATCH_LINK,
    MANPATH,
    PKEY_INTEL,
    SSH_PORT_HYDRA,
  ]),
  'OpenFOAM-Infiniband-OpenMPI': sorted([
    ...dockerBase('docker-openfoam-openmpi-ib-job-vincentlabo-openfoam-openmpi-ib'),
    AUTO_SCRATCH('docker-openfoam-openmpi-ib-job'),
    DAT_CONF,
    SCRATCH_LINK,
    d('env UCX_TLS', undefined, 'rc,sm,self'),
  ]),
  'OpenFOAM-TCP-OpenMPI': sorted([...dockerBase('openfoamjob-alfpark-openfoam-4.0-gcc-openmpi'), AUTO_SCRATCH('openfoamjob'), SCRATCH_LINK]),
  'mpiBench-Infiniband-MPICH': sorted([
    ...dockerBase('mpibench-mpich-ib-vincentlabo-mpibench-mpich-ib', '256m'),
    DAT_CONF,
    d('env UCX_NET_DEVICES', undefined, 'mlx5_0:1'),
    d('env UCX_TLS', undefined, 'rc,sm,self'),
  ]),
  'mpiBench-Infiniband-OpenMPI': sorted([
    ...dockerBase('mpibench-openmpi-ib-vincentlabo-mpibench-openmpi-ib'),
    DAT_CONF,
    SSH_PORT,
    RANK_LOGS,
    d('env UCX_TLS', undefined, 'rc,sm,self'),
  ]),
  // Native pools: Batch ran the container (only the options from the Shipyard files compare).
  'mpiBench-IntelMPI (docker)': sorted([
    ...nativeBase('mpibench-intelmpi-vincentlabo-mpibench-intelmpi'),
    d('env FI_PROVIDER', undefined, 'tcp'),
    d('env I_MPI_FABRICS', undefined, 'shm:ofi'),
    SSH_PORT_HYDRA,
  ]),
  'mpiBench-IntelMPI (singularity)': sorted([
    d('env FI_PROVIDER', undefined, 'tcp'),
    d('env I_MPI_FABRICS', undefined, 'shm:ofi'),
    SIF('library://vincent.labonte/mpi/mpibench:intelmpi'),
  ]),
  'mpiBench-MPICH (docker)': sorted([...nativeBase('mpibench-mpich-vincentlabo-mpibench-mpich'), d('flag -iface', undefined, 'eth0')]),
  'mpiBench-MPICH (singularity)': sorted([d('flag -iface', undefined, 'eth0'), SIF('library://vincent.labonte/mpi/mpibench:mpich')]),
  'mpiBench-OpenMPI (docker)': sorted([...nativeBase('mpibench-openmpi-vincentlabo-mpibench-openmpi'), SSH_PORT, RANK_LOGS]),
  'mpiBench-OpenMPI (singularity)': sorted([RANK_LOGS, SIF('library://vincent.labonte/mpi/mpibench:openmpi')]),
};

function nativeBase(name: string): Difference[] {
  return [
    d('container container command', '/usr/sbin/sshd -p 23', '/usr/sbin/sshd -D -p 23'),
    d('container name', name, 'mpijob-shipyard-cmp'),
    d('container rm', 'yes', undefined),
    d('container shm', undefined, '1g'),
  ];
}

function singleNode(name: string, shm: string | undefined): Difference[] {
  return [
    d('container container command', "(the task's command)", '(a keep-alive loop; the command runs through docker exec)'),
    d('container detached', undefined, 'yes'),
    d('container env passing', 'env-file .shipyard.envlist', expect.stringMatching(/^named \(\d+\)$/) as unknown as string),
    d('container name', name, 'mpijob-shipyard-cmp'),
    d('container network', undefined, 'host'),
    d('container rm', 'yes', undefined),
    ...(shm ? [] : [d('container shm', undefined, '1g')]),
  ];
}
