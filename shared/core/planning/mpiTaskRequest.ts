/**
 * Maps a job onto the command lines Batch runs: the per-node pull task, the job release task and the
 * multi-instance MPI task. Pure; the shell-level work is done by the builders in shared/core/mpi.
 */
import { bashCommandLine, shellQuote } from '../mpi/shellQuote';
import { ARRAY_ENV } from '../spec/sections/scheduling';
import { buildContainerCleanupCommand, buildMpiTaskCommands, pullLines, type BindMount, type ContainerOptions, type MpiTaskInput } from '../mpi/commands';
import { sifCleanupLine } from '../mpi/singularity';
import { REGISTRY_SECRET_ENV, registryLoginLines, registryLogoutLines, type RegistryLoginPlan } from '../mpi/registryLogin';
import { PlanningError } from './errors';
import type { SecretEnvironmentRef } from '../contract/secretEnvironment';
import type { MpiTaskRequest } from '../contract/batchTasks';
import { imageStateDir, peerCopyScriptLines, seedScriptLines, type TransferImages } from '../mpi/imageTransfer';
import { GLUE_STRICT } from '../mpi/userShell';
import type { JobSpec } from '../spec/schema';
import type { ImageEntry } from '../spec/sections/container';
import type { JobPlan } from './jobPlan';
import { jobSecrets, plainEnv } from './secretEnv';
import { masterOutputFiles, nodeSetupScript, outputsPlan, rankEnvironmentPrefix, rankLogOptions, releaseScript, type NodeResourceFile } from './workloadData';

/** The part of a multi-instance task every such task shares (the MPI task, the preflight check): ids, commands, files. */
export function multiInstanceShape(
  commands: Pick<MpiTaskRequest, 'coordinationCommandLine' | 'applicationCommandLine' | 'environment'>,
  batchJobId: string,
  taskId: string,
  numberOfInstances: number,
  urls: Pick<MpiTaskUrls, 'commonResourceFiles'>,
): MpiTaskRequest {
  return {
    batchJobId,
    taskId,
    numberOfInstances,
    coordinationCommandLine: commands.coordinationCommandLine,
    applicationCommandLine: commands.applicationCommandLine,
    environment: commands.environment,
    commonResourceFiles: urls.commonResourceFiles,
  };
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
 * How the pull task signs in to the job's private registry, if it names one: with the pool identity (the deployment's
 * client id; intake refuses `managed` without one) or with a secret that arrives in the task environment.
 */
export function registryLoginFor(
  spec: JobSpec,
  poolIdentityClientId: string | undefined,
): { login?: RegistryLoginPlan; secretEnvironment: SecretEnvironmentRef[] } {
  const registry = spec.container.registry;
  if (!registry || spec.container.runtime === 'none') return { secretEnvironment: [] };
  if (registry.identity === 'managed') {
    if (!poolIdentityClientId)
      throw new PlanningError('container.registry.identity "managed" needs a pool identity, and this deployment has none', { server: registry.server });
    return { login: { kind: 'identity', server: registry.server, clientId: poolIdentityClientId }, secretEnvironment: [] };
  }
  return {
    login: { kind: 'secret', server: registry.server, username: registry.identity.username, passwordEnvVar: REGISTRY_SECRET_ENV },
    secretEnvironment: [{ name: REGISTRY_SECRET_ENV, server: registry.server, setting: registry.identity.secretRef }],
  };
}

export interface PullTaskShape {
  commandLine: string;
  resourceFiles: { httpUrl: string; filePath: string }[];
  /** Registry secrets the activity puts in the task environment (by setting name: no value here). */
  secretEnvironment: SecretEnvironmentRef[];
}

/** The registry pull of every image as strict-script lines (signed in to the job's private registry around them), with the SIF blobs' resource files. */
function pullScript(
  jobId: string,
  spec: JobSpec,
  blobUrls: readonly string[],
  poolIdentityClientId: string | undefined,
): { lines: string[] } & Omit<PullTaskShape, 'commandLine'> {
  const runtime = spec.container.runtime;
  const { login, secretEnvironment } = registryLoginFor(spec, poolIdentityClientId);
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
  const signIn = login && runtime !== 'none' ? registryLoginLines(runtime, login) : [];
  const signOut = login && runtime !== 'none' ? registryLogoutLines(runtime, login) : [];
  return { lines: [...signIn, ...lines, ...signOut], resourceFiles, secretEnvironment };
}

/**
 * One task per node that pulls every image of the job; exit 0 means the node holds them all. `blobUrls` are the
 * read-only SAS URLs of imageBlobs(spec), in the same order: Batch downloads them as the task's resource files. A
 * private registry is signed in to before the pulls and out of after them (shared/core/mpi/registryLogin.ts).
 */
export function pullTask(jobId: string, spec: JobSpec, blobUrls: readonly string[] = [], poolIdentityClientId?: string): PullTaskShape {
  const { lines, resourceFiles, secretEnvironment } = pullScript(jobId, spec, blobUrls, poolIdentityClientId);
  return { commandLine: bashCommandLine([GLUE_STRICT, ...lines].join('; ')), resourceFiles, secretEnvironment };
}

/** The job's images as the node-side transfer scripts name them. */
export function transferImages(spec: JobSpec): TransferImages {
  return spec.container.runtime === 'docker'
    ? { runtime: 'docker', refs: spec.container.images as string[] }
    : { runtime: 'singularity', count: spec.container.images.length };
}

