/**
 * The shell code and Batch requests of the data side, built from specs: the shared scratch (NFS export from the master,
 * or a directory on a mount), the files every node gets, the outputs the MPI task and the per-node tasks upload.
 * The scratch scripts are also run here with stand-ins for the NFS tools that only record what they were asked to do.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { planJob } from '../../shared/core/planning/jobPlan';
import { mpiTaskRequest, releaseTaskCommand } from '../../shared/core/planning/mpiTaskRequest';
import {
  destinationFor,
  filesWanted,
  masterOutputFiles,
  nodeFileSources,
  nodeSasLifetimeMs,
  nodeUploadTask,
  outputsPlan,
  rankLogOptions,
  RANK_LOG_DIR,
  WRONG_NODE_EXIT,
} from '../../shared/core/planning/workloadData';
import { scratchDirExpression, scratchExport, scratchSetupScript, scratchTeardownScript, SCRATCH_EXPORT_OPTIONS } from '../../shared/core/mpi/sharedScratch';
import { splitShellWords } from '../../shared/core/mpi';
import { PlanningError } from '../../shared/core/planning/errors';

function spec(extra: string, base = 'pool: { vmSize: Standard_HB120rs_v3, nodes: 3 }\nmpi: { runtime: openmpi, command: app }'): JobSpec {
  const r = parseJobSpec(`name: t\n${base}\n${extra}`, 'application/yaml');
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.spec;
}

/** The script inside `/bin/bash -c '<script>'`. */
function scriptOf(commandLine: string): string {
  const words = splitShellWords(commandLine);
  expect(words.slice(0, 2)).toEqual(['/bin/bash', '-c']);
  return words[2];
}

