/**
 * Scheduler compatibility (`mpi.launcher.compat: pbs | slurm`): the application command the builder makes is run under
 * real bash with the recording stubs (tests/helpers/nodeCommands.ts), and a PBS or a Slurm job script, as a cluster's
 * user writes it, runs unchanged as the custom launch script: the node file has one line per slot, the variables hold
 * the allocation. Off by default: nothing of it appears without the field.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { buildMpiTaskCommands, type MpiTaskInput } from '../../shared/core/mpi/commands';
import { COMPAT_VARIABLES } from '../../shared/core/mpi/schedulerCompat';
import { splitShellWords } from '../../shared/core/mpi/shellWords';
import { parseJobSpec, type JobSpec } from '../../shared/core/spec';
import { planJob } from '../../shared/core/planning/jobPlan';
import { mpiTaskRequest } from '../../shared/core/planning/mpiTaskRequest';
import { BASE_INPUT, commandHarness, readNulList } from '../helpers/nodeCommands';

const harness = commandHarness('sched-compat-');

/** A PBS job script as written for a cluster (directives are comments to bash). */
const PBS_SCRIPT = [
  '#!/bin/bash',
  '#PBS -N solver',
  '#PBS -l select=2:ncpus=2:mpiprocs=2',
  'cd "$PBS_O_WORKDIR"',
  'cat "$PBS_NODEFILE" > "$STUB_OUT/nodefile.seen"',
  'env | grep -E "^(PBS_|NCPUS=)" | sort > "$STUB_OUT/pbs.env"',
  'mpirun -np $(wc -l < "$PBS_NODEFILE") -machinefile "$PBS_NODEFILE" ./solver',
].join('\n');

const SLURM_SCRIPT = [
  '#!/bin/bash',
  '#SBATCH --nodes=2 --ntasks-per-node=2',
  'cd "$SLURM_SUBMIT_DIR"',
  'env | grep -E "^SLURM_" | sort > "$STUB_OUT/slurm.env"',
  'mpirun -np "$SLURM_NTASKS" --host "$SLURM_JOB_NODELIST" --map-by ppr:$SLURM_NTASKS_PER_NODE:node ./solver',
].join('\n');

const envFile = (file: string): Record<string, string> =>
  Object.fromEntries(
    fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );

function input(patch: Partial<MpiTaskInput>): MpiTaskInput {
  return { ...BASE_INPUT, launcherMode: 'custom', ...patch };
}

describe('PBS: a job script runs unchanged as the custom launch script', () => {
  it.each(['none', 'docker'] as const)('runtime %s: node file one line per slot, PBS variables, mpirun from the node file', (runtime) => {
    const c = buildMpiTaskCommands(
      input({
        runtime,
        ...(runtime === 'docker' ? { image: 'registry.local/hpc/mpi:1', containerName: 'job-1-mpi' } : {}),
        command: PBS_SCRIPT,
        schedulerCompat: { kind: 'pbs', jobId: 'job-1', jobName: 'solver' },
      }),
    );
    const r = harness.run(c.applicationCommandLine, c.environment, { DOCKER_STUB_EXEC: '1' });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const wd = path.join(r.nodeDir, 'task', 'wd');
    expect(fs.readFileSync(path.join(r.out, 'nodefile.seen'), 'utf8')).toBe('10.0.0.4\n10.0.0.4\n10.0.0.5\n10.0.0.5\n');
    expect(envFile(path.join(r.out, 'pbs.env'))).toEqual({
      PBS_NODEFILE: path.join(wd, 'mpijob.nodefile'),
      PBS_JOBID: 'job-1',
      PBS_JOBNAME: 'solver',
      PBS_ENVIRONMENT: 'PBS_BATCH',
      PBS_O_WORKDIR: wd,
      NCPUS: '2',
      PBS_NUM_NODES: '2',
      PBS_NUM_PPN: '2',
      PBS_NP: '4',
    });
    expect(readNulList(path.join(r.out, 'mpirun.args'))).toEqual(['-np', '4', '-machinefile', path.join(wd, 'mpijob.nodefile'), './solver']);
    if (runtime === 'docker') {
      // docker exec passes every compat variable into the container by name.
      const exec = readNulList(path.join(r.out, 'docker.0.args'));
      for (const name of COMPAT_VARIABLES.pbs) expect(exec).toContain(name);
    }
  });

  it('ranks per node counted on the node ("nproc") repeat each host that many times', () => {
    const c = buildMpiTaskCommands(input({ processesPerNode: 'nproc', command: PBS_SCRIPT, schedulerCompat: { kind: 'pbs', jobId: 'j', jobName: 'n' } }));
    const r = harness.run(c.applicationCommandLine, c.environment);
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(r.out, 'nodefile.seen'), 'utf8')).toBe('10.0.0.4\n'.repeat(3) + '10.0.0.5\n'.repeat(3));
    expect(envFile(path.join(r.out, 'pbs.env'))).toMatchObject({ NCPUS: '3', PBS_NP: '6' });
  });
});

