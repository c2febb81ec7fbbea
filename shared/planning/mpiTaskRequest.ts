/**
 * Maps a job onto the command lines Batch runs: the per-node pull task, the job release task and the
 * multi-instance MPI task. Pure; the shell-level work is done by the builders in shared/mpi.
 */
import { bashCommandLine } from '../mpi/shellQuote';
import { buildContainerCleanupCommand, buildMpiTaskCommands, buildPullCommand } from '../mpi/commands';
import type { JobSpec } from '../spec/schema';
import type { JobPlan } from './jobPlan';
import { masterOutputFiles, nodeSetupScript, outputsPlan, rankEnvironmentPrefix, rankLogOptions, releaseScript, type NodeResourceFile, type TaskOutputFile } from './workloadData';

export interface MpiTaskRequestShape {
  batchJobId: string;
  taskId: string;
  numberOfInstances: number;
  coordinationCommandLine: string;
  applicationCommandLine: string;
  environment: { name: string; value: string }[];
  commonResourceFiles: NodeResourceFile[];
  /** Uploaded by Batch from the master when the task ends, before it counts as completed. */
  outputFiles?: TaskOutputFile[];
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
  const containers = buildContainerCleanupCommand(spec.container.runtime === 'docker' ? [containerNameFor(jobId)] : []);
  // The shared scratch goes first (never failing): the exit code stays the container cleanup's verdict.
  const scratch = releaseScript(spec, jobId);
  return scratch ? bashCommandLine(`${scratch}; ${containers}`) : containers;
}

/** The SAS URLs the MPI task needs, minted by the workloadUrls activity for this run. */
export interface MpiTaskUrls {
  commonResourceFiles: NodeResourceFile[];
  outputsContainerUrl?: string;
}

/**
 * The multi-instance task. Every rank runs the user's command under /bin/sh with MPIJOB_DATA_DIR set to its own
 * node's shard directory: the export is evaluated by each rank's shell, so node-local variables such as
 * $AZ_BATCH_NODE_SHARED_DIR resolve on that node.
 */
export function mpiTaskRequest(
  plan: JobPlan,
  spec: JobSpec,
  nodes: { id: string }[],
  dataDir: string,
  batchJobId: string,
  urls: MpiTaskUrls = { commonResourceFiles: [] },
): MpiTaskRequestShape {
  const jobEnv = rankEnvironmentPrefix(spec, plan.jobId);
  const commands = buildMpiTaskCommands({
    runtime: spec.container.runtime,
    mpiRuntime: spec.mpi.runtime,
    nodes: nodes.length,
    processesPerNode: spec.mpi.processesPerNode,
    command: `export MPIJOB_DATA_DIR="${dataDir}"; ${jobEnv}${spec.mpi.command}`,
    options: [...spec.mpi.options, ...rankLogOptions(spec)],
    fabric: spec.mpi.fabric,
    vmSize: spec.pool.vmSize ?? plan.poolCreate.vmSize,
    image: spec.container.runtime === 'none' ? undefined : spec.container.images[0],
    containerName: spec.container.runtime === 'docker' ? containerNameFor(plan.jobId) : undefined,
    sshPort: spec.mpi.sshPort,
    env: spec.mpi.env,
    preExecutionCommand: spec.mpi.preExecutionCommand === undefined ? undefined : `${jobEnv}${spec.mpi.preExecutionCommand}`,
    coordinationCommand: spec.mpi.coordinationCommand,
    nodeSetupCommand: nodeSetupScript(spec, plan.jobId),
  });
  return {
    batchJobId,
    taskId: plan.mpiTaskId,
    numberOfInstances: nodes.length,
    coordinationCommandLine: commands.coordinationCommandLine,
    applicationCommandLine: commands.applicationCommandLine,
    environment: commands.environment,
    commonResourceFiles: urls.commonResourceFiles,
    outputFiles: masterOutputFiles(outputsPlan(spec, plan.jobId), urls.outputsContainerUrl),
    maxWallClockSeconds: plan.mpiMaxWallClockSeconds,
    maxTaskRetryCount: spec.limits.maxRetries,
  };
}
