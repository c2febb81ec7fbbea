/**
 * Scheduler compatibility (`mpi.launcher.compat: pbs | slurm`): the allocation a PBS or Slurm job script reads, built
 * from what the MPI task already knows on the master (AZ_BATCH_HOST_LIST, the ranks per node, the node count), so a
 * script written for a cluster runs unchanged as the job's driver. Pure: returns strict-script lines that the
 * application command runs after MPIJOB_PPN / MPIJOB_NODES / MPIJOB_NP are exported.
 *
 * - PBS: a node file with one line per slot (each host repeated MPIJOB_PPN times, hosts in AZ_BATCH_HOST_LIST order,
 *   as PBS Pro / Torque write $PBS_NODEFILE), and PBS_NODEFILE, PBS_JOBID, PBS_JOBNAME, PBS_O_WORKDIR, PBS_ENVIRONMENT,
 *   NCPUS, PBS_NUM_NODES, PBS_NUM_PPN, PBS_NP.
 * - Slurm: SLURM_JOB_ID (and SLURM_JOBID), SLURM_JOB_NAME, SLURM_JOB_NODELIST (and SLURM_NODELIST), SLURM_NNODES (and
 *   SLURM_JOB_NUM_NODES), SLURM_NTASKS (and SLURM_NPROCS), SLURM_NTASKS_PER_NODE, SLURM_TASKS_PER_NODE
 *   (`<ppn>(x<nodes>)`), SLURM_CPUS_ON_NODE, SLURM_SUBMIT_DIR. The node list is a plain comma list, the form Slurm
 *   itself accepts everywhere it reads a node list: Slurm's compressed form (`node[1-4]`) needs host names with a
 *   numeric suffix, and Batch nodes are addressed by IP. `scontrol show hostnames "$SLURM_JOB_NODELIST"` does not
 *   exist on a Batch node; `tr , '\n'` does the same on this form. A node file is written too (SLURM_HOSTFILE, one
 *   line per task, as `srun --distribution=arbitrary` reads it).
 *   The MPI launchers read SLURM_JOBID too and would take the job for a Slurm allocation and start the remote ranks
 *   with `srun`, which a Batch node does not have (Open MPI 4 selects its slurm launcher at priority 75 whenever
 *   SLURM_JOBID is set; MPICH's and Intel MPI's Hydra pick the slurm bootstrap): the lines also turn those off
 *   (SLURM_LAUNCHER_OFF), so `mpirun -np $SLURM_NTASKS` starts the ranks over ssh on the allocation's nodes as in
 *   every other job.
 */
import { shellQuote } from './shellQuote';

export const SCHEDULER_COMPAT = ['pbs', 'slurm'] as const;
export type SchedulerCompat = (typeof SCHEDULER_COMPAT)[number];

/** The node file's name in the task working directory (PBS_NODEFILE, SLURM_HOSTFILE). */
export const COMPAT_NODEFILE_NAME = 'mpijob.nodefile';

/** Variables each mode exports (docker passes them into the container by name; docs list them). */
export const COMPAT_VARIABLES: Record<SchedulerCompat, readonly string[]> = {
  pbs: ['PBS_NODEFILE', 'PBS_JOBID', 'PBS_JOBNAME', 'PBS_O_WORKDIR', 'PBS_ENVIRONMENT', 'NCPUS', 'PBS_NUM_NODES', 'PBS_NUM_PPN', 'PBS_NP'],
  slurm: [
    'SLURM_JOB_ID',
    'SLURM_JOBID',
    'SLURM_JOB_NAME',
    'SLURM_JOB_NODELIST',
    'SLURM_NODELIST',
    'SLURM_NNODES',
    'SLURM_JOB_NUM_NODES',
    'SLURM_NTASKS',
    'SLURM_NPROCS',
    'SLURM_NTASKS_PER_NODE',
    'SLURM_TASKS_PER_NODE',
    'SLURM_CPUS_ON_NODE',
    'SLURM_SUBMIT_DIR',
    'SLURM_HOSTFILE',
    'OMPI_MCA_plm',
    'OMPI_MCA_ras',
    'HYDRA_BOOTSTRAP',
    'I_MPI_HYDRA_BOOTSTRAP',
  ],
};

