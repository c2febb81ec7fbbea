/**
 * The Batch requests of a job, from the plain JSON the orchestration carries to the specs the Batch adapter turns
 * into request bodies (shared/adapters/batch: buildPoolAddParameter, buildJobAddParameter, buildMpiTaskParameter,
 * buildNodeTaskParameter). Pure: the activities call these with what they resolved at run time (SAS URLs, secrets,
 * node ids), and `explainJob` (explain.ts) calls them with marked placeholders, so a dry run shows the very bodies
 * a run sends. Every constant that shapes a request is declared here once.
 */
import { poolSplit } from './spotPolicy';
import type { BatchJobCreateInput, NodeTaskRequest, SecretEnvironmentRef } from '../contract/activities';
import type { BatchJobSpec, JobPoolSpec, MountSpec, NodeTaskSpec, ResourceFileSpec } from '../../adapters/batch';
import { GLUE_STRICT, NODE_PROFILE, USER_MODE, userCommandLine, userStep } from '../mpi/userShell';
import { bashCommandLine } from '../mpi/shellQuote';
import { NETWORK_MOUNT_KINDS, mountKind, mountServerSource, nfsMountOptions, nodeFilesystemSetup } from './nodeFilesystems';
import { resolvePoolNetwork } from '../spec/sections/network';
import { PlanningError } from './errors';
import { parseIsoDuration } from '../spec/duration';
import type { JobSpec } from '../spec/schema';
import type { PoolCreateRequest } from './jobPlan';
import type { PullTaskShape } from './mpiTaskRequest';
import type { MountRequest, NodeFileSource, NodeResourceFile, NodeUploadTask } from './workloadData';

/** The start task's files are read through SAS URLs valid this long at most (nodes that join late, replacements). */
export const START_TASK_SAS_MAX_MINUTES = 24 * 60;
/** SIF files in blob storage are read through SAS URLs that live this long at most: the pull window, not the job. */
export const IMAGE_SAS_MINUTES = 120;
/** A node upload task may run this long (Batch ends it after; its uploads then count as failed). */
export const UPLOAD_TASK_MAX_SECONDS = 6 * 3600;
/** Batch runs a job release task only on nodes that ran a preparation task: this one does nothing else. */
export const PREPARATION_COMMAND_LINE = '/bin/sh -c true';

export const displayNameFor = (jobId: string) => `hpc-mpi job ${jobId}`;

/** A per-node task's id: `<prefix>-<node index>-a<attempt>` (pull-0-a1, dl-1-a2, up-0-a1), unique in the Batch job. */
export function nodeTaskId(prefix: string, nodeIndex: number | string, attempt: number | string): string {
  return `${prefix}-${nodeIndex}-a${attempt}`;
}

/** Minutes the start task's SAS URLs live on a deployment whose SAS cap is `sasMaxLifetimeMinutes`. */
export function startTaskSasMinutes(sasMaxLifetimeMinutes: number): number {
  return Math.min(START_TASK_SAS_MAX_MINUTES, sasMaxLifetimeMinutes);
}

/**
 * A start-task file as Batch downloads it: `url` is the blob's read-only SAS URL or, on a deployment with a pool
 * identity, its plain URL, read by the node with that identity (`identityResourceId`: identityReference).
 */
export function startTaskResourceFile(file: { path: string }, url: string, identityResourceId?: string): ResourceFileSpec {
  return { httpUrl: url, filePath: file.path, ...(identityResourceId ? { identityResourceId } : {}) };
}

/**
 * The pool the job creates. `resolved` is what the poolCreate activity minted or read: the start task's resource
 * files (in the order of `startTask.resourceFiles`), the mounts with their credentials, and the deployment's pool
 * identity (ARM id) when it has one: the pool is then created through the management plane carrying it, and a job
 * whose registry signs in with the managed identity lists that registry with it (containerRegistries).
 */
