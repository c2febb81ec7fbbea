/**
 * The launch section of the job spec (mpi.launcher, mpi.version, processes per node from the node, launcher options
 * with variable references) and its cross-field rules: retired VM sizes, GPU counts, custom launchers.
 */
import { z } from 'zod';
import { MPI_RUNTIMES, presetFamilyFor, SUPPORTED_VERSIONS, type MpiRuntime } from '../../mpi/rdmaPresets';
import { isGpuSize, retiredVmSize } from '../../planning/vmSizes';
import type { SpecIssue } from '../issue';
import { obj, type Obj } from '../rawInput';
import { COMPAT_PREFIXES, SCHEDULER_COMPAT, type SchedulerCompat } from '../../mpi/schedulerCompat';

const REF = String.raw`\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\}`;

/** One launcher option: safe characters, and `$NAME` / `${NAME}` references that expand (as one word) on the master. */
export const LAUNCHER_OPTION_RE = new RegExp(`^(?:[A-Za-z0-9_.,:=+/@%^-]|${REF}){1,256}$`);
/** The launcher executable: a name or absolute path, which may start from a variable (`$MPI_BIN/mpirun`). */
export const LAUNCHER_EXECUTABLE_RE = new RegExp(`^(?:${REF}|/|[A-Za-z0-9_])(?:[A-Za-z0-9_.+/-]|${REF}){0,255}$`);
/** An MPI version: "2018", "2021.13", "4.1.5". */
export const MPI_VERSION_RE = /^\d{1,4}(?:\.\d{1,4}){0,3}$/;

/** Variables the master exports before the launcher (or a custom launch script) runs. */
export const LAUNCH_VARIABLES = ['MPIJOB_NP', 'MPIJOB_PPN', 'MPIJOB_NODES', 'MPIJOB_HOSTS', 'MPIJOB_HOSTFILE', 'AZ_BATCH_HOST_LIST'] as const;

export const ProcessesPerNodeSchema = z
  .union([z.number({ error: 'must be a number' }).int({ error: 'must be a whole number' }).min(1).max(1024), z.enum(['nproc', 'cores', 'gpus'])], {
    error: 'must be a whole number 1–1024, "nproc" (CPUs), "cores" (physical cores) or "gpus" (NVIDIA GPUs)',
  })
  .default('nproc')
  .meta({
    description:
      'Ranks per node: a number, or counted on the master node at run time: "nproc" (logical CPUs), "cores" (physical cores, from lscpu), "gpus" (GPUs listed by nvidia-smi; needs a GPU VM size).',
  });

export const LauncherOptionSchema = z.string({ error: 'must be a string: one launcher option token' }).regex(LAUNCHER_OPTION_RE, {
  error:
    'must be one launcher option token such as "--bind-to", "core" or "$MPIJOB_NP" (letters, digits, "_.,:=+/@%^-" and $NAME / ${NAME} references; no spaces, quotes, ";", "$(" or backticks)',
});

export const LauncherSchema = z
  .strictObject({
    mode: z.enum(['managed', 'custom'], { error: 'must be "managed" or "custom"' }).default('managed').meta({
      description:
        'managed: the control plane builds the mpirun line (user options first, then its own) and every rank runs mpi.command. custom: mpi.command is a launch script run once on the master (bash, node profile loaded) with MPIJOB_HOSTFILE, MPIJOB_NP, MPIJOB_PPN, MPIJOB_NODES, MPIJOB_HOSTS, AZ_BATCH_HOST_LIST and the fabric environment exported; it calls mpirun/charmrun itself.',
    }),
    executable: z
      .string({ error: 'must be a string: the launcher program' })
      .regex(LAUNCHER_EXECUTABLE_RE, {
        error:
          'must be a launcher name or absolute path such as "mpirun", "/opt/intel/oneapi/mpi/latest/bin/mpirun" or "$MPI_BIN/mpirun" (no spaces, quotes or shell characters)',
      })
      .optional()
      .meta({
        description:
          'Launcher program of the managed mode (default "mpirun"); may start from a variable the pre-execution command sets, e.g. "$MPI_BIN/mpirun" after `module load`.',
      }),
    compat: z.enum(SCHEDULER_COMPAT, { error: 'must be "pbs" or "slurm"' }).optional().meta({
      description:
        'Scheduler compatibility (off by default). "pbs": a node file with one line per slot and PBS_NODEFILE, PBS_JOBID, PBS_JOBNAME, PBS_O_WORKDIR, PBS_ENVIRONMENT, NCPUS, PBS_NUM_NODES, PBS_NUM_PPN, PBS_NP exported on the master; "slurm": SLURM_JOB_ID, SLURM_JOB_NAME, SLURM_JOB_NODELIST (a comma list), SLURM_NNODES, SLURM_NTASKS, SLURM_NTASKS_PER_NODE, SLURM_TASKS_PER_NODE, SLURM_CPUS_ON_NODE, SLURM_SUBMIT_DIR, SLURM_HOSTFILE. A PBS or Slurm job script then runs unchanged as the custom launch script.',
    }),
  })
  .meta({ description: 'Who launches the ranks.' });