describe('Slurm: a batch script runs unchanged', () => {
  it('SLURM_* hold the allocation; the node list is a comma list', () => {
    const c = buildMpiTaskCommands(input({ command: SLURM_SCRIPT, schedulerCompat: { kind: 'slurm', jobId: 'job-2', jobName: 'solver' } }));
    const r = harness.run(c.applicationCommandLine, c.environment);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const wd = path.join(r.nodeDir, 'task', 'wd');
    expect(envFile(path.join(r.out, 'slurm.env'))).toEqual({
      SLURM_JOB_ID: 'job-2',
      SLURM_JOBID: 'job-2',
      SLURM_JOB_NAME: 'solver',
      SLURM_JOB_NODELIST: '10.0.0.4,10.0.0.5',
      SLURM_NODELIST: '10.0.0.4,10.0.0.5',
      SLURM_NNODES: '2',
      SLURM_JOB_NUM_NODES: '2',
      SLURM_NTASKS: '4',
      SLURM_NPROCS: '4',
      SLURM_NTASKS_PER_NODE: '2',
      SLURM_TASKS_PER_NODE: '2(x2)',
      SLURM_CPUS_ON_NODE: '2',
      SLURM_SUBMIT_DIR: wd,
      SLURM_HOSTFILE: path.join(wd, 'mpijob.nodefile'),
    });
    expect(readNulList(path.join(r.out, 'mpirun.args'))).toEqual(['-np', '4', '--host', '10.0.0.4,10.0.0.5', '--map-by', 'ppr:2:node', './solver']);
  });
});

describe('off by default', () => {
  it('no node file and no scheduler variable without compat', () => {
    const c = buildMpiTaskCommands(
      input({ command: PBS_SCRIPT.replace('cat "$PBS_NODEFILE"', 'echo "${PBS_NODEFILE-unset}"').replace(/^mpirun.*$/m, 'true') }),
    );
    const r = harness.run(c.applicationCommandLine, c.environment);
    expect(r.status).toBe(0);
    expect(fs.readFileSync(path.join(r.out, 'nodefile.seen'), 'utf8')).toBe('unset\n');
    expect(fs.readFileSync(path.join(r.out, 'pbs.env'), 'utf8')).toBe('');
    expect(fs.existsSync(path.join(r.nodeDir, 'task', 'wd', 'mpijob.nodefile'))).toBe(false);
  });

  it('refuses an unknown kind and a NUL in the job name', () => {
    expect(() => buildMpiTaskCommands(input({ schedulerCompat: { kind: 'lsf' as 'pbs', jobId: 'j', jobName: 'n' } }))).toThrow(
      /schedulerCompat must be one of pbs, slurm/,
    );
    expect(() => buildMpiTaskCommands(input({ schedulerCompat: { kind: 'pbs', jobId: 'j', jobName: 'a\0b' } }))).toThrow(/NUL/);
  });
});

describe('the spec field mpi.launcher.compat', () => {
  const yaml = (launcher: string, env = '') => `
name: pbs-solver
pool: { vmSize: Standard_D4s_v5, nodes: 2 }
container: { runtime: none }
mpi:
  runtime: openmpi
  processesPerNode: 2
  launcher: ${launcher}
  command: bash run.pbs
${env}`;
  const parse = (text: string) => parseJobSpec(text, 'application/yaml');

  it('is accepted as pbs or slurm and reaches the MPI task with the job id and name', () => {
    const r = parse(yaml('{ mode: custom, compat: pbs }'));
    if (!r.ok) throw new Error(JSON.stringify(r.errors));
    const spec: JobSpec = r.spec;
    expect(spec.mpi.launcher.compat).toBe('pbs');
    const plan = planJob('pbs-1', spec);
    const req = mpiTaskRequest(plan, spec, [{ id: 'n0' }, { id: 'n1' }], '/data', 'hpc-pbs-1');
    const script = splitShellWords(req.applicationCommandLine)[2];
    expect(script).toContain('export PBS_JOBID=pbs-1 PBS_JOBNAME=pbs-solver');
    const off = parse(yaml('{ mode: custom }'));
    if (!off.ok) throw new Error(JSON.stringify(off.errors));
    expect(off.spec.mpi.launcher.compat).toBeUndefined();
    expect(splitShellWords(mpiTaskRequest(planJob('pbs-1', off.spec), off.spec, [{ id: 'n0' }], '/d', 'b').applicationCommandLine)[2]).not.toContain('PBS_');
  });

  it("refuses an unknown scheduler and the scheduler's own variables in mpi.env, with field paths", () => {
    const bad = parse(yaml('{ mode: custom, compat: lsf }'));
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors).toEqual([expect.objectContaining({ path: 'mpi.launcher.compat', message: expect.stringMatching(/"pbs" or "slurm"/) })]);
    const clash = parse(yaml('{ mode: custom, compat: slurm }', '  env: { SLURM_NTASKS: "8", OMP_NUM_THREADS: "1" }'));
    expect(clash.ok).toBe(false);
    if (!clash.ok) expect(clash.errors).toEqual([expect.objectContaining({ path: 'mpi.env.SLURM_NTASKS' })]);
    expect(parse(yaml('{ mode: custom, compat: pbs }', '  env: { SLURM_NTASKS: "8" }')).ok).toBe(true);
  });
});