export function jobPoolSpec(
  input: PoolCreateRequest,
  resolved: { startTaskFiles?: ResourceFileSpec[]; mounts?: MountSpec[]; identityResourceId?: string; owner?: string; defaultSubnetId?: string } = {},
): JobPoolSpec {
  const identityResourceId = resolved.identityResourceId;
  const network = resolvePoolNetwork(input.network, resolved.defaultSubnetId);
  if (network && 'error' in network) throw new PlanningError(network.error, { poolId: input.poolId });
  // Azure Files NFS, NetApp Files and Lustre answer private addresses only: without a subnet nothing could mount them.
  (input.mounts ?? []).forEach((m, i) => {
    const kind = mountKind(m);
    if (!network && kind && NETWORK_MOUNT_KINDS.includes(kind)) {
      throw new PlanningError(
        `mounts[${i}].${kind}: ${m.name} is reached through a virtual network only (no key, no public endpoint): put the pool in one (pool.network.subnetId, or the deployment's POOL_SUBNET_ID)`,
        { poolId: input.poolId },
      );
    }
  });
  const registries =
    input.registry && identityResourceId && input.registry.identity === 'managed' ? [{ registryServer: input.registry.server, identityResourceId }] : undefined;
  return {
    poolId: input.poolId,
    jobId: input.jobId,
    // The submitter, recorded on the pool: a kept pool is then reusable by its owner only (docs/security.md).
    ...(resolved.owner !== undefined ? { owner: resolved.owner } : {}),
    vmSize: input.vmSize,
    // pool.spot: its nodes are Batch's Spot (low-priority) nodes, the rest dedicated.
    targetDedicatedNodes: poolSplit(input.nodes, input.spotNodes).dedicated,
    ...(input.spotNodes ? { targetLowPriorityNodes: poolSplit(input.nodes, input.spotNodes).lowPriority } : {}),
    image: input.customImageId ? { virtualMachineImageId: input.customImageId } : { ...input.image },
    nodeAgentSkuId: input.nodeAgentSku,
    resizeTimeoutMinutes: Math.max(5, Math.round((parseIsoDuration(input.resizeTimeout) ?? 15 * 60_000) / 60_000)),
    startTask: poolStartTask(input, resolved.startTaskFiles),
    ...(registries ? { containerRegistries: registries } : {}),
    displayName: displayNameFor(input.jobId),
    mounts: resolved.mounts,
    ...(network ? { network } : {}),
  };
}

/**
 * The pool's start task: the file system steps the mounts need (Lustre, fixed paths; nodeFilesystems.ts), as root,
 * then the user's start task as user code. Without either, none.
 */
function poolStartTask(input: PoolCreateRequest, resourceFiles: ResourceFileSpec[] | undefined): JobPoolSpec['startTask'] {
  const setup = nodeFilesystemSetup(input.mounts ?? [], input.scratch);
  if (!setup.length && !input.startTask) return undefined;
  const commandLine = setup.length
    ? bashCommandLine(
        [GLUE_STRICT, ...setup, ...(input.startTask ? [USER_MODE, NODE_PROFILE, ...userStep('pool.startTask.command', input.startTask.command)] : [])].join(
          '\n',
        ),
      )
    : userCommandLine((input.startTask as NonNullable<PoolCreateRequest['startTask']>).command);
  return { commandLine, resourceFiles: input.startTask ? resourceFiles : undefined, elevated: true, waitForSuccess: true };
}

/** The mounts Batch makes itself (mountConfiguration): all but Lustre, which the start task mounts. */
export function batchMountRequests(mounts: readonly MountRequest[]): MountRequest[] {
  return mounts.filter((m) => !m.lustre);
}

/** The credentials of one mount, resolved by the poolCreate activity (or placeholders in a dry run). */
export interface MountCredentials {
  /** cifs: the password; azureFiles: the account key (the app setting MOUNT_SECRET_<secretRef>). */
  secret?: string;
  /** azureFiles: the share's URL on the account's file endpoint. */
  azureFileUrl?: string;
  /** blobfuse: the SAS token (without "?") on the container. */
  sasToken?: string;
}

