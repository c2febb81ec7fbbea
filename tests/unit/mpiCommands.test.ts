/**
 * Command builders, checked by running what they build: each command line is split as Batch splits it and the
 * script runs under a real /bin/bash, with `mpirun`, `docker` and `nproc` replaced by recording stubs on PATH (the one
 * boundary we replace: there is no container engine or IB fabric here). The stubs record argv exactly as the
 * launcher would receive it.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import fc from 'fast-check';
import {
  ContainerRuntime,
  MpiTaskInput,
  buildContainerCleanupCommand,
  buildMpiTaskCommands,
  buildPullCommand,
  HOSTFILE_NAME,
} from '../../shared/core/mpi/commands';
import { MPI_RUNTIMES } from '../../shared/core/mpi/rdmaPresets';
import { splitShellWords } from '../../shared/core/mpi/shellWords';
import { PlanningError } from '../../shared/core/planning/errors';
import { BASE_INPUT, after, commandHarness, dockerCalls, readEnv, readNulList } from '../helpers/nodeCommands';

const harness = commandHarness('mpi-commands-');
const runCommandLine = harness.run;
let root: string;
let bin: string;
beforeAll(() => {
  root = harness.root();
  bin = harness.bin();
});

const base: MpiTaskInput = BASE_INPUT;

describe('buildMpiTaskCommands: every combination is valid bash', () => {
  const combos: [ContainerRuntime, (typeof MPI_RUNTIMES)[number], 'tcp' | 'rdma', number | 'nproc'][] = [];
  for (const rt of ['docker', 'singularity', 'none'] as const)
    for (const mpi of MPI_RUNTIMES) for (const fabric of ['tcp', 'rdma'] as const) for (const ppn of [2, 'nproc'] as const) combos.push([rt, mpi, fabric, ppn]);

  it('passes bash -n for all runtime × MPI × fabric × ppn combinations', () => {
    const scripts: string[] = [];
    for (const [runtime, mpiRuntime, fabric, processesPerNode] of combos) {
      const c = buildMpiTaskCommands({
        ...base,
        runtime,
        mpiRuntime,
        fabric,
        processesPerNode,
        image: runtime === 'docker' ? 'registry.local/hpc/mpi:1' : undefined,
        sifCacheKey: runtime === 'singularity' ? 'job-1' : undefined,
        containerName: 'job-1-mpi',
        env: { FOO: 'bar' },
        preExecutionCommand: 'source /etc/profile',
        shardManifestPath: '/mnt/m.json',
        shardDownloadCommand: 'echo download',
      });
      for (const line of [c.coordinationCommandLine, c.applicationCommandLine]) scripts.push(splitShellWords(line)[2]);
    }
    // Written to files and checked by one bash process: real parsing, bounded cost.
    const dir = fs.mkdtempSync(path.join(root, 'syntax-'));
    scripts.forEach((s, i) => fs.writeFileSync(path.join(dir, `${String(i).padStart(3, '0')}.sh`), s));
    const r = spawnSync('/bin/bash', ['-c', 'for f in "$1"/*.sh; do bash -n "$f" || echo "FAIL $f"; done', 'check', dir], {
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(r.stdout + r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(fs.readdirSync(dir)).toHaveLength(combos.length * 2);
  });
});

describe('buildMpiTaskCommands: native (none)', () => {
  it('Open MPI: user options first, then -np, slot host list, ppr mapping, TCP preset and env forwarding', () => {
    const c = buildMpiTaskCommands({ ...base, options: ['--mca', 'btl', 'self,tcp'], env: { FOO: 'bar' }, fabric: 'tcp' });
    expect(c.fabric).toBe('tcp');
    expect(c.environment).toEqual([{ name: 'FOO', value: 'bar' }]);
    const coord = runCommandLine(c.coordinationCommandLine, c.environment);
    expect(coord.status).toBe(0);
    const app = runCommandLine(c.applicationCommandLine, c.environment);
    expect(app.stderr).toBe('');
    expect(app.status).toBe(0);
    expect(readNulList(path.join(app.out, 'mpirun.args'))).toEqual([
      '--mca',
      'btl',
      'self,tcp',
      '-np',
      '4',
      '--host',
      '10.0.0.4:2,10.0.0.5:2',
      '--map-by',
      'ppr:2:node',
      '--mca',
      'btl_tcp_if_include',
      'eth0',
      '-x',
      'FOO',
      '/bin/bash',
      '-c',
      './hello --size 10',
    ]);
    expect(readEnv(path.join(app.out, 'mpirun.env')).FOO).toBe('bar');
  });

  it('Intel MPI over IB: -hosts/-np/-perhost, presets and the partition key from the node file', () => {
    const c = buildMpiTaskCommands({ ...base, mpiRuntime: 'intelmpi', vmSize: 'Standard_HB120rs_v3' });
    expect(c.fabric).toBe('rdma');
    const names = c.environment.map((e) => e.name);
    expect(names).toEqual(['FI_PROVIDER', 'I_MPI_FABRICS']);
    const app = runCommandLine(c.applicationCommandLine, c.environment, {}, (nodeDir) =>
      // Written by node preparation on SR-IOV nodes (contents as Shipyard reads them).
      fs.writeFileSync(path.join(nodeDir, 'startup', 'wd', 'UCX_IB_PKEY'), 'UCX_IB_PKEY=0x800b\n'),
    );
    expect(app.stderr).toBe('');
    expect(app.status).toBe(0);
    const argv = readNulList(path.join(app.out, 'mpirun.args'));
    expect(argv.slice(0, 6)).toEqual(['-hosts', '10.0.0.4,10.0.0.5', '-np', '4', '-perhost', '2']);
    expect(after(argv, '-genv')).toBe('FI_PROVIDER');
    const genv = argv.flatMap((a, i) => (a === '-genv' ? [[argv[i + 1], argv[i + 2]]] : []));
    expect(genv).toEqual([
      ['FI_PROVIDER', 'mlx'],
      ['I_MPI_FABRICS', 'shm:ofi'],
      ['UCX_IB_PKEY', '0x800b'],
    ]);
    expect(argv.slice(-3)).toEqual(['/bin/bash', '-c', './hello --size 10']);
  });

  it('without the partition key file the key is simply not forwarded', () => {
    const c = buildMpiTaskCommands({ ...base, mpiRuntime: 'mpich', fabric: 'rdma' });
    const app = runCommandLine(c.applicationCommandLine, c.environment);
    expect(app.status).toBe(0);
    const argv = readNulList(path.join(app.out, 'mpirun.args'));
    expect(argv).not.toContain('UCX_IB_PKEY');
    expect(after(argv, '-ppn')).toBe('2');
  });

  it('fails clearly when not run as a multi-instance task', () => {
    const c = buildMpiTaskCommands(base);
    const app = runCommandLine(c.applicationCommandLine, c.environment, { AZ_BATCH_HOST_LIST: '' });
    expect(app.status).not.toBe(0);
    expect(app.stderr).toMatch(/AZ_BATCH_HOST_LIST is not set/);
    expect(fs.existsSync(path.join(app.out, 'mpirun.args'))).toBe(false);
  });

  it('runs the shard download on every node in the coordination step, and fails the step if it fails', () => {
    const c = buildMpiTaskCommands({
      ...base,
      shardManifestPath: '/data/manifest node.json',
      shardDownloadCommand: 'printf %s "$MPIJOB_SHARD_MANIFEST" > "$STUB_OUT/downloaded"',
    });
    expect(c.environment).toContainEqual({ name: 'MPIJOB_SHARD_MANIFEST', value: '/data/manifest node.json' });
    const ok = runCommandLine(c.coordinationCommandLine, c.environment);
    expect(ok.status).toBe(0);
    expect(fs.readFileSync(path.join(ok.out, 'downloaded'), 'utf8')).toBe('/data/manifest node.json');
    const bad = buildMpiTaskCommands({ ...base, shardDownloadCommand: 'exit 7' });
    expect(runCommandLine(bad.coordinationCommandLine, bad.environment).status).toBe(7);
  });

  it('nproc: processes per node are counted on the node at run time', () => {
    const c = buildMpiTaskCommands({ ...base, processesPerNode: 'nproc', mpiRuntime: 'openmpi' });
    const app = runCommandLine(c.applicationCommandLine, c.environment);
    const argv = readNulList(path.join(app.out, 'mpirun.args'));
    expect(after(argv, '-np')).toBe('6'); // 2 nodes x stub nproc 3
    expect(after(argv, '--host')).toBe('10.0.0.4:3,10.0.0.5:3');
  });
});

describe('buildMpiTaskCommands: singularity', () => {
  it("launches with the host MPI; every rank runs the command in the job's SIF file on its own node", () => {
    const c = buildMpiTaskCommands({ ...base, runtime: 'singularity', mpiRuntime: 'mvapich', sifCacheKey: 'job-7', fabric: 'tcp' });
    const coord = runCommandLine(c.coordinationCommandLine, c.environment);
    expect(coord.status).toBe(0);
    const app = runCommandLine(c.applicationCommandLine, c.environment);
    expect(app.status).toBe(0);
    const argv = readNulList(path.join(app.out, 'mpirun.args'));
    expect(argv.slice(0, 8)).toEqual(['-hosts', '10.0.0.4,10.0.0.5', '-np', '4', '-ppn', '2', '-iface', 'eth0']);
    expect(argv.slice(-5, -3)).toEqual(['/bin/bash', '-c']);
    expect(argv.slice(-2)).toEqual(['mpijob-rank', './hello --size 10']);
    // Play one rank: its shell resolves the SIF path and binds on its node, then singularity runs the command.
    const rank = spawnSync('/bin/bash', ['-c', argv[argv.length - 3], 'mpijob-rank', './hello --size 10'], {
      env: {
        PATH: `${bin}:/usr/bin:/bin`,
        STUB_OUT: app.out,
        AZ_BATCH_NODE_SHARED_DIR: '/n2/shared',
        AZ_BATCH_NODE_ROOT_DIR: '/n2',
        AZ_BATCH_TASK_WORKING_DIR: '/n2/wd',
      },
      encoding: 'utf8',
    });
    expect(rank.status).toBe(0);
    expect(readNulList(path.join(app.out, 'singularity.args'))).toEqual([
      'exec',
      '--pwd',
      '/n2/wd',
      '-B',
      '/n2:/n2',
      '/n2/shared/mpijob/sif/job-7/0.sif',
      '/bin/sh',
      '-c',
      './hello --size 10',
    ]);
    // A rank Open MPI starts over ssh on a real node has no AZ_BATCH_* variables: it uses the master's, forwarded.
    expect(argv.filter((a, i) => argv[i - 1] === '-genv' && a.startsWith('MPIJOB_'))).toEqual([
      'MPIJOB_NODE_ROOT_DIR',
      'MPIJOB_NODE_SHARED_DIR',
      'MPIJOB_TASK_WORKING_DIR',
    ]);
    const remote = spawnSync('/bin/bash', ['-c', argv[argv.length - 3], 'mpijob-rank', './hello --size 10'], {
      env: {
        PATH: `${bin}:/usr/bin:/bin`,
        STUB_OUT: app.out,
        MPIJOB_NODE_SHARED_DIR: '/m/shared',
        MPIJOB_NODE_ROOT_DIR: '/m',
        MPIJOB_TASK_WORKING_DIR: '/m/wd',
      },
      encoding: 'utf8',
    });
    expect(remote.status).toBe(0);
    expect(readNulList(path.join(app.out, 'singularity.args')).slice(0, 6)).toEqual([
      'exec',
      '--pwd',
      '/m/wd',
      '-B',
      '/m:/m',
      '/m/shared/mpijob/sif/job-7/0.sif',
    ]);
  });
});

describe('buildMpiTaskCommands: docker', () => {
  const dockerInput: MpiTaskInput = {
    ...base,
    runtime: 'docker',
    image: 'registry.local/hpc/mpi:1',
    containerName: 'job-1-mpi',
    vmSize: 'Standard_HB120rs_v3',
    env: { FOO: 'bar' },
    shmSize: '4g',
    preExecutionCommand: 'export PRE_RAN=yes',
  };

  it('coordination replaces any old container and starts sshd on port 23 with host networking', () => {
    const c = buildMpiTaskCommands(dockerInput);
    const coord = runCommandLine(c.coordinationCommandLine, c.environment);
    expect(coord.stderr).toBe('');
    expect(coord.status).toBe(0);
    const calls = dockerCalls(coord.out);
    expect(calls.map((a) => a[0])).toEqual(['rm', 'run', 'inspect']);
    expect(calls[0]).toEqual(['rm', '-f', 'job-1-mpi']);
    const run = calls[1];
    expect(run.slice(0, 6)).toEqual(['run', '-d', '--name', 'job-1-mpi', '--net=host', '--shm-size=4g']);
    expect(run).toContain('--ulimit');
    expect(after(run, '--ulimit')).toBe('memlock=-1');
    expect(after(run, '-v')).toBe(`${coord.nodeDir}:${coord.nodeDir}`);
    expect(after(run, '-w')).toBe(path.join(coord.nodeDir, 'task', 'wd'));
    const envNames = run.flatMap((a, i) => (a === '-e' ? [run[i + 1]] : []));
    expect(envNames).toEqual(expect.arrayContaining(['FOO', 'UCX_NET_DEVICES', 'UCX_TLS', 'AZ_BATCH_HOST_LIST', 'AZ_BATCH_TASK_WORKING_DIR']));
    expect(run.slice(-5)).toEqual(['registry.local/hpc/mpi:1', '/usr/sbin/sshd', '-D', '-p', '23']);
    expect(c.containerRunOptions).toEqual(expect.arrayContaining(['--net=host', '--shm-size=4g', '--device=/dev/infiniband/*']));
  });

  it('a TCP pool gets no devices and no memlock change; a custom coordination command replaces sshd', () => {
    const c = buildMpiTaskCommands({ ...dockerInput, vmSize: 'Standard_D4s_v3', coordinationCommand: '/opt/start.sh --port 2222' });
    const coord = runCommandLine(c.coordinationCommandLine, c.environment);
    const run = dockerCalls(coord.out)[1];
    expect(run).not.toContain('--ulimit');
    expect(run.some((a) => a.startsWith('--device'))).toBe(false);
    expect(run.slice(-3)).toEqual(['/bin/sh', '-c', '/opt/start.sh --port 2222']);
  });

  it('application runs mpirun inside the container with ssh port 23, root allowed, and forwarded env', () => {
    const c = buildMpiTaskCommands(dockerInput);
    const app = runCommandLine(c.applicationCommandLine, c.environment);
    expect(app.status).toBe(0);
    const [exec] = dockerCalls(app.out);
    expect(exec.slice(0, 13)).toEqual([
      'exec',
      '-e',
      'MPIJOB_PPN',
      '-e',
      'MPIJOB_NODES',
      '-e',
      'MPIJOB_NP',
      '-e',
      'MPIJOB_HOSTS',
      '-e',
      'MPIJOB_HOSTFILE',
      '-e',
      'UCX_IB_PKEY',
    ]);
    expect(exec.slice(-4, -2)).toEqual(['job-1-mpi', '/bin/bash']);
    expect(exec[exec.length - 2]).toBe('-c');
    // Play the container's part: run the launcher script with the environment docker exec would pass in.
    const execEnv = readEnv(path.join(app.out, 'docker.0.env'));
    const inner = spawnSync('/bin/bash', ['-c', exec[exec.length - 1]], {
      env: {
        PATH: `${bin}:/usr/bin:/bin`,
        STUB_OUT: app.out,
        ...Object.fromEntries(c.environment.map((e) => [e.name, e.value])),
        MPIJOB_PPN: execEnv.MPIJOB_PPN,
        MPIJOB_NP: execEnv.MPIJOB_NP,
        MPIJOB_HOSTS: execEnv.MPIJOB_HOSTS,
      },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(inner.stderr).toBe('');
    expect(inner.status).toBe(0);
    const argv = readNulList(path.join(app.out, 'mpirun.args'));
    expect(argv.slice(0, 7)).toEqual(['-np', '4', '--host', '10.0.0.4:2,10.0.0.5:2', '--map-by', 'ppr:2:node', '--allow-run-as-root']);
    const mca = argv.flatMap((a, i) => (a === '--mca' ? [`${argv[i + 1]}=${argv[i + 2]}`] : []));
    expect(mca).toEqual(['pml=ucx', 'btl=^vader,tcp,openib', 'plm_rsh_args=-p 23']);
    expect(readEnv(path.join(app.out, 'mpirun.env')).PRE_RAN).toBe('yes'); // pre-execution ran in the launcher's shell
  });

  it('Hydra launchers get the ssh port through their environment', () => {
    for (const [mpiRuntime, name] of [
      ['intelmpi', 'I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS'],
      ['mpich', 'HYDRA_LAUNCHER_EXTRA_ARGS'],
      ['mvapich', 'HYDRA_LAUNCHER_EXTRA_ARGS'],
    ] as const) {
      expect(buildMpiTaskCommands({ ...dockerInput, mpiRuntime }).environment).toContainEqual({ name, value: '-p 23' });
      expect(buildMpiTaskCommands({ ...base, mpiRuntime }).environment.map((e) => e.name)).not.toContain(name);
    }
  });
});

describe('user data stays data (bounded property, real bash)', () => {
  const text = fc
    .array(
      fc.oneof(fc.constantFrom("'", '"', '$', '$(id)', '`id`', '\\', '\n', ' ', ';', '|', '&&', '*', '\t', '!'), fc.string({ unit: 'binary', maxLength: 3 })),
      {
        minLength: 1,
        maxLength: 8,
      },
    )
    .map((p) => p.join(''))
    .filter((s) => !s.includes('\0') && s.trim() !== '');

  it.each(['openmpi', 'intelmpi'] as const)('%s: the command and env values reach the launcher byte for byte', (mpiRuntime) => {
    fc.assert(
      fc.property(text, text, (command, value) => {
        // Options are literal words except for $NAME references (tested in mpiLaunch.test.ts): keep "$" out here.
        const option = value.replace(/\$/g, '%');
        const c = buildMpiTaskCommands({ ...base, mpiRuntime, command, env: { USER_VALUE: value }, options: [option] });
        const app = runCommandLine(c.applicationCommandLine, c.environment);
        expect(app.status).toBe(0);
        const argv = readNulList(path.join(app.out, 'mpirun.args'));
        expect(argv[0]).toBe(option); // user options are argv words, unexpanded
        expect(argv.slice(-3)).toEqual(['/bin/bash', '-c', command]);
        if (mpiRuntime === 'openmpi') expect(readEnv(path.join(app.out, 'mpirun.env')).USER_VALUE).toBe(value);
        else expect(argv[argv.indexOf('USER_VALUE') + 1]).toBe(value);
      }),
      { numRuns: 15 },
    );
  });
});

describe('cleanup and pull commands', () => {
  it('cleanup removes the containers present, tolerates missing ones, and exits 0 only when none is left', () => {
    const line = buildContainerCleanupCommand(['job-1-mpi', 'job-1-tools']);
    const present = (names: string[]) => (nodeDir: string) => fs.writeFileSync(path.join(nodeDir, '..', 'containers'), names.map((n) => `${n}\n`).join(''));

    const ok = runCommandLine(line, [], {}, present(['other', 'job-1-mpi']));
    expect(ok.status).toBe(0);
    expect(dockerCalls(ok.out).filter((c) => c[0] === 'rm')).toEqual([['rm', '-f', '-v', 'job-1-mpi']]);
    expect(fs.readFileSync(path.join(ok.out, 'containers'), 'utf8')).toBe('other\n');
    expect(ok.stdout).toContain('removed container job-1-mpi');
    expect(ok.stdout).toContain('no container job-1-tools');

    // docker rm did not remove it (a hung daemon): the node still holds it, and the exit code says so.
    const kept = runCommandLine(line, [], { DOCKER_STUB_RM_KEEPS: '1' }, present(['job-1-mpi']));
    expect(kept.status).toBe(1);
    expect(kept.stderr).toContain('container job-1-mpi is still on this node');
    // docker cannot even list containers: not "nothing there".
    const broken = runCommandLine(line, [], { DOCKER_STUB_EXIT: '1' }, present(['job-1-mpi']));
    expect(broken.status).toBe(1);
    expect(broken.stderr).toContain('docker ps failed');

    expect(runCommandLine(buildContainerCleanupCommand([]), []).status).toBe(0);
    expect(() => buildContainerCleanupCommand(['bad name'])).toThrow(/invalid container name/);
  });

  it('docker pull logs in with the password from the environment, never from the command line', () => {
    const secret = "s3cr'et $x";
    const line = buildPullCommand({
      runtime: 'docker',
      image: 'myreg.azurecr.io/hpc/app:2',
      registryLogin: { server: 'myreg.azurecr.io', username: '00000000-0000-0000-0000-000000000000', passwordEnvVar: 'REGISTRY_TOKEN' },
    });
    expect(line).not.toContain('s3cr');
    const r = runCommandLine(line, [{ name: 'REGISTRY_TOKEN', value: secret }]);
    expect(r.status).toBe(0);
    const calls = dockerCalls(r.out);
    expect(calls).toEqual([
      ['login', '--username', '00000000-0000-0000-0000-000000000000', '--password-stdin', 'myreg.azurecr.io'],
      ['pull', 'myreg.azurecr.io/hpc/app:2'],
    ]);
    expect(fs.readFileSync(path.join(r.out, 'login.stdin'), 'utf8')).toBe(secret);
  });

  it('a failed pull fails the task (so the activity can read the registry message)', () => {
    const r = runCommandLine(buildPullCommand({ runtime: 'docker', image: 'x:1' }), [], { DOCKER_STUB_EXIT: '1' });
    expect(r.status).toBe(1);
  });

  it("singularity pulls each image once per node into the job's SIF file, through a temporary name", () => {
    const line = buildPullCommand({ runtime: 'singularity', image: 'reg.local/hpc/x:1', sifCacheKey: 'job-3', sifIndex: 1 });
    const shared = fs.mkdtempSync(path.join(root, 'shared-'));
    const sif = path.join(shared, 'mpijob', 'sif', 'job-3', '1.sif');
    const r = runCommandLine(line, [], { AZ_BATCH_NODE_SHARED_DIR: shared });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(r.out, 'singularity.calls'), 'utf8')).toBe('pull\ninspect\n');
    expect(fs.readFileSync(sif, 'utf8')).toBe('sif of docker://reg.local/hpc/x:1\n'); // a bare reference is a docker:// URI
    expect(fs.readdirSync(path.dirname(sif))).toEqual(['1.sif']);
    // Run again (a retried task, or the next image of the same job): nothing is pulled.
    const again = runCommandLine(line, [], { AZ_BATCH_NODE_SHARED_DIR: shared });
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('image 1 already on this node');
    expect(fs.existsSync(path.join(again.out, 'singularity.calls'))).toBe(false);
    expect(() => buildPullCommand({ runtime: 'none', image: 'x' })).toThrow(PlanningError);
    expect(() => buildPullCommand({ runtime: 'singularity', image: 'x' })).toThrow(/sifCacheKey/);
  });

  it('a SIF file from blob storage moves from the task directory into the cache; library:// and oras:// stay URIs', () => {
    const shared = fs.mkdtempSync(path.join(root, 'shared-'));
    const line = buildPullCommand({ runtime: 'singularity', downloadedSif: 'mpijob-image-0.sif', sifCacheKey: 'job-4', sifIndex: 0 });
    const r = runCommandLine(line, [], { AZ_BATCH_NODE_SHARED_DIR: shared }, (nodeDir) =>
      fs.writeFileSync(path.join(nodeDir, '..', 'mpijob-image-0.sif'), 'SIF bytes'),
    );
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(shared, 'mpijob', 'sif', 'job-4', '0.sif'), 'utf8')).toBe('SIF bytes');
    for (const uri of ['library://lab/mvapich/mvapich:2.3.2', 'oras://reg.local/sif/app:1', 'docker://reg.local/app:2']) {
      expect(splitShellWords(buildPullCommand({ runtime: 'singularity', image: uri, sifCacheKey: 'k' }))[2]).toContain(`pull --force "$mpijob_tmp" ${uri};`);
    }
  });
});

describe('input validation', () => {
  it.each<[string, Partial<MpiTaskInput>, RegExp]>([
    ['zero nodes', { nodes: 0 }, /nodes/],
    ['fractional ppn', { processesPerNode: 1.5 }, /processesPerNode/],
    ['empty command', { command: '  ' }, /command/],
    ['bad env name', { env: { 'A-B': 'x' } }, /not a valid identifier/],
    ['reserved env name', { env: { AZ_BATCH_HOST_LIST: 'x' } }, /reserved prefix/],
    ['docker without container name', { runtime: 'docker', image: 'x' }, /containerName/],
    ['singularity without its SIF cache key', { runtime: 'singularity' }, /sifCacheKey/],
    ['NUL in command', { command: 'a\0b' }, /NUL/],
    ['bad ssh port', { sshPort: 70000 }, /sshPort/],
    ['bad shm size', { runtime: 'docker', image: 'x', containerName: 'c', shmSize: '1g; rm -rf /' }, /shmSize/],
  ])('rejects %s', (_label, patch, message) => {
    expect(() => buildMpiTaskCommands({ ...base, ...patch })).toThrow(message);
  });
});

describe('real Open MPI (integration)', () => {
  const hasMpirun = spawnSync('/bin/sh', ['-c', 'command -v mpirun'], { stdio: 'ignore' }).status === 0;

  // Two loopback addresses stand in for two nodes; the remote-shell agent runs the daemon locally instead of over ssh
  // (local-stack-facts.md). Everything else is the real launcher parsing the real command line.
  (hasMpirun ? it : it.skip)('the native Open MPI command line starts nodes x ppn ranks that run the user command', () => {
    const agent = path.join(root, 'rsh-agent.sh');
    // Each "host" gets a TMPDIR of its own, as each emulated node does: daemons sharing one session directory with
    // mpirun (same hostname, same job) race on its hwloc topology file, and orted crashes in hwloc_shmem_topology_write
    // (seen under load: exit 139).
    fs.writeFileSync(
      agent,
      '#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in -*) shift;; *) break;; esac; done\nhost=$1; shift\nmkdir -p "$TMPDIR/$host"\nTMPDIR="$TMPDIR/$host" exec /bin/sh -c "$*"\n',
      { mode: 0o755 },
    );
    const c = buildMpiTaskCommands({
      ...base,
      command: `echo "rank $OMPI_COMM_WORLD_RANK/$OMPI_COMM_WORLD_SIZE: $GREETING"`,
      // The local-stack settings travel as OMPI_MCA_* variables; they also displace the TCP preset's eth0 flag.
      env: {
        GREETING: `it's "quoted" $HOME`,
        OMPI_MCA_plm_rsh_agent: agent,
        OMPI_MCA_btl: 'self,tcp',
        OMPI_MCA_btl_tcp_if_include: 'lo',
        OMPI_MCA_oob_tcp_if_include: 'lo',
        OMPI_ALLOW_RUN_AS_ROOT: '1',
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
      },
    });
    const argv = splitShellWords(c.applicationCommandLine);
    const r = spawnSync(argv[0], argv.slice(1), {
      // TMPDIR: a session directory of its own, apart from every other mpirun on this machine. The working directory,
      // as Batch gives every task one: the hostfile is written there (without it, into the cwd: the repository root).
      cwd: root,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: root,
        TMPDIR: root,
        AZ_BATCH_TASK_WORKING_DIR: root,
        AZ_BATCH_HOST_LIST: '127.0.0.2,127.0.0.3',
        ...Object.fromEntries(c.environment.map((e) => [e.name, e.value])),
      },
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // On failure the launcher's stderr is part of what the assertion prints.
    expect({ status: r.status, signal: r.signal, stderr: r.status === 0 ? '' : r.stderr }).toEqual({ status: 0, signal: null, stderr: '' });
    const lines = r.stdout.trim().split('\n').sort();
    expect(lines).toEqual([0, 1, 2, 3].map((i) => `rank ${i}/4: it's "quoted" $HOME`));
    // The hostfile went into the task's working directory, not into the repository (where it was once committed).
    expect(fs.readFileSync(path.join(root, HOSTFILE_NAME), 'utf8')).toBe('127.0.0.2 slots=2\n127.0.0.3 slots=2\n');
    expect(fs.existsSync(path.join(process.cwd(), HOSTFILE_NAME))).toBe(false);
  });
});