function bashSyntaxOk(script: string): void {
  const r = spawnSync('bash', ['-n', '-c', script], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  expect(r.stderr).toBe('');
  expect(r.status).toBe(0);
}

describe('shared scratch scripts', () => {
  test('the scratch lives on the local disk (masterNfs) or on the named mount, per job', () => {
    expect(scratchDirExpression({ kind: 'masterNfs', jobId: 'j1' })).toBe('$AZ_BATCH_NODE_SHARED_DIR/scratch/j1');
    expect(scratchDirExpression({ kind: 'mount', jobId: 'j1', mount: 'home' })).toBe('$AZ_BATCH_NODE_MOUNTS_DIR/home/scratch/j1');
  });

  test('a rank started over ssh without the Batch variables finds the scratch from its working directory, the same path on every node', () => {
    const run = (env: Record<string, string>, cwd: string) =>
      spawnSync('sh', ['-c', `${scratchExport({ kind: 'masterNfs', jobId: 'j1' })}; printf %s "$MPIJOB_SCRATCH"`], {
        env,
        cwd,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).stdout;
    const root = mkdtempSync(path.join(tmpdir(), 'node-root-'));
    const wd = path.join(root, 'workitems', 'hpc-j1', 'job-1', 'mpi', 'wd');
    mkdirSync(wd, { recursive: true });
    try {
      expect(run({}, wd)).toBe(`${root}/shared/scratch/j1`);
      expect(run({ AZ_BATCH_NODE_SHARED_DIR: '/mnt/batch/tasks/shared' }, wd)).toBe('/mnt/batch/tasks/shared/scratch/j1');
      const onMount = spawnSync('sh', ['-c', `${scratchExport({ kind: 'mount', jobId: 'j1', mount: 'home' })}; printf %s "$MPIJOB_SCRATCH"`], {
        env: {},
        cwd: wd,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      }).stdout;
      expect(onMount).toBe(`${root}/fsmounts/home/scratch/j1`);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  test('values that are not single safe words are refused', () => {
    expect(() => scratchSetupScript({ kind: 'masterNfs', jobId: 'j1; reboot' })).toThrow(PlanningError);
    expect(() => scratchSetupScript({ kind: 'mount', jobId: 'j1' })).toThrow(/needs a mount name/);
    expect(() => scratchSetupScript({ kind: 'mount', jobId: 'j1', mount: '../etc' })).toThrow(PlanningError);
    expect(() => scratchSetupScript({ kind: 'masterNfs', jobId: 'j1', waitSeconds: 0 })).toThrow(/waitSeconds/);
  });

  test.each(['masterNfs', 'mount'] as const)('%s: setup and teardown are valid bash', (kind) => {
    bashSyntaxOk(scratchSetupScript({ kind, jobId: 'j1', mount: 'home' }));
    bashSyntaxOk(scratchTeardownScript({ kind, jobId: 'j1', mount: 'home' }));
  });

  describe('run with recording stand-ins for exportfs, mount, mountpoint, systemctl', () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(path.join(tmpdir(), 'scratch-script-'));
      mkdirSync(path.join(dir, 'bin'));
      mkdirSync(path.join(dir, 'node', 'shared'), { recursive: true });
      const tool = (name: string, body: string) => {
        writeFileSync(path.join(dir, 'bin', name), `#!/bin/bash\necho "${name} $*" >> "${dir}/calls"\n${body}\n`);
        chmodSync(path.join(dir, 'bin', name), 0o755);
      };
      tool('exportfs', 'exit 0');
      // mount fails twice (the master has not exported yet), then succeeds.
      tool('mount', `n=$(cat "${dir}/mounts" 2>/dev/null || echo 0); echo $((n+1)) > "${dir}/mounts"; [ "$n" -ge 2 ]`);
      tool('mountpoint', `[ -f "${dir}/mounted" ]`);
      tool('sleep', 'exit 0');
      tool('systemctl', 'exit 0');
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    const run = (script: string, env: Record<string, string>) =>
      spawnSync('bash', ['-c', `set -euo pipefail; ${script}`], {
        encoding: 'utf8',
        // bash reads ~/.bashrc when its stdin is a socket (it takes that for sshd): give it none.
        stdio: ['ignore', 'pipe', 'pipe'],
        env: {
          PATH: `${dir}/bin:/usr/bin:/bin`,
          AZ_BATCH_NODE_SHARED_DIR: path.join(dir, 'node', 'shared'),
          AZ_BATCH_HOST_LIST: '10.0.0.4,10.0.0.5,10.0.0.6',
          AZ_BATCH_MASTER_NODE: '10.0.0.4:6000',
          ...env,
        },
      });
    const calls = () => readFileSync(path.join(dir, 'calls'), 'utf8').trim().split('\n');

    test('the master exports its directory to every other node of the task, never to itself', () => {
      const r = run(scratchSetupScript({ kind: 'masterNfs', jobId: 'j1' }), { AZ_BATCH_IS_CURRENT_NODE_MASTER: 'true' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      const scratch = path.join(dir, 'node', 'shared', 'scratch', 'j1');
      expect(calls()).toEqual([`exportfs -o ${SCRATCH_EXPORT_OPTIONS} 10.0.0.5:${scratch}`, `exportfs -o ${SCRATCH_EXPORT_OPTIONS} 10.0.0.6:${scratch}`]);
      expect(readFileSync(`${scratch}.owner`, 'utf8')).toBe('10.0.0.5\n10.0.0.6\n');
      expect(r.stdout).toContain(`shared scratch (masterNfs) ready at ${scratch}`);
    });

    test('a single node shares nothing: no NFS server', () => {
      const r = run(scratchSetupScript({ kind: 'masterNfs', jobId: 'j1' }), { AZ_BATCH_IS_CURRENT_NODE_MASTER: 'true', AZ_BATCH_HOST_LIST: '10.0.0.4' });
      expect(r.status).toBe(0);
      expect(() => calls()).toThrow();
    });

    test("another node mounts the master's export at the same path, retrying until the master exported it", () => {
      const r = run(scratchSetupScript({ kind: 'masterNfs', jobId: 'j1' }), { AZ_BATCH_IS_CURRENT_NODE_MASTER: 'false' });
      expect(r.status).toBe(0);
      const scratch = path.join(dir, 'node', 'shared', 'scratch', 'j1');
      const mounts = calls().filter((c) => c.startsWith('mount '));
      expect(mounts).toHaveLength(3);
      expect(mounts[2]).toBe(`mount -t nfs -o rw,hard,noatime 10.0.0.4:${scratch} ${scratch}`);
    });

    test('another node gives up after the wait with the reason on stderr (the subtask fails)', () => {
      writeFileSync(path.join(dir, 'bin', 'mount'), '#!/bin/bash\necho "mount.nfs: access denied by server" >&2; exit 32\n');
      const r = run(scratchSetupScript({ kind: 'masterNfs', jobId: 'j1', waitSeconds: 1 }).replace('sleep 2', 'sleep 1'), {
        AZ_BATCH_IS_CURRENT_NODE_MASTER: 'false',
        PATH: `${dir}/bin:/usr/bin:/bin`,
      });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/shared scratch: could not mount 10\.0\.0\.4:\S+ within 1 s: mount\.nfs: access denied by server/);
    });

    test('teardown on the master withdraws the exports and deletes the data; it never fails', () => {
      const scratch = path.join(dir, 'node', 'shared', 'scratch', 'j1');
      mkdirSync(scratch, { recursive: true });
      writeFileSync(path.join(scratch, 'data'), 'x');
      writeFileSync(`${scratch}.owner`, '10.0.0.5\n10.0.0.6\n');
      writeFileSync(path.join(dir, 'bin', 'exportfs'), `#!/bin/bash\necho "exportfs $*" >> "${dir}/calls"; exit 1\n`);
      const r = run(scratchTeardownScript({ kind: 'masterNfs', jobId: 'j1' }), {});
      expect(r.status).toBe(0);
      expect(calls().filter((c) => c.startsWith('exportfs'))).toEqual([`exportfs -u 10.0.0.5:${scratch}`, `exportfs -u 10.0.0.6:${scratch}`]);
      expect(spawnSync('test', ['-e', scratch]).status).toBe(1);
    });

    test('teardown on another node unmounts and removes only the empty mount point, never the data through it', () => {
      const scratch = path.join(dir, 'node', 'shared', 'scratch', 'j1');
      mkdirSync(scratch, { recursive: true });
      writeFileSync(path.join(dir, 'mounted'), '');
      writeFileSync(path.join(dir, 'bin', 'umount'), `#!/bin/bash\necho "umount $*" >> "${dir}/calls"; rm -f "${dir}/mounted"\n`);
      chmodSync(path.join(dir, 'bin', 'umount'), 0o755);
      writeFileSync(path.join(scratch, 'still-mounted-data'), 'x');
      const r = run(scratchTeardownScript({ kind: 'masterNfs', jobId: 'j1' }), {});
      expect(r.status).toBe(0);
      expect(calls()).toContain(`umount -l ${scratch}`);
      // The directory was not empty (as if the unmount had not happened): rmdir leaves it, nothing is deleted.
      expect(readFileSync(path.join(scratch, 'still-mounted-data'), 'utf8')).toBe('x');
    });
  });
});

describe('files for every node', () => {
  test('each source lands in the working directory (commonResourceFiles go to the task root, one level up), modes as Batch writes them', () => {
    const s = spec(`files:
  - { url: "https://releases.example.org/a/namelist.input", path: run/namelist.input, mode: "644" }
  - { account: data1, container: software, blob: bin/solver, path: solver, mode: "0755" }
  - { account: data1, container: cases, prefix: motorbike/ }
  - { account: data1, container: cases, prefix: "", path: all }`);
    expect(nodeFileSources(s)).toEqual([
      { kind: 'url', url: 'https://releases.example.org/a/namelist.input', filePath: 'wd/run/namelist.input', fileMode: '0644' },
      { kind: 'blob', account: 'data1', container: 'software', blob: 'bin/solver', filePath: 'wd/solver', fileMode: '0755' },
      { kind: 'prefix', account: 'data1', container: 'cases', prefix: 'motorbike/', filePath: 'wd' },
      { kind: 'prefix', account: 'data1', container: 'cases', prefix: '', filePath: 'wd/all' },
    ]);
  });

  test('SAS for the nodes live for every attempt of the MPI task plus the margin, never beyond the cap', () => {
    const settings = { sasMaxLifetimeMinutes: 7 * 24 * 60, sasMarginMinutes: 60 };
    expect(nodeSasLifetimeMs(spec(''), settings)).toBe(7 * 24 * 3_600_000);
    expect(nodeSasLifetimeMs(spec('limits: { maxWallClock: PT2H, maxRetries: 1 }'), settings)).toBe((4 * 60 + 60) * 60_000);
    expect(nodeSasLifetimeMs(spec('limits: { maxWallClock: P30D }'), settings)).toBe(7 * 24 * 3_600_000);
  });
});

describe('outputs', () => {
  const withOutputs = (files: string, extra = '') => spec(`${extra}\noutputs:\n  account: data1\n  container: results\n  files: ${files}`);

  test("blobs keep each file's path below its base: the pattern's fixed directories go into the destination", () => {
    expect(destinationFor('p/workdir', 'results/**/*.dat')).toBe('p/workdir/results');
    expect(destinationFor('p/workdir', '*.log')).toBe('p/workdir');
    expect(destinationFor('p/workdir', 'case/system/controlDict')).toBe('p/workdir/case/system/controlDict');
    expect(destinationFor('p/scratch', 'case/[0-9]*/T')).toBe('p/scratch/case');
  });

  test("the MPI task uploads the master's and the scratch's files under the condition, and the logs always; the prefix defaults to the job id", () => {
    const plan = outputsPlan(
      withOutputs('[ { pattern: "out/*.vtk" }, { pattern: "case/[0-9]*/U", from: scratch }, { pattern: "*.log", from: allNodes } ]', 'scratch: {}'),
      'job-1',
    );
    expect(plan?.prefix).toBe('job-1');
    expect(plan?.nodePatterns).toEqual(['*.log']);
    expect(masterOutputFiles(plan, 'https://acct.blob.core.windows.net/results?sig=w')).toEqual([
      {
        filePattern: 'out/*.vtk',
        path: 'job-1/workdir/out',
        uploadCondition: 'taskCompletion',
        containerUrl: 'https://acct.blob.core.windows.net/results?sig=w',
      },
      {
        filePattern: '$AZ_BATCH_NODE_SHARED_DIR/scratch/job-1/case/[0-9]*/U',
        path: 'job-1/scratch/case',
        uploadCondition: 'taskCompletion',
        containerUrl: expect.any(String),
      },
      { filePattern: '../*.txt', path: 'job-1/logs', uploadCondition: 'taskCompletion', containerUrl: expect.any(String) },
      { filePattern: `${RANK_LOG_DIR}/**`, path: 'job-1/logs/ranks', uploadCondition: 'taskCompletion', containerUrl: expect.any(String) },
    ]);
    const failure = outputsPlan(
      spec('outputs: { account: data1, container: results, prefix: runs/x, when: failure, logs: false, files: [ { pattern: core } ] }'),
      'job-1',
    );
    expect(failure?.master).toEqual([{ filePattern: 'core', path: 'runs/x/workdir/core', uploadCondition: 'taskFailure' }]);
    expect(outputsPlan(spec(''), 'job-1')).toBeUndefined();
    expect(masterOutputFiles(undefined, 'u')).toEqual([]);
  });

  test('Open MPI also writes one output pair per rank when the logs are kept; Hydra launchers keep every rank on stdout', () => {
    expect(rankLogOptions(withOutputs('[]'))).toEqual(['--output-filename', RANK_LOG_DIR]);
    const hydra = spec(
      'outputs: { account: data1, container: results }',
      'pool: { vmSize: Standard_HB120rs_v3, nodes: 3 }\nmpi: { runtime: intelmpi, command: app }',
    );
    expect(rankLogOptions(hydra)).toEqual([]);
    expect(rankLogOptions(spec('outputs: { account: data1, container: results, logs: false, files: [ { pattern: x } ] }'))).toEqual([]);
    expect(rankLogOptions(spec(''))).toEqual([]);
  });

  test("a node's upload task: its every-node files when the outcome calls for them, its task logs unless it is the master, and only on its own node", () => {
    const plan = outputsPlan(withOutputs('[ { pattern: "rank*/*.log", from: allNodes } ]'), 'job-1');
    if (!plan) throw new Error('no plan');
    const node = { id: 'tvmps_abc_d', affinityId: 'aff', taskRootDirectory: 'workitems/hpc-job-1/job-1/mpi', isMaster: false };
    const task = nodeUploadTask(plan, node, 'https://x/results?sig=w', 0);
    expect(task?.outputFiles).toEqual([
      {
        filePattern: '$AZ_BATCH_NODE_ROOT_DIR/workitems/hpc-job-1/job-1/mpi/wd/rank*/*.log',
        path: 'job-1/nodes/tvmps_abc_d',
        containerUrl: 'https://x/results?sig=w',
        uploadCondition: 'taskSuccess',
      },
      {
        filePattern: '$AZ_BATCH_NODE_ROOT_DIR/workitems/hpc-job-1/job-1/mpi/*.txt',
        path: 'job-1/logs/nodes/tvmps_abc_d',
        containerUrl: expect.any(String),
        uploadCondition: 'taskSuccess',
      },
    ]);
    const script = scriptOf(task?.commandLine ?? '');
    bashSyntaxOk(script);
    const elsewhere = spawnSync('bash', ['-c', script], { env: { AZ_BATCH_NODE_ID: 'other' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    expect(elsewhere.status).toBe(WRONG_NODE_EXIT);
    expect(elsewhere.stderr).toContain('this upload task is for node tvmps_abc_d but runs on other');
    expect(spawnSync('bash', ['-c', script], { env: { AZ_BATCH_NODE_ID: 'tvmps_abc_d' }, stdio: 'ignore' }).status).toBe(0);
    // The master's logs come with the MPI task; with nothing else to upload it gets no task.
    expect(nodeUploadTask({ ...plan, nodePatterns: [] }, { ...node, isMaster: true }, 'u', 0)).toBeUndefined();
    // when: success and the run failed: only the logs.
    expect(nodeUploadTask({ ...plan, when: 'success' }, node, 'u', 2)?.outputFiles.map((f) => f.path)).toEqual(['job-1/logs/nodes/tvmps_abc_d']);
    // Directories reported by Batch are used only when they are plain relative paths.
    expect(nodeUploadTask(plan, { ...node, taskRootDirectory: '../../etc' }, 'u', 0)).toBeUndefined();
    expect([filesWanted('always', 1), filesWanted('success', 0), filesWanted('success', 1), filesWanted('failure', 1), filesWanted('failure', 0)]).toEqual([
      true,
      true,
      false,
      true,
      false,
    ]);
  });
});

describe('the MPI task and the release task of a job with files, scratch and outputs', () => {
  const s = spec(
    `files: [ { url: "https://releases.example.org/a/run.sh", path: run.sh, mode: "0755" } ]
scratch: {}
outputs: { account: data1, container: results, files: [ { pattern: "case/**", from: scratch } ] }`,
    'pool: { vmSize: Standard_HB120rs_v3, nodes: 2 }\ncontainer: { runtime: docker, images: [ "registry.example.com/cfd:1" ] }\nmpi: { runtime: openmpi, command: ./run.sh, preExecutionCommand: ./decompose.sh }',
  );
  const plan = planJob('job-1', s);
  const nodes = [{ id: 'n0' }, { id: 'n1' }];
  const req = mpiTaskRequest(plan, s, nodes, '$AZ_BATCH_NODE_SHARED_DIR/jobdata/job-1', 'hpc-job-1', {
    commonResourceFiles: [{ httpUrl: 'https://releases.example.org/a/run.sh', filePath: 'wd/run.sh', fileMode: '0755' }],
    outputsContainerUrl: 'https://data1.blob.core.windows.net/results?sig=w',
  });

  test('the nodes get the files, the master uploads the outputs', () => {
    expect(req.commonResourceFiles).toEqual([{ httpUrl: 'https://releases.example.org/a/run.sh', filePath: 'wd/run.sh', fileMode: '0755' }]);
    expect(req.outputFiles?.map((f) => f.filePattern)).toEqual(['$AZ_BATCH_NODE_SHARED_DIR/scratch/job-1/case/**', '../*.txt', `${RANK_LOG_DIR}/**`]);
  });

  test('every node mounts the scratch in the coordination step before the container starts (its bind mount carries it)', () => {
    const coordination = scriptOf(req.coordinationCommandLine);
    bashSyntaxOk(coordination);
    const setup = coordination.indexOf('export MPIJOB_SCRATCH=');
    const docker = coordination.indexOf('docker run');
    expect(setup).toBeGreaterThan(0);
    expect(docker).toBeGreaterThan(setup);
  });

  test('the ranks and the pre-execution command see $MPIJOB_SCRATCH; the launcher writes the rank logs', () => {
    const app = req.applicationCommandLine;
    const exported = 'export MPIJOB_SCRATCH="${AZ_BATCH_NODE_SHARED_DIR:-${PWD%%/workitems/*}/shared}/scratch/job-1"';
    expect(app).toContain(`${exported}; ./run.sh`);
    expect(app).toContain(`${exported}; ./decompose.sh`);
    expect(app).toContain(`--output-filename ${RANK_LOG_DIR}`);
  });

  test("the release task removes the scratch first and keeps the container cleanup's verdict", () => {
    const release = scriptOf(releaseTaskCommand('job-1', s));
    bashSyntaxOk(release);
    expect(release.indexOf('mpijob_scratch=')).toBeLessThan(release.indexOf('docker'));
    expect(release).toMatch(/\} \|\| true; rm -rf "\$AZ_BATCH_NODE_SHARED_DIR"\/mpijob\/images\/job-1 \|\| true; \/bin\/bash -c /);
    // Without scratch the release task removes the image state and the containers only.
    expect(releaseTaskCommand('job-1', spec(''))).not.toContain('scratch');
  });

  test('a job without the data sections builds the same task as before', () => {
    const plain = spec('');
    const r = mpiTaskRequest(planJob('job-2', plain), plain, nodes, '/d', 'hpc-job-2');
    expect(r.commonResourceFiles).toEqual([]);
    expect(r.outputFiles).toEqual([]);
    expect(r.coordinationCommandLine).not.toContain('MPIJOB_SCRATCH');
    expect(r.applicationCommandLine).not.toContain('output-filename');
  });
});