/**
 * With the Slurm variables set, the MPI launchers' own Slurm support must be off (there is no srun/slurmd on a Batch
 * node): Open MPI's slurm launcher and allocation reader, Hydra's slurm bootstrap (MPICH, Intel MPI).
 */
export const SLURM_LAUNCHER_OFF = 'export OMPI_MCA_plm=^slurm OMPI_MCA_ras=^slurm HYDRA_BOOTSTRAP=ssh I_MPI_HYDRA_BOOTSTRAP=ssh';

/** Prefixes a user's own environment may not use when a compat mode sets them (the export would silently win). */
export const COMPAT_PREFIXES: Record<SchedulerCompat, readonly string[]> = { pbs: ['PBS_', 'NCPUS'], slurm: ['SLURM_'] };

export interface SchedulerCompatInput {
  kind: SchedulerCompat;
  /** The control plane's job id: PBS_JOBID / SLURM_JOB_ID (a script uses it in file names; it is [a-z0-9-]). */
  jobId: string;
  /** The job's name (PBS_JOBNAME / SLURM_JOB_NAME). */
  jobName: string;
}

/**
 * The lines that write the node file and export the scheduler's variables. They need MPIJOB_PPN, MPIJOB_NODES,
 * MPIJOB_NP and AZ_BATCH_HOST_LIST set (the application command's rank setup does that first).
 */
export function schedulerCompatLines(c: SchedulerCompatInput): string[] {
  const workdir = '${AZ_BATCH_TASK_WORKING_DIR:-$PWD}';
  const nodefile = `export MPIJOB_NODEFILE="${workdir}/${COMPAT_NODEFILE_NAME}"`;
  // One line per slot, the hosts in order: host1 x ppn, then host2 x ppn.
  const write =
    'for mpijob_h in ${AZ_BATCH_HOST_LIST//,/ }; do mpijob_i=0; while [ "$mpijob_i" -lt "$MPIJOB_PPN" ]; do printf \'%s\\n\' "$mpijob_h"; mpijob_i=$((mpijob_i + 1)); done; done > "$MPIJOB_NODEFILE"';
  const id = shellQuote(c.jobId);
  const name = shellQuote(c.jobName);
  if (c.kind === 'pbs') {
    return [
      nodefile,
      write,
      'export PBS_NODEFILE="$MPIJOB_NODEFILE"',
      `export PBS_JOBID=${id} PBS_JOBNAME=${name} PBS_ENVIRONMENT=PBS_BATCH`,
      `export PBS_O_WORKDIR="${workdir}"`,
      'export NCPUS="$MPIJOB_PPN" PBS_NUM_PPN="$MPIJOB_PPN" PBS_NUM_NODES="$MPIJOB_NODES" PBS_NP="$MPIJOB_NP"',
    ];
  }
  return [
    nodefile,
    write,
    'export SLURM_HOSTFILE="$MPIJOB_NODEFILE"',
    `export SLURM_JOB_ID=${id} SLURM_JOBID=${id} SLURM_JOB_NAME=${name}`,
    'export SLURM_JOB_NODELIST="$AZ_BATCH_HOST_LIST" SLURM_NODELIST="$AZ_BATCH_HOST_LIST"',
    'export SLURM_NNODES="$MPIJOB_NODES" SLURM_JOB_NUM_NODES="$MPIJOB_NODES" SLURM_NTASKS="$MPIJOB_NP" SLURM_NPROCS="$MPIJOB_NP"',
    'export SLURM_NTASKS_PER_NODE="$MPIJOB_PPN" SLURM_TASKS_PER_NODE="${MPIJOB_PPN}(x${MPIJOB_NODES})" SLURM_CPUS_ON_NODE="$MPIJOB_PPN"',
    `export SLURM_SUBMIT_DIR="${workdir}"`,
    SLURM_LAUNCHER_OFF,
  ];
}
