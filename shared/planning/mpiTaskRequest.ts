/**
 * Maps a job onto the command lines Batch runs: the per-node pull task, the job release task and the
 * multi-instance MPI task. Pure; the shell-level work is done by the builders in shared/mpi.
 */
import { bashCommandLine, shellQuote } from '../mpi/shellQuote';
import { ARRAY_ENV } from '../spec/sections/scheduling';
import { buildContainerCleanupCommand, buildMpiTaskCommands, buildPullCommand } from '../mpi/commands';
import type { JobSpec } from '../spec/schema';
import type { JobPlan } from './jobPlan';

export interface MpiTaskRequestShape {
  batchJobId: string;
  taskId: string;
  numberOfInstances: number;
  coordinationCommandLine: string;
  applicationCommandLine: string;
  environment: { name: string; value: string }[];
  commonResourceFiles: { httpUrl: string; filePath: string }[];
  maxWallClockSeconds?: number;
  maxTaskRetryCount?: number;
}

/** The long-running MPI container's name on every node (also what the release task removes). */
export function containerNameFor(jobId: string): string {
  return `mpijob-${jobId}`.slice(0, 128);
}

/** One task per node that pulls every image of the job; exit 0 means the node holds them all. */
export function pullTaskCommand(spec: JobSpec): string {
  const runtime = spec.container.runtime;
  const pulls = spec.container.images.map((image) => buildPullCommand({ runtime, image }));
  return pulls.length === 1 ? pulls[0] : bashCommandLine(`set -e; ${pulls.join(' && ')}`);
}

/** The job release task: removes the job's containers on every node that ran part of the job. */
export function releaseTaskCommand(jobId: string, spec: JobSpec): string {
  return buildContainerCleanupCommand(spec.container.runtime === 'docker' ? [containerNameFor(jobId)] : []);
}

/**
 * The multi-instance task. Every rank runs the user's command under /bin/sh with MPIJOB_DATA_DIR set to its own
 * node's shard directory: the export is evaluated by each rank's shell, so node-local variables such as
 * $AZ_BATCH_NODE_SHARED_DIR resolve on that node. A job of an array carries MPIJOB_ARRAY_INDEX and MPIJOB_ARRAY_PARAM
 * in its spec's mpi.env (intake put them there): being pipeline variables (MPIJOB_ is reserved for those) they are
 * exported the same way, as quoted literals, not forwarded as user environment.
 */
export function mpiTaskRequest(
  plan: JobPlan,
  spec: JobSpec,
  nodes: { id: string }[],
  dataDir: string,
  batchJobId: string,
): MpiTaskRequestShape {
  const { [ARRAY_ENV.index]: arrayIndex, [ARRAY_ENV.param]: arrayParam, ...env } = spec.mpi.env;
  const arrayExports = [[ARRAY_ENV.index, arrayIndex], [ARRAY_ENV.param, arrayParam]]
    .filter(([, v]) => v !== undefined).map(([k, v]) => `export ${k}=${shellQuote(v as string)}; `).join('');
  const commands = buildMpiTaskCommands({
    runtime: spec.container.runtime,
    mpiRuntime: spec.mpi.runtime,
    nodes: nodes.length,
    processesPerNode: spec.mpi.processesPerNode,
    command: `export MPIJOB_DATA_DIR="${dataDir}"; ${arrayExports}${spec.mpi.command}`,
    options: spec.mpi.options,
    fabric: spec.mpi.fabric,
    vmSize: spec.pool.vmSize ?? plan.poolCreate.vmSize,
    image: spec.container.runtime === 'none' ? undefined : spec.container.images[0],
    containerName: spec.container.runtime === 'docker' ? containerNameFor(plan.jobId) : undefined,
    sshPort: spec.mpi.sshPort,
    env,
    preExecutionCommand: spec.mpi.preExecutionCommand,
    coordinationCommand: spec.mpi.coordinationCommand,
  });
  return {
    batchJobId,
    taskId: plan.mpiTaskId,
    numberOfInstances: nodes.length,
    coordinationCommandLine: commands.coordinationCommandLine,
    applicationCommandLine: commands.applicationCommandLine,
    environment: commands.environment,
    commonResourceFiles: [],
    maxWallClockSeconds: plan.mpiMaxWallClockSeconds,
    maxTaskRetryCount: spec.limits.maxRetries,
  };
}
