/**
 * Launching the codes HPC teams bring: every MPI runtime × container runtime × launcher mode, run under real bash with
 * recording stubs (tests/helpers/nodeCommands.ts); user code that only works on a login shell (quotes, $VARS, vendor
 * scripts that read unset variables, `module`); launcher control (executable, options with references, host file,
 * ranks per node from the node); presets by MPI version; container options; the Singularity pull/release tasks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ContainerRuntime, LauncherMode, MpiTaskInput, buildMpiTaskCommands } from '../../shared/core/mpi/commands';
import { MPI_RUNTIMES, fabricPreset } from '../../shared/core/mpi/rdmaPresets';
import { userCommandLine } from '../../shared/core/mpi/userShell';
import { splitShellWords } from '../../shared/core/mpi/shellWords';
import { PlanningError } from '../../shared/core/planning/errors';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { pullTask, releaseTaskCommand, mpiTaskRequest, containerOptionsFor } from '../../shared/core/planning/mpiTaskRequest';
import { planJob } from '../../shared/core/planning/jobPlan';
import { BASE_INPUT, after, commandHarness, dockerCalls, readEnv, readNulList } from '../helpers/nodeCommands';

const harness = commandHarness('mpi-launch-');
const run = harness.run;

const base: MpiTaskInput = BASE_INPUT;

function inputFor(runtime: ContainerRuntime, patch: Partial<MpiTaskInput> = {}): MpiTaskInput {
  return {
    ...base,
    runtime,
    image: runtime === 'docker' ? 'registry.local/hpc/mpi:1' : undefined,
    sifCacheKey: runtime === 'singularity' ? 'job-1' : undefined,
    containerName: runtime === 'docker' ? 'job-1-mpi' : undefined,
    ...patch,
  };
}

/** A custom launch script that records what it was given, then launches as a user's script would. */
const CUSTOM_SCRIPT =
  'env > "$STUB_OUT/custom.env"; cp "$MPIJOB_HOSTFILE" "$STUB_OUT/custom.hosts"; echo ran >> "$STUB_OUT/custom.count"; ' +
  'mpirun -np "$MPIJOB_NP" --hostfile "$MPIJOB_HOSTFILE" ./app "it\'s" "$GREETING"';

