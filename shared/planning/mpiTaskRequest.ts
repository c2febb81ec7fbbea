/**
 * Maps a job onto the command lines Batch runs: the per-node pull task, the job release task and the
 * multi-instance MPI task. Pure; the shell-level work is done by the builders in shared/mpi.
 */
import { bashCommandLine, shellQuote } from '../mpi/shellQuote';
import { ARRAY_ENV } from '../spec/sections/scheduling';
import { buildContainerCleanupCommand, buildMpiTaskCommands, pullLines, type BindMount, type ContainerOptions } from '../mpi/commands';
import { sifCleanupLine } from '../mpi/singularity';
import { GLUE_STRICT } from '../mpi/userShell';
import type { JobSpec } from '../spec/schema';
import type { ImageEntry } from '../spec/sections/container';
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

/** A blob holding a SIF file, as a job names it. */
export interface ImageBlobRef {
  account: string;
  container: string;
  blob: string;
}

/** How an image shows in progress and errors: its reference, or `blob:<account>/<container>/<blob>`. */
export function imageLabel(image: ImageEntry): string {
  return typeof image === 'string' ? image : `blob:${image.account}/${image.container}/${image.blob}`;
}

/** The job's images that are SIF files in blob storage, in order (each needs a SAS URL for the pull task). */
export function imageBlobs(spec: JobSpec): ImageBlobRef[] {
  return spec.container.images.filter((i): i is ImageBlobRef => typeof i !== 'string');
}

/** The key of the job's SIF directory on every node: the job id (1–64 of [a-z0-9-], already a safe path segment). */
export function sifCacheKeyFor(jobId: string): string {
  return jobId;
}

/** Where a blob image lands in the pull task's directory before it moves into the node's SIF cache. */
const downloadedSifName = (index: number) => `mpijob-image-${index}.sif`;

/**
 * One task per node that pulls every image of the job; exit 0 means the node holds them all. `blobUrls` are the
 * read-only SAS URLs of imageBlobs(spec), in the same order: Batch downloads them as the task's resource files.
 */
export function pullTask(jobId: string, spec: JobSpec, blobUrls: readonly string[] = []): { commandLine: string; resourceFiles: { httpUrl: string; filePath: string }[] } {
  const runtime = spec.container.runtime;
  const resourceFiles: { httpUrl: string; filePath: string }[] = [];
  let blobIndex = 0;
  const lines = spec.container.images.flatMap((image, index) => {
    if (runtime === 'docker') return pullLines({ runtime, image: image as string });
    if (typeof image === 'string') return pullLines({ runtime, image, sifCacheKey: sifCacheKeyFor(jobId), sifIndex: index });
    const url = blobUrls[blobIndex++];
    if (!url) throw new Error(`no SAS URL for container.images[${index}] (${imageLabel(image)})`);
    resourceFiles.push({ httpUrl: url, filePath: downloadedSifName(index) });
    return pullLines({ runtime, downloadedSif: downloadedSifName(index), sifCacheKey: sifCacheKeyFor(jobId), sifIndex: index });
  });
  return { commandLine: bashCommandLine([GLUE_STRICT, ...lines].join('; ')), resourceFiles };
}

/** The job release task: removes the job's containers (docker) or SIF files (singularity) on every node that ran part of the job. */
export function releaseTaskCommand(jobId: string, spec: JobSpec): string {
  const containers = spec.container.runtime === 'singularity'
    ? bashCommandLine(sifCleanupLine(sifCacheKeyFor(jobId)))
    : buildContainerCleanupCommand(spec.container.runtime === 'docker' ? [containerNameFor(jobId)] : []);
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
 * Host paths bound into the job's container. Hook for the data side: mounts and job scratch add their binds here,
 * so docker (-v) and singularity (-B) see them without touching the command builders.
 */
export function containerBinds(spec: JobSpec): BindMount[] {
  return (spec.container.runOptions?.binds ?? []).map((b) => ({ source: b.source, target: b.target, readOnly: b.readOnly }));
}

/** The spec's allowlisted run options in the builders' terms ("unlimited" ulimits are -1). */
export function containerOptionsFor(spec: JobSpec): ContainerOptions {
  const o = spec.container.runOptions;
  const ulimits = o?.ulimits
    ? Object.fromEntries(Object.entries(o.ulimits).filter(([, v]) => v !== undefined).map(([k, v]) => [k, v === 'unlimited' ? '-1' : String(v)]))
    : undefined;
  const binds = containerBinds(spec);
  return {
    ...(o?.shmSize !== undefined ? { shmSize: o.shmSize } : {}),
    ...(ulimits && Object.keys(ulimits).length ? { ulimits } : {}),
    ...(binds.length ? { binds } : {}),
    ...(o?.capAdd.length ? { capAdd: [...o.capAdd] } : {}),
    ...(o?.privileged ? { privileged: true } : {}),
    ...(spec.container.gpus ? { gpus: true } : {}),
  };
}

/**
 * What every rank's shell gets besides the user's environment: the pipeline's exports (the job scratch, an array job's
 * index and parameter — MPIJOB_ is reserved in the task env, so they are exported as quoted literals) as a prefix for
 * the pre-execution command, and the user's environment without them. The MPI task and the preflight check share it.
 */
export function rankSetup(spec: JobSpec, jobId: string): { env: Record<string, string>; prefix: string } {
  const { [ARRAY_ENV.index]: arrayIndex, [ARRAY_ENV.param]: arrayParam, ...env } = spec.mpi.env;
  const arrayExports = [[ARRAY_ENV.index, arrayIndex], [ARRAY_ENV.param, arrayParam]]
    .filter(([, v]) => v !== undefined).map(([k, v]) => `export ${k}=${shellQuote(v as string)}; `).join('');
  return { env, prefix: `${rankEnvironmentPrefix(spec, jobId)}${arrayExports}` };
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
  urls: MpiTaskUrls = { commonResourceFiles: [] },
  /** A retried attempt's task has its own id (ids are unique in a Batch job). */
  taskId: string = plan.mpiTaskId,
): MpiTaskRequestShape {
  const runtime = spec.container.runtime;
  const { env, prefix } = rankSetup(spec, plan.jobId);
  const commands = buildMpiTaskCommands({
    runtime,
    mpiRuntime: spec.mpi.runtime,
    mpiVersion: spec.mpi.version,
    nodes: nodes.length,
    processesPerNode: spec.mpi.processesPerNode,
    command: `export MPIJOB_DATA_DIR="${dataDir}"; ${prefix}${spec.mpi.command}`,
    launcherMode: spec.mpi.launcher.mode,
    launcher: spec.mpi.launcher.executable,
    options: [...spec.mpi.options, ...rankLogOptions(spec)],
    fabric: spec.mpi.fabric,
    vmSize: spec.pool.vmSize ?? plan.poolCreate.vmSize,
    image: runtime === 'docker' ? (spec.container.images[0] as string) : undefined,
    sifCacheKey: runtime === 'singularity' ? sifCacheKeyFor(plan.jobId) : undefined,
    containerName: runtime === 'docker' ? containerNameFor(plan.jobId) : undefined,
    containerOptions: runtime === 'none' ? undefined : containerOptionsFor(spec),
    sshPort: spec.mpi.sshPort,
    env,
    preExecutionCommand: spec.mpi.preExecutionCommand === undefined ? undefined : `${prefix}${spec.mpi.preExecutionCommand}`,
    coordinationCommand: spec.mpi.coordinationCommand,
    nodeSetupCommand: nodeSetupScript(spec, plan.jobId),
  });
  return {
    batchJobId,
    taskId,
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