/** What Batch's mountConfiguration gets for one mount of the spec. */
export function mountSpec(m: MountRequest, c: MountCredentials): MountSpec {
  const need = (v: string | undefined, what: string): string => {
    if (v === undefined) throw new Error(`mount ${m.name}: no ${what} resolved`);
    return v;
  };
  if (m.nfs || m.azureFilesNfs || m.netappFiles) {
    return { kind: 'nfs', relativeMountPath: m.name, source: mountServerSource(m) as string, mountOptions: nfsMountOptions(m) };
  }
  if (m.cifs) {
    return {
      kind: 'cifs',
      relativeMountPath: m.name,
      source: m.cifs.source,
      username: m.cifs.username,
      password: need(c.secret, 'password'),
      mountOptions: m.cifs.options,
    };
  }
  if (m.azureFiles) {
    return {
      kind: 'azureFiles',
      relativeMountPath: m.name,
      accountName: m.azureFiles.account,
      azureFileUrl: need(c.azureFileUrl, 'share URL'),
      accountKey: need(c.secret, 'account key'),
      mountOptions: m.azureFiles.options,
    };
  }
  if (m.blobfuse) {
    const options = [m.blobfuse.readOnly || m.readOnly ? '-o ro' : undefined, m.blobfuse.options].filter(Boolean).join(' ');
    return {
      kind: 'blobfuse',
      relativeMountPath: m.name,
      accountName: m.blobfuse.account,
      containerName: m.blobfuse.container,
      sasKey: need(c.sasToken, 'SAS'),
      blobfuseOptions: options || undefined,
    };
  }
  throw new Error(`mount ${m.name}: names no file system Batch mounts (nfs, azureFiles, blobfuse, cifs, azureFilesNfs or netappFiles)`);
}

/**
 * How long a blobfuse mount's SAS lives: what the job needs (`validForMs`: allocation plus every attempt of the MPI
 * task, from the plan) plus the margin, never beyond the deployment's cap; without a wall clock, the cap.
 */
export function mountSasLifetimeMs(validForMs: number | undefined, settings: { sasMaxLifetimeMinutes: number; sasMarginMinutes: number }): number {
  const capMs = settings.sasMaxLifetimeMinutes * 60_000;
  return Math.min(capMs, (validForMs ?? capMs) + settings.sasMarginMinutes * 60_000);
}

/** The SAS permissions a blobfuse mount gets on its container. */
export function blobfusePermissions(m: MountRequest): 'rl' | 'racwdl' {
  return m.blobfuse?.readOnly || m.readOnly ? 'rl' : 'racwdl';
}

/** The Batch job that holds the job's tasks, with the release task that cleans every node it ran on. */
export function batchJobSpec(input: BatchJobCreateInput): BatchJobSpec {
  return {
    batchJobId: input.batchJobId,
    jobId: input.jobId,
    poolId: input.poolId,
    displayName: displayNameFor(input.jobId),
    preparationTask: { commandLine: PREPARATION_COMMAND_LINE },
    releaseTask: { commandLine: input.releaseCommandLine, elevated: true },
  };
}

/**
 * Node tasks (pulls, downloads, uploads) run elevated: they drive the container runtime and write the node's shared
 * directory. A task's registry secrets (`secretEnvironment`: setting names only, as the orchestration's history holds
 * them) join its environment with the value `secretValue` gives: the secret itself in the activity, at the last
 * moment; a placeholder in a dry run.
 */
export function nodeTaskSpec(task: NodeTaskRequest, secretValue?: (ref: SecretEnvironmentRef) => string): NodeTaskSpec {
  const { secretEnvironment, ...rest } = task;
  if (!secretEnvironment?.length) return { ...rest, elevated: true };
  if (!secretValue) throw new Error(`task ${task.id}: names registry secrets, and no secret source was given`);
  const environment = [...(rest.environment ?? []), ...secretEnvironment.map((s) => ({ name: s.name, value: secretValue(s) }))];
  return { ...rest, environment, elevated: true };
}