describe('every MPI runtime × container runtime × launcher mode', () => {
  const combos: [ContainerRuntime, (typeof MPI_RUNTIMES)[number], LauncherMode][] = [];
  for (const rt of ['none', 'docker', 'singularity'] as const)
    for (const mpi of MPI_RUNTIMES) for (const mode of ['managed', 'custom'] as const) combos.push([rt, mpi, mode]);

  it.each(combos)('%s / %s / %s', (runtime, mpiRuntime, launcherMode) => {
    const custom = launcherMode === 'custom';
    const c = buildMpiTaskCommands(
      inputFor(runtime, {
        mpiRuntime,
        launcherMode,
        vmSize: 'Standard_HB120rs_v3',
        env: { GREETING: 'hello "world" $HOME' },
        preExecutionCommand: 'export PRE_RAN="yes it did"',
        command: custom ? CUSTOM_SCRIPT : './hello --size 10',
      }),
    );
    const r = run(c.applicationCommandLine, c.environment, { DOCKER_STUB_EXEC: '1' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const hosts = fs.readFileSync(path.join(r.nodeDir, 'task', 'wd', 'mpijob.hosts'), 'utf8');
    expect(hosts).toBe(mpiRuntime === 'openmpi' ? '10.0.0.4 slots=2\n10.0.0.5 slots=2\n' : '10.0.0.4:2\n10.0.0.5:2\n');
    const mpirunEnv = readEnv(path.join(r.out, 'mpirun.env'));
    expect(mpirunEnv.PRE_RAN).toBe('yes it did'); // pre-execution ran in the launcher's shell
    const argv = readNulList(path.join(r.out, 'mpirun.args'));
    if (custom) {
      // Run once, on the master, with the launch variables and the fabric environment exported.
      expect(fs.readFileSync(path.join(r.out, 'custom.count'), 'utf8')).toBe('ran\n');
      expect(fs.readFileSync(path.join(r.out, 'custom.hosts'), 'utf8')).toBe(hosts);
      const env = Object.fromEntries(
        fs
          .readFileSync(path.join(r.out, 'custom.env'), 'utf8')
          .split('\n')
          .filter((l) => /^[A-Za-z_][A-Za-z0-9_]*=/.test(l))
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      expect(env).toMatchObject({ MPIJOB_NP: '4', MPIJOB_PPN: '2', MPIJOB_NODES: '2', AZ_BATCH_HOST_LIST: '10.0.0.4,10.0.0.5' });
      for (const e of fabricPreset(mpiRuntime, 'rdma').env) expect(env[e.name]).toBe(e.value);
      expect(argv).toEqual(['-np', '4', '--hostfile', path.join(r.nodeDir, 'task', 'wd', 'mpijob.hosts'), './app', "it's", 'hello "world" $HOME']);
      if (runtime === 'singularity') expect(env.MPIJOB_IMAGE).toBe(path.join(r.nodeDir, 'shared', 'mpijob', 'sif', 'job-1', '0.sif'));
    } else {
      expect(argv).toContain(mpiRuntime === 'openmpi' ? '--map-by' : '-hosts');
      expect(argv[argv.length - 1]).toBe('./hello --size 10');
      if (runtime === 'singularity') expect(argv.slice(-2)).toEqual(['mpijob-rank', './hello --size 10']);
      else expect(argv.slice(-3, -1)).toEqual([runtime === 'none' ? '/bin/bash' : '/bin/sh', '-c']);
    }
    if (runtime === 'docker') expect(dockerCalls(r.out)[0][0]).toBe('exec');
  });
});

describe('user code runs as on an HPC login shell', () => {
  it('a vendor environment script that reads unset variables does not abort the job; our glue stays strict', () => {
    // Shaped like Intel's mpivars.sh / OpenFOAM's etc/bashrc: unset variables, a failing test, unbound arrays.
    const vendor = [
      'if [ -z "${I_MPI_ROOT}" ]; then export I_MPI_ROOT=/opt/intel/mpi; fi',
      'export LD_LIBRARY_PATH="$I_MPI_ROOT/lib:$LD_LIBRARY_PATH:$LIBRARY_PATH_NOT_SET"',
      'for a in "${VENDOR_ARGS[@]}"; do :; done',
      'grep -q nothing /dev/null | cat',
      'export VENDOR_LOADED=1',
    ].join('\n');
    const c = buildMpiTaskCommands({ ...base, preExecutionCommand: 'source ./vendorvars.sh intel64', command: 'echo "$VENDOR_LOADED"' });
    const r = run(c.applicationCommandLine, c.environment, {}, (nodeDir) => fs.writeFileSync(path.join(nodeDir, '..', 'vendorvars.sh'), vendor));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const env = readEnv(path.join(r.out, 'mpirun.env'));
    expect(env).toMatchObject({ VENDOR_LOADED: '1', I_MPI_ROOT: '/opt/intel/mpi' });
    // The glue around it is still strict: without a host list it stops before running anything of the user's.
    const bad = run(c.applicationCommandLine, c.environment, { AZ_BATCH_HOST_LIST: '' });
    expect(bad.stderr).toMatch(/AZ_BATCH_HOST_LIST is not set/);
    expect(fs.existsSync(path.join(bad.out, 'mpirun.args'))).toBe(false);
  });

  it('a failing pre-execution command stops the job with its own status and says so', () => {
    const c = buildMpiTaskCommands({ ...base, preExecutionCommand: 'echo loading; (exit 4)' });
    const r = run(c.applicationCommandLine, c.environment);
    expect(r.status).toBe(4);
    expect(r.stderr).toContain('[mpijob] preExecutionCommand exited with status 4');
    expect(fs.existsSync(path.join(r.out, 'mpirun.args'))).toBe(false);
  });

  it("the user command's exit status decides the task: the launcher's, or the custom script's", () => {
    const managed = buildMpiTaskCommands(base);
    expect(run(managed.applicationCommandLine, managed.environment, { MPIRUN_STUB_EXIT: '9' }).status).toBe(9);
    const custom = buildMpiTaskCommands({ ...base, launcherMode: 'custom', command: 'echo "$UNSET_IN_CUSTOM"; false; exit 7' });
    expect(run(custom.applicationCommandLine, custom.environment).status).toBe(7);
    const customOk = buildMpiTaskCommands({ ...base, launcherMode: 'custom', command: 'test -z "$UNSET_IN_CUSTOM"' });
    expect(run(customOk.applicationCommandLine, customOk.environment).status).toBe(0);
  });

  it("`module load` works in the pre-execution command (environment-modules from the node's /etc/profile.d)", () => {
    // scripts/ensure-deps.sh installs Debian's environment-modules, as Azure's HPC images have it.
    expect(fs.existsSync('/etc/profile.d/modules.sh')).toBe(true);
    const modules = path.join(harness.root(), 'modulefiles');
    fs.mkdirSync(path.join(modules, 'mpi'), { recursive: true });
    fs.writeFileSync(path.join(modules, 'mpi', 'testmpi'), `#%Module1.0\nsetenv MPI_BIN ${harness.bin()}\nsetenv MPI_FLAVOR "test mpi"\n`);
    const c = buildMpiTaskCommands({ ...base, preExecutionCommand: 'module load mpi/testmpi', launcher: '$MPI_BIN/mpirun' });
    const r = run(c.applicationCommandLine, c.environment, { MODULEPATH: modules });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(readEnv(path.join(r.out, 'mpirun.env')).MPI_FLAVOR).toBe('test mpi');
    const missing = buildMpiTaskCommands({ ...base, preExecutionCommand: 'module load mpi/not-installed' });
    const m = run(missing.applicationCommandLine, missing.environment, { MODULEPATH: modules });
    expect(m.status).not.toBe(0);
    expect(m.stderr).toMatch(/Unable to locate a modulefile for 'mpi\/not-installed'/);
    expect(m.stderr).toContain('[mpijob] preExecutionCommand exited with status');
  });

  it('start-task and coordination commands get bash, the profile and no strict mode', () => {
    const start = run(userCommandLine('echo "[$NOT_SET]"; source /dev/null; type module >/dev/null && echo module-ok; false; echo "after false"'), []);
    expect(start.status).toBe(0);
    expect(start.stdout).toBe('[]\nmodule-ok\nafter false\n');
    expect(run(userCommandLine('exit 5'), []).status).toBe(5);
    const c = buildMpiTaskCommands({ ...base, coordinationCommand: 'echo "[$NOT_SET]" > "$STUB_OUT/coord"; type module >/dev/null' });
    const coord = run(c.coordinationCommandLine, c.environment);
    expect(coord.status).toBe(0);
    expect(fs.readFileSync(path.join(coord.out, 'coord'), 'utf8')).toBe('[]\n');
    const failing = buildMpiTaskCommands({ ...base, coordinationCommand: 'echo preparing; (exit 3)' });
    const f = run(failing.coordinationCommandLine, failing.environment);
    expect(f.status).toBe(3);
    expect(f.stderr).toContain('[mpijob] coordinationCommand exited with status 3');
    const exiting = buildMpiTaskCommands({ ...base, coordinationCommand: 'exit 6' }); // the user's exit ends the step
    expect(run(exiting.coordinationCommandLine, exiting.environment).status).toBe(6);
  });
});

describe('launcher control', () => {
  it('options may reference the launch variables; anything else in them stays literal', () => {
    const c = buildMpiTaskCommands({
      ...base,
      mpiRuntime: 'intelmpi',
      options: ['-machinefile', '$MPIJOB_HOSTFILE', '-np', '${MPIJOB_NP}', '-genv', 'OMP_NUM_THREADS=${MPIJOB_PPN}', '$(id)', '`id`'],
    });
    const r = run(c.applicationCommandLine, c.environment);
    expect(r.status).toBe(0);
    const argv = readNulList(path.join(r.out, 'mpirun.args'));
    expect(argv.slice(0, 8)).toEqual([
      '-machinefile',
      path.join(r.nodeDir, 'task', 'wd', 'mpijob.hosts'),
      '-np',
      '4',
      '-genv',
      'OMP_NUM_THREADS=2',
      '$(id)',
      '`id`',
    ]);
  });

  it('the launcher executable may come from a variable set by the pre-execution command', () => {
    const c = buildMpiTaskCommands({ ...base, preExecutionCommand: `export MY_MPI="${harness.bin()}"`, launcher: '${MY_MPI}/mpirun' });
    const r = run(c.applicationCommandLine, c.environment);
    expect(r.status).toBe(0);
    expect(fs.existsSync(path.join(r.out, 'mpirun.args'))).toBe(true);
    const unset = buildMpiTaskCommands({ ...base, launcher: '$NO_SUCH_MPI/mpirun' });
    const u = run(unset.applicationCommandLine, unset.environment);
    expect(u.status).not.toBe(0);
    expect(u.stderr).toMatch(/NO_SUCH_MPI: unbound variable/);
  });

  it('cores counts physical cores; gpus counts GPUs and fails clearly without a driver', () => {
    const cores = buildMpiTaskCommands({ ...base, processesPerNode: 'cores' });
    const rc = run(cores.applicationCommandLine, cores.environment);
    expect(rc.status).toBe(0);
    expect(after(readNulList(path.join(rc.out, 'mpirun.args')), '-np')).toBe('8'); // 2 nodes × 4 cores (lscpu stub: 8 threads)
    const gpus = buildMpiTaskCommands({ ...base, processesPerNode: 'gpus', vmSize: 'Standard_ND96asr_v4' });
    const rg = run(gpus.applicationCommandLine, gpus.environment, { PATH: `${harness.gpuBin()}:${harness.bin()}:/usr/bin:/bin`, GPU_STUB_COUNT: '8' });
    expect(rg.status).toBe(0);
    const argv = readNulList(path.join(rg.out, 'mpirun.args'));
    expect(after(argv, '-np')).toBe('16');
    expect(after(argv, '--map-by')).toBe('ppr:8:node');
    const none = run(gpus.applicationCommandLine, gpus.environment);
    expect(none.status).toBe(1);
    expect(none.stderr).toContain('nvidia-smi is not on this node');
  });

  it('refuses what makes no sense for the mode', () => {
    expect(() => buildMpiTaskCommands({ ...base, launcherMode: 'custom', options: ['-v'] })).toThrow(/managed launcher/);
    expect(() => buildMpiTaskCommands({ ...base, launcherMode: 'custom', launcher: '/opt/mpirun' })).toThrow(/managed launcher/);
    expect(() => buildMpiTaskCommands({ ...base, processesPerNode: 'sockets' as never })).toThrow(PlanningError);
  });
});

describe('presets by MPI runtime and version', () => {
  const envOf = (c: ReturnType<typeof buildMpiTaskCommands>) => Object.fromEntries(c.environment.map((e) => [e.name, e.value]));
  it('Intel MPI 2018 uses OFA on InfiniBand and forwards no UCX key; 2019+ uses OFI/mlx', () => {
    const old = buildMpiTaskCommands({ ...base, mpiRuntime: 'intelmpi', mpiVersion: '2018', vmSize: 'Standard_HC44rs' });
    expect(envOf(old)).toEqual({ I_MPI_FABRICS: 'shm:ofa', I_MPI_FALLBACK: '0' });
    expect(old.applicationCommandLine).not.toContain('UCX_IB_PKEY');
    expect(envOf(buildMpiTaskCommands({ ...base, mpiRuntime: 'intelmpi', mpiVersion: '2021.13', vmSize: 'Standard_HB120rs_v3' }))).toEqual({
      I_MPI_FABRICS: 'shm:ofi',
      FI_PROVIDER: 'mlx',
    });
    expect(envOf(buildMpiTaskCommands({ ...base, mpiRuntime: 'intelmpi', mpiVersion: '2018', fabric: 'tcp' }))).toEqual({ I_MPI_FABRICS: 'shm:tcp' });
  });

  it('Open MPI 5 selects UCX without the BTLs Open MPI 5 no longer has; MPICH 3 reaches IB through IPoIB', () => {
    const o5 = buildMpiTaskCommands({ ...base, mpiVersion: '5.0.3', vmSize: 'Standard_HB176rs_v4' });
    const r5 = run(o5.applicationCommandLine, o5.environment);
    const a5 = readNulList(path.join(r5.out, 'mpirun.args'));
    expect(a5.flatMap((a, i) => (a === '--mca' ? [`${a5[i + 1]}=${a5[i + 2]}`] : []))).toEqual(['pml=ucx', 'osc=ucx']);
    const m3 = buildMpiTaskCommands({ ...base, mpiRuntime: 'mpich', mpiVersion: '3.4', vmSize: 'Standard_HB120rs_v3' });
    const r3 = run(m3.applicationCommandLine, m3.environment);
    expect(after(readNulList(path.join(r3.out, 'mpirun.args')), '-iface')).toBe('ib0');
  });

  it('refuses versions outside the table', () => {
    expect(() => buildMpiTaskCommands({ ...base, mpiVersion: '3.1' })).toThrow(/openmpi 3.1 is not supported/);
    expect(() => buildMpiTaskCommands({ ...base, mpiRuntime: 'mvapich', mpiVersion: '3.0' })).toThrow(/MVAPICH2/);
  });
});

describe('container options', () => {
  it('docker: allowlisted run options, GPUs and binds reach docker run', () => {
    const c = buildMpiTaskCommands(
      inputFor('docker', {
        vmSize: 'Standard_ND96asr_v4',
        containerOptions: {
          shmSize: '8g',
          ulimits: { stack: '-1', nofile: '65536' },
          capAdd: ['SYS_NICE', 'SYS_PTRACE'],
          privileged: true,
          gpus: true,
          binds: [{ source: '/opt/intel', target: '/opt/intel', readOnly: true }],
        },
      }),
    );
    const r = run(c.coordinationCommandLine, c.environment);
    expect(r.status).toBe(0);
    const runArgs = dockerCalls(r.out)[1];
    expect(runArgs).toContain('--shm-size=8g');
    expect(runArgs.flatMap((a, i) => (a === '--ulimit' ? [runArgs[i + 1]] : []))).toEqual(['memlock=-1', 'stack=-1', 'nofile=65536']);
    expect(runArgs).toEqual(expect.arrayContaining(['--cap-add=SYS_NICE', '--cap-add=SYS_PTRACE', '--privileged']));
    expect(after(runArgs, '--gpus')).toBe('all');
    expect(runArgs).toContain('/opt/intel:/opt/intel:ro');
  });

  it('singularity: --nv and -B for every rank; docker-only options are refused', () => {
    const c = buildMpiTaskCommands(inputFor('singularity', { containerOptions: { gpus: true, binds: [{ source: '/scratch', target: '/scratch' }] } }));
    const r = run(c.applicationCommandLine, c.environment);
    const argv = readNulList(path.join(r.out, 'mpirun.args'));
    expect(argv[argv.length - 3]).toContain('--nv -B /scratch:/scratch ');
    expect(() => buildMpiTaskCommands(inputFor('singularity', { containerOptions: { shmSize: '1g' } }))).toThrow(/docker option/);
    expect(() => buildMpiTaskCommands(inputFor('singularity', { containerOptions: { privileged: true } }))).toThrow(/docker option/);
    expect(() => buildMpiTaskCommands(inputFor('none', { containerOptions: { gpus: true } }))).toThrow(/container runtime/);
  });
});

describe('mapping a job spec onto the tasks (planning)', () => {
  const spec = (yaml: string): JobSpec => {
    const r = parseJobSpec(yaml, 'application/yaml');
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    return r.spec;
  };
  const singularity = spec(`
name: osu
pool: { vmSize: Standard_HB120rs_v3, nodes: 2 }
container:
  runtime: singularity
  images:
    - library://alfpark/mvapich/mvapich:2.3.2
    - { account: data1, container: images, blob: sif/tools.sif }
  gpus: false
  runOptions: { binds: [{ source: /scratch/osu, target: /scratch }] }
mpi: { runtime: mvapich, version: "2.3", processesPerNode: 1, command: osu_allreduce }
`);

  it('one pull task per node brings every image, blob SIF files as resource files', () => {
    const t = pullTask('osu-1', singularity, ['https://data1.blob/images/sif/tools.sif?sig=x']);
    expect(t.resourceFiles).toEqual([{ httpUrl: 'https://data1.blob/images/sif/tools.sif?sig=x', filePath: 'mpijob-image-1.sif' }]);
    const r = run(t.commandLine, [], {}, (nodeDir) => fs.writeFileSync(path.join(nodeDir, '..', 'mpijob-image-1.sif'), 'tools'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(fs.readdirSync(path.join(r.nodeDir, 'shared', 'mpijob', 'sif', 'osu-1')).sort()).toEqual(['0.sif', '1.sif']);
    expect(fs.readFileSync(path.join(r.nodeDir, 'shared', 'mpijob', 'sif', 'osu-1', '0.sif'), 'utf8')).toBe('sif of library://alfpark/mvapich/mvapich:2.3.2\n');
    expect(() => pullTask('osu-1', singularity, [])).toThrow(/no SAS URL/);
    // The release task removes the job's SIF files and its image-tree state on the node.
    fs.mkdirSync(path.join(r.nodeDir, 'shared', 'mpijob', 'images', 'osu-1'), { recursive: true });
    fs.writeFileSync(path.join(r.nodeDir, 'shared', 'mpijob', 'images', 'osu-1', 'digests'), 'sha256:x\n');
    const rel = run(releaseTaskCommand('osu-1', singularity), [], { AZ_BATCH_NODE_SHARED_DIR: path.join(r.nodeDir, 'shared') });
    expect(rel.status).toBe(0);
    expect(fs.existsSync(path.join(r.nodeDir, 'shared', 'mpijob', 'sif', 'osu-1'))).toBe(false);
    expect(fs.existsSync(path.join(r.nodeDir, 'shared', 'mpijob', 'images', 'osu-1'))).toBe(false);
  });

  it('the MPI task carries version, binds and the SIF cache key', () => {
    expect(containerOptionsFor(singularity)).toEqual({ binds: [{ source: '/scratch/osu', target: '/scratch', readOnly: false }] });
    const plan = planJob('osu-1', singularity);
    const req = mpiTaskRequest(plan, singularity, [{ id: 'n0' }, { id: 'n1' }], '/data', 'hpc-osu-1');
    const script = splitShellWords(req.applicationCommandLine)[2];
    expect(script).toContain('"$AZ_BATCH_NODE_SHARED_DIR"/mpijob/sif/osu-1/0.sif');
    expect(script).toContain('-B /scratch/osu:/scratch');
    expect(req.environment).toEqual([{ name: 'MV2_IBA_HCA', value: 'mlx5_0' }]);
  });
});