export const MpiVersionSchema = z
  .string({ error: 'must be a string such as "2018", "2021.13" or "4.1" (quote it in YAML)' })
  .regex(MPI_VERSION_RE, { error: 'must be a version such as "2018", "2021.13" or "4.1"' })
  .optional()
  .meta({
    description: `Version of the MPI runtime; selects its fabric preset (docs/workloads.md). Intel MPI ${SUPPORTED_VERSIONS.intelmpi}; Open MPI ${SUPPORTED_VERSIONS.openmpi}; MPICH ${SUPPORTED_VERSIONS.mpich}; MVAPICH ${SUPPORTED_VERSIONS.mvapich}. Default: the current generation (Intel MPI 2019+, Open MPI 4, MPICH 4, MVAPICH2).`,
  });

/** Rules of the launch section that relate fields (they read the raw input defensively, like crossField.ts). */
export function launchIssues(raw: Obj): SpecIssue[] {
  const issues: SpecIssue[] = [];
  const pool = obj(raw, 'pool');
  const mpi = obj(raw, 'mpi');
  const launcher = obj(mpi, 'launcher');
  const vmSize = typeof pool.vmSize === 'string' ? pool.vmSize : undefined;

  const retired = vmSize ? retiredVmSize(vmSize) : undefined;
  if (retired) {
    issues.push({
      path: ['pool', 'vmSize'],
      message: `${vmSize} is retired (${retired.series}, ${/^\d/.test(retired.retired) ? `retired ${retired.retired}` : retired.retired}): Batch can no longer allocate it. Use ${retired.successors}`,
    });
  }
  if (mpi.processesPerNode === 'gpus' && vmSize && !retired && !isGpuSize(vmSize)) {
    issues.push({ path: ['mpi', 'processesPerNode'], message: `"gpus" needs a GPU VM size (NC, ND or NV families); ${vmSize} has no GPU` });
  }
  if (typeof mpi.version === 'string' && typeof mpi.runtime === 'string' && (MPI_RUNTIMES as readonly string[]).includes(mpi.runtime)) {
    const family = presetFamilyFor(mpi.runtime as MpiRuntime, mpi.version);
    if ('error' in family) issues.push({ path: ['mpi', 'version'], message: family.error });
  }
  if (typeof launcher.compat === 'string' && (SCHEDULER_COMPAT as readonly string[]).includes(launcher.compat)) {
    const prefixes = COMPAT_PREFIXES[launcher.compat as SchedulerCompat];
    for (const name of Object.keys(obj(mpi, 'env'))) {
      if (prefixes.some((p) => name.startsWith(p))) {
        issues.push({
          path: ['mpi', 'env', name],
          message: `not allowed with mpi.launcher.compat "${String(launcher.compat)}": the pipeline sets ${prefixes.join(', ')}* from the job's allocation`,
        });
      }
    }
  }
  if (launcher.mode === 'custom') {
    if (Array.isArray(mpi.options) && mpi.options.length > 0) {
      issues.push({ path: ['mpi', 'options'], message: 'must be empty with mpi.launcher.mode "custom": the launch script passes its own launcher options' });
    }
    if (launcher.executable !== undefined) {
      issues.push({
        path: ['mpi', 'launcher', 'executable'],
        message: 'not allowed with mpi.launcher.mode "custom": the launch script calls its launcher itself',
      });
    }
  }
  return issues;
}