/** One node's pull task (mpiTaskRequest.pullTask: the same for every node) as a task request without id and affinity. */
export function pullNodeTask(task: PullTaskShape): Omit<NodeTaskRequest, 'id' | 'affinityId'> {
  return {
    commandLine: task.commandLine,
    ...(task.resourceFiles.length ? { resourceFiles: task.resourceFiles } : {}),
    ...(task.secretEnvironment.length ? { secretEnvironment: task.secretEnvironment } : {}),
  };
}

/**
 * How long the shards' read-only SAS URLs live: nodes read their shards once, right away, so the job's wall clock
 * (plus a margin for nodes that download late), never beyond the deployment's cap however long the job may run.
 */
export function shardSasLifetimeMs(spec: JobSpec, settings: { sasMaxLifetimeMinutes: number; sasMarginMinutes: number }): number {
  const capMs = settings.sasMaxLifetimeMinutes * 60_000;
  const wallClockMs = spec.limits.maxWallClock ? parseIsoDuration(spec.limits.maxWallClock) : undefined;
  return Math.min(capMs, (wallClockMs ?? capMs) + settings.sasMarginMinutes * 60_000);
}

/** Nodes downloading their shards at the same time: the pull window's width, at most every node. */
export function shardDownloadConcurrency(nodeCount: number, pullConcurrency: number): number {
  return Math.max(1, Math.min(nodeCount, pullConcurrency));
}

/**
 * One node's download of its shards: Batch fetches each shard (its read-only SAS URL) into `shards/`, the command
 * moves them to the job's data directory. Every node gets one, also a node without shards, so the directory exists.
 */
export function shardDownloadTask(destination: string, shards: { shardId: string; url: string }[]): Omit<NodeTaskRequest, 'id' | 'affinityId'> {
  return {
    commandLine: `/bin/sh -c "mkdir -p ${destination} && if [ -d shards ]; then mv -f shards/* ${destination}/; fi && ls ${destination} | wc -l"`,
    resourceFiles: shards.map((s) => ({ httpUrl: s.url, filePath: `shards/${s.shardId}` })),
  };
}

/** The node upload task of one node (workloadData.nodeUploadTask) as a task request: pinned, time-limited. */
export function uploadTaskRequest(upload: NodeUploadTask, nodeIndex: number | string, attempt: number | string): NodeTaskRequest {
  return {
    id: nodeTaskId('up', nodeIndex, attempt),
    affinityId: upload.affinityId,
    commandLine: upload.commandLine,
    outputFiles: upload.outputFiles,
    maxWallClockSeconds: UPLOAD_TASK_MAX_SECONDS,
  };
}

/**
 * One entry of `files` as a commonResourceFile of the MPI task: a URL as given, a blob through its read-only SAS URL
 * (`sas.blobUrl`), a prefix through a read/list SAS on its container (`sas.containerUrl`).
 */
export function nodeResourceFile(f: NodeFileSource, sas: { blobUrl?: string; containerUrl?: string }): NodeResourceFile {
  const mode = f.fileMode === undefined ? {} : { fileMode: f.fileMode };
  if (f.kind === 'url') return { httpUrl: f.url, filePath: f.filePath, ...mode };
  if (f.kind === 'blob') {
    if (sas.blobUrl === undefined) throw new Error(`no SAS URL for blob ${f.account}/${f.container}/${f.blob}`);
    return { httpUrl: sas.blobUrl, filePath: f.filePath, ...mode };
  }
  if (sas.containerUrl === undefined) throw new Error(`no SAS URL for container ${f.account}/${f.container}`);
  return { storageContainerUrl: sas.containerUrl, ...(f.prefix ? { blobPrefix: f.prefix } : {}), filePath: f.filePath, ...mode };
}