/**
 * A seed of the image tree: the registry pull, then the digests of what the node holds (checked against `expected`
 * when known), recorded for the peers that copy from it and printed for the orchestrator (imageTransfer.ts).
 */
export function seedPullTask(
  jobId: string,
  spec: JobSpec,
  blobUrls: readonly string[] = [],
  expected?: readonly string[],
  poolIdentityClientId?: string,
): PullTaskShape {
  const { lines, resourceFiles, secretEnvironment } = pullScript(jobId, spec, blobUrls, poolIdentityClientId);
  const script = seedScriptLines(sifCacheKeyFor(jobId), transferImages(spec), lines, expected);
  return { commandLine: bashCommandLine([GLUE_STRICT, ...script].join('; ')), resourceFiles, secretEnvironment };
}

/** A node of the image tree that copies every image from `source` over the cluster network (imageTransfer.ts). */
export function peerCopyTask(
  jobId: string,
  spec: JobSpec,
  source: { nodeId: string; ipAddress: string },
  expected?: readonly string[],
  turn?: number,
): PullTaskShape {
  const script = peerCopyScriptLines({ jobKey: sifCacheKeyFor(jobId), images: transferImages(spec), source, expected, turn });
  return { commandLine: bashCommandLine([GLUE_STRICT, ...script].join('; ')), resourceFiles: [], secretEnvironment: [] };
}

/** The job release task: removes the job's containers (docker) or SIF files (singularity) on every node that ran part of the job. */
export function releaseTaskCommand(jobId: string, spec: JobSpec): string {
  const containers =
    spec.container.runtime === 'singularity'
      ? bashCommandLine(sifCleanupLine(sifCacheKeyFor(jobId)))
      : buildContainerCleanupCommand(spec.container.runtime === 'docker' ? [containerNameFor(jobId)] : []);
  // The shared scratch and the image tree's state (digests, locks: a reused pool would keep them) go first, never
  // failing: the exit code stays the container cleanup's verdict.
  const scratch = releaseScript(spec, jobId);
  const imageState = `rm -rf ${imageStateDir(sifCacheKeyFor(jobId))} || true`;
  return bashCommandLine(`${scratch ? `${scratch}; ` : ''}${imageState}; ${containers}`);
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
    ? Object.fromEntries(
        Object.entries(o.ulimits)
          .filter(([, v]) => v !== undefined)
          .map(([k, v]) => [k, v === 'unlimited' ? '-1' : String(v)]),
      )
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
  // Secret references never reach the task environment settings: the master reads them (mpiTaskInput's secrets).
  const { [ARRAY_ENV.index]: arrayIndex, [ARRAY_ENV.param]: arrayParam, ...env } = plainEnv(spec);
  const arrayExports = [
    [ARRAY_ENV.index, arrayIndex],
    [ARRAY_ENV.param, arrayParam],
  ]
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `export ${k}=${shellQuote(v as string)}; `)
    .join('');
  return { env, prefix: `${rankEnvironmentPrefix(spec, jobId)}${arrayExports}` };
}

/**
 * What the MPI command builder gets for this job on `nodeCount` nodes. Every rank runs the user's command under
 * /bin/sh with MPIJOB_DATA_DIR set to its own node's shard directory: the export is evaluated by each rank's shell,
 * so node-local variables such as $AZ_BATCH_NODE_SHARED_DIR resolve on that node. A job of an array carries
 * MPIJOB_ARRAY_INDEX and MPIJOB_ARRAY_PARAM in its spec's mpi.env (intake put them there): being pipeline variables
 * (MPIJOB_ is reserved for those) they are exported the same way, as quoted literals, not forwarded as user environment.
 */
export function mpiTaskInput(plan: JobPlan, spec: JobSpec, nodeCount: number, dataDir: string): MpiTaskInput {
  const runtime = spec.container.runtime;
  const { env, prefix } = rankSetup(spec, plan.jobId);
  return {
    runtime,
    mpiRuntime: spec.mpi.runtime,
    mpiVersion: spec.mpi.version,
    nodes: nodeCount,
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
    ...(spec.mpi.launcher.compat ? { schedulerCompat: { kind: spec.mpi.launcher.compat, jobId: plan.jobId, jobName: spec.name } } : {}),
    secrets: jobSecrets(spec),
  };
}

/** The multi-instance task on the job's nodes, with the SAS URLs minted for this run. */
export function mpiTaskRequest(
  plan: JobPlan,
  spec: JobSpec,
  nodes: { id: string }[],
  dataDir: string,
  batchJobId: string,
  urls: MpiTaskUrls = { commonResourceFiles: [] },
  /** A retried attempt's task has its own id (ids are unique in a Batch job). */
  taskId: string = plan.mpiTaskId,
): MpiTaskRequest {
  const commands = buildMpiTaskCommands(mpiTaskInput(plan, spec, nodes.length, dataDir));
  return {
    ...multiInstanceShape(commands, batchJobId, taskId, nodes.length, urls),
    ...(jobSecrets(spec).length ? { keyVault: true as const } : {}),
    outputFiles: masterOutputFiles(outputsPlan(spec, plan.jobId), urls.outputsContainerUrl),
    maxWallClockSeconds: plan.mpiMaxWallClockSeconds,
    maxTaskRetryCount: spec.limits.maxRetries,
  };
}
