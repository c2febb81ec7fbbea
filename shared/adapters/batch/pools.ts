/**
 * Job-owned pools: create (idempotently), observe, resize, replace nodes, delete.
 * Nothing here waits: the orchestrator polls these snapshots with durable timers.
 */
import type { BatchServiceModels } from '@azure/batch';
import type { BatchContext } from './client';
import {
  collectPages,
  iso,
  isGone,
  ownerJobOf,
  poolOwnershipMetadata,
  stripUndefined,
  submitterOf,
  toEnvironmentSettings,
  toResourceFiles,
  toContainerSettings,
  type ContainerSettingsSpec,
  type NameValue,
  type ResourceFileSpec,
} from './common';
import { BatchError } from './errors';
import { callWithRetry } from './retry';

export interface ImageSpec {
  /** Marketplace image... */
  publisher?: string;
  offer?: string;
  sku?: string;
  version?: string;
  /** ...or a custom image (Azure Compute Gallery / managed image) ARM id. */
  virtualMachineImageId?: string;
}

export interface StartTaskSpec {
  commandLine: string;
  environment?: NameValue[];
  resourceFiles?: ResourceFileSpec[];
  containerSettings?: ContainerSettingsSpec;
  /** Run as the pool's admin auto-user (needed to install packages or drive the container runtime). */
  elevated?: boolean;
  /** Default true: no task is scheduled on a node whose start task has not succeeded. */
  waitForSuccess?: boolean;
  maxTaskRetryCount?: number;
}

/** One file system Batch mounts on every node at $AZ_BATCH_NODE_MOUNTS_DIR/<relativeMountPath>, secrets resolved. */
export type MountSpec =
  | { kind: 'nfs'; relativeMountPath: string; source: string; mountOptions?: string }
  | { kind: 'cifs'; relativeMountPath: string; source: string; username: string; password: string; mountOptions?: string }
  | { kind: 'azureFiles'; relativeMountPath: string; accountName: string; azureFileUrl: string; accountKey: string; mountOptions?: string }
  | { kind: 'blobfuse'; relativeMountPath: string; accountName: string; containerName: string; sasKey: string; blobfuseOptions?: string };

export function toMountConfiguration(mounts: MountSpec[] | undefined): BatchServiceModels.MountConfiguration[] | undefined {
  if (!mounts || mounts.length === 0) return undefined;
  return mounts.map((m): BatchServiceModels.MountConfiguration => {
    switch (m.kind) {
      case 'nfs':
        return { nfsMountConfiguration: stripUndefined({ source: m.source, relativeMountPath: m.relativeMountPath, mountOptions: m.mountOptions }) };
      case 'cifs':
        return {
          cifsMountConfiguration: stripUndefined({
            username: m.username,
            source: m.source,
            password: m.password,
            relativeMountPath: m.relativeMountPath,
            mountOptions: m.mountOptions,
          }),
        };
      case 'azureFiles':
        return {
          azureFileShareConfiguration: stripUndefined({
            accountName: m.accountName,
            azureFileUrl: m.azureFileUrl,
            accountKey: m.accountKey,
            relativeMountPath: m.relativeMountPath,
            mountOptions: m.mountOptions,
          }),
        };
      case 'blobfuse':
        return {
          azureBlobFileSystemConfiguration: stripUndefined({
            accountName: m.accountName,
            containerName: m.containerName,
            sasKey: m.sasKey,
            relativeMountPath: m.relativeMountPath,
            blobfuseOptions: m.blobfuseOptions,
          }),
        };
    }
  });
}

export interface JobPoolSpec {
  poolId: string;
  /** The control-plane job that owns the pool (written to metadata). */
  jobId: string;
  /** Who submitted that job (written to metadata, SUBMITTER_KEY): the pool's owner when it is kept and reused. */
  owner?: string;
  vmSize: string;
  targetDedicatedNodes: number;
  /** Spot/low-priority nodes (pool.spot.nodes; 0 or absent: dedicated only). */
  targetLowPriorityNodes?: number;
  image: ImageSpec;
  nodeAgentSkuId: string;
  /** Registries the container runtime may pull from (credentials are referenced, never preloaded). */
  containerRegistries?: { registryServer: string; userName?: string; password?: string; identityResourceId?: string }[];
  startTask?: StartTaskSpec;
  /** Allocation timeout in minutes (Batch minimum 5, default 15). */
  resizeTimeoutMinutes?: number;
  /** File systems mounted on every node (Batch mountConfiguration). */
  mounts?: MountSpec[];
  /** The virtual network the nodes join (Batch networkConfiguration). */
  network?: PoolNetworkSpec;
  displayName?: string;
}

/** A pool's network: its subnet, its nodes' public IP addresses, accelerated networking (management plane only). */
export interface PoolNetworkSpec {
  subnetId: string;
  /** Default: Batch's own (batchManaged). */
  publicIp?: 'none' | 'batchManaged' | { userManaged: string[] };
  acceleratedNetworking?: boolean;
}

/** networkConfiguration's publicIPAddressConfiguration, in a plane's spelling of the provisioning type. */
export function publicIpConfiguration<T extends string>(
  publicIp: PoolNetworkSpec['publicIp'],
  names: { none: T; batch: T; user: T },
): { provision: T; ipAddressIds?: string[] } | undefined {
  if (publicIp === undefined) return undefined;
  if (publicIp === 'none') return { provision: names.none };
  if (publicIp === 'batchManaged') return { provision: names.batch };
  return { provision: names.user, ipAddressIds: [...publicIp.userManaged] };
}

export interface CreatePoolResult {
  poolId: string;
  /** False when the pool already existed and was ours for this job (a retried or replayed create). */
  created: boolean;
}

export interface NodeSnapshot {
  id: string;
  state: string;
  ipAddress: string;
  affinityId: string;
  /** Node errors Batch reports (e.g. for unusable nodes). */
  errors?: { code: string; message: string }[];
  /** The start task's outcome on this node, when it has one. */
  startTask?: { state: string; exitCode?: number; failure?: string };
  /** False on a Spot/low-priority node (absent when Batch did not say: dedicated). */
  isDedicated?: boolean;
}

export interface PoolSnapshot {
  poolId: string;
  state: string;
  allocationState: string;
  currentDedicatedNodes: number;
  targetDedicatedNodes: number;
  /** Spot/low-priority nodes (preempted ones included, as Batch counts them). */
  currentLowPriorityNodes?: number;
  targetLowPriorityNodes?: number;
  resizeErrors: { code: string; message: string }[];
  nodes: NodeSnapshot[];
}

export interface PoolInspection {
  exists: boolean;
  state?: string;
  allocationState?: string;
  vmSize?: string;
  enableInterNodeCommunication?: boolean;
  taskSlotsPerNode?: number;
  /** The control-plane job recorded in the pool's metadata, when we created it. */
  ownedByJob?: string;
  /** The submitter of that job recorded in the metadata (pools created before owners have none). */
  owner?: string;
}

/** The pool's registry logins, as both planes spell them (a secret, or the pool identity by reference). */
export function toContainerRegistries(registries: JobPoolSpec['containerRegistries']) {
  return registries?.map((r) =>
    stripUndefined({
      registryServer: r.registryServer,
      userName: r.userName,
      password: r.password,
      identityReference: r.identityResourceId ? { resourceId: r.identityResourceId } : undefined,
    }),
  );
}

export const poolResource = (poolId: string) => `pool ${poolId}`;

/**
 * networkConfiguration on the data plane. The 2022-10-01 API has no enableAcceleratedNetworking: a spec asking for it
 * is refused at the door on a deployment without a pool identity (shared/core/intake/networkPolicy.ts), never dropped.
 */
function dataPlaneNetwork(n: PoolNetworkSpec): BatchServiceModels.NetworkConfiguration {
  if (n.acceleratedNetworking !== undefined)
    throw new Error('acceleratedNetworking needs the management plane (a pool identity): the data plane API 2022-10-01 has no such field');
  return stripUndefined({
    subnetId: n.subnetId,
    publicIPAddressConfiguration: publicIpConfiguration(n.publicIp, {
      none: 'nopublicipaddresses' as const,
      batch: 'batchmanaged' as const,
      user: 'usermanaged' as const,
    }),
  });
}

/** The PoolAddParameter for a job-owned MPI pool. Pure; exported for tests and for review. */
export function buildPoolAddParameter(spec: JobPoolSpec): BatchServiceModels.PoolAddParameter {
  const image = spec.image.virtualMachineImageId
    ? { virtualMachineImageId: spec.image.virtualMachineImageId }
    : stripUndefined({ publisher: spec.image.publisher, offer: spec.image.offer, sku: spec.image.sku, version: spec.image.version ?? 'latest' });
  return stripUndefined({
    id: spec.poolId,
    displayName: spec.displayName,
    vmSize: spec.vmSize,
    virtualMachineConfiguration: {
      imageReference: image,
      nodeAgentSKUId: spec.nodeAgentSkuId,
      // No containerImageNames: Batch would pull every image on every node at once while allocating;
      // the pipeline pulls them itself, a bounded number of nodes at a time.
      containerConfiguration: stripUndefined({
        type: 'dockerCompatible' as const,
        containerRegistries: toContainerRegistries(spec.containerRegistries),
      }),
    },
    targetDedicatedNodes: spec.targetDedicatedNodes,
    // Batch allows Spot nodes beside inter-node communication (docs/job-spec.md, "Spot nodes").
    targetLowPriorityNodes: spec.targetLowPriorityNodes ?? 0,
    resizeTimeout: `PT${spec.resizeTimeoutMinutes ?? 15}M`,
    enableAutoScale: false,
    enableInterNodeCommunication: true,
    taskSlotsPerNode: 1,
    taskSchedulingPolicy: { nodeFillType: 'spread' as const },
    networkConfiguration: spec.network ? dataPlaneNetwork(spec.network) : undefined,
    startTask: spec.startTask
      ? stripUndefined({
          commandLine: spec.startTask.commandLine,
          environmentSettings: toEnvironmentSettings(spec.startTask.environment),
          resourceFiles: toResourceFiles(spec.startTask.resourceFiles),
          containerSettings: toContainerSettings(spec.startTask.containerSettings),
          userIdentity: spec.startTask.elevated ? { autoUser: { scope: 'pool' as const, elevationLevel: 'admin' as const } } : undefined,
          waitForSuccess: spec.startTask.waitForSuccess ?? true,
          maxTaskRetryCount: spec.startTask.maxTaskRetryCount ?? 0,
        })
      : undefined,
    mountConfiguration: toMountConfiguration(spec.mounts),
    metadata: poolOwnershipMetadata(spec.jobId, spec.owner),
  });
}

/**
 * Creates the pool. A pool that already exists counts as created when its metadata says it is ours
 * for this job (the activity ran twice); anyone else's pool is a conflict.
 */
export async function createJobPool(ctx: BatchContext, spec: JobPoolSpec): Promise<CreatePoolResult> {
  const resource = poolResource(spec.poolId);
  const body = buildPoolAddParameter(spec);
  try {
    await callWithRetry(ctx.retry, { operation: 'pools.create', resource }, () => ctx.client.pool.add(body));
    return { poolId: spec.poolId, created: true };
  } catch (err) {
    if (!(err instanceof BatchError) || err.code !== 'PoolExists') throw err;
  }
  const existing = await inspectPool(ctx, spec.poolId);
  return adoptExistingPool('pools.create', spec, {
    exists: existing.exists,
    vmSize: existing.vmSize,
    ours: existing.exists && existing.ownedByJob === spec.jobId && existing.state === 'active',
    whose: `(owner job: ${existing.ownedByJob ?? 'none'}, state: ${existing.state})`,
  });
}

/**
 * After a create answered "exists" (the activity ran twice, or someone else holds the id): the job's own pool from
 * an earlier run counts as created, with the same VM size; anything else is a conflict. For both planes.
 */
export function adoptExistingPool(
  operation: string,
  spec: Pick<JobPoolSpec, 'poolId' | 'jobId' | 'vmSize'>,
  existing: { exists: boolean; vmSize?: string; ours: boolean; whose: string },
): CreatePoolResult {
  const resource = poolResource(spec.poolId);
  if (existing.ours) {
    if (existing.vmSize?.toLowerCase() !== spec.vmSize.toLowerCase()) {
      throw new BatchError({
        code: 'PoolExistsWithDifferentSpec',
        status: 409,
        operation,
        resource,
        message: `pool exists for job ${spec.jobId} with VM size ${existing.vmSize}, expected ${spec.vmSize}`,
      });
    }
    return { poolId: spec.poolId, created: false };
  }
  throw new BatchError({
    code: 'PoolExists',
    status: 409,
    operation,
    resource,
    message: existing.exists ? `pool already exists and is not ours for job ${spec.jobId} ${existing.whose}` : 'pool was reported as existing but is gone',
  });
}

/** What a job that wants to reuse a pool, or a retried create, needs to know about it. */
export async function inspectPool(ctx: BatchContext, poolId: string): Promise<PoolInspection> {
  try {
    const pool = await callWithRetry(ctx.retry, { operation: 'pools.inspect', resource: poolResource(poolId) }, () => ctx.client.pool.get(poolId));
    return stripUndefined({
      exists: true,
      state: pool.state,
      allocationState: pool.allocationState,
      vmSize: pool.vmSize,
      enableInterNodeCommunication: pool.enableInterNodeCommunication ?? false,
      taskSlotsPerNode: pool.taskSlotsPerNode ?? 1,
      ownedByJob: ownerJobOf(pool.metadata),
      owner: submitterOf(pool.metadata),
    });
  } catch (err) {
    if (isGone(err, ['PoolNotFound'])) return { exists: false };
    throw err;
  }
}

/** One observation of the pool and its nodes. Returns undefined when the pool does not exist. */
export async function getPoolSnapshot(ctx: BatchContext, poolId: string): Promise<PoolSnapshot | undefined> {
  const resource = poolResource(poolId);
  let pool: BatchServiceModels.CloudPool;
  try {
    pool = await callWithRetry(ctx.retry, { operation: 'pools.get', resource }, () =>
      ctx.client.pool.get(poolId, {
        poolGetOptions: {
          select: 'id,state,allocationState,currentDedicatedNodes,targetDedicatedNodes,currentLowPriorityNodes,targetLowPriorityNodes,resizeErrors',
        },
      }),
    );
  } catch (err) {
    if (isGone(err, ['PoolNotFound'])) return undefined;
    throw err;
  }
  let nodes: NodeSnapshot[];
  try {
    nodes = await listNodes(ctx, poolId);
  } catch (err) {
    // Deleted between the two reads.
    if (isGone(err, ['PoolNotFound'])) return undefined;
    throw err;
  }
  return {
    poolId,
    state: pool.state ?? 'unknown',
    allocationState: pool.allocationState ?? 'unknown',
    currentDedicatedNodes: pool.currentDedicatedNodes ?? 0,
    targetDedicatedNodes: pool.targetDedicatedNodes ?? 0,
    currentLowPriorityNodes: pool.currentLowPriorityNodes ?? 0,
    targetLowPriorityNodes: pool.targetLowPriorityNodes ?? 0,
    resizeErrors: (pool.resizeErrors ?? []).map((e) => ({ code: e.code ?? 'Unknown', message: e.message ?? '' })),
    nodes,
  };
}

export async function listNodes(ctx: BatchContext, poolId: string): Promise<NodeSnapshot[]> {
  const what = { operation: 'nodes.list', resource: poolResource(poolId) };
  const options = { computeNodeListOptions: { select: 'id,state,ipAddress,affinityId,errors,startTaskInfo,isDedicated' } };
  const nodes = await collectPages(
    ctx.retry,
    what,
    () => ctx.client.computeNode.list(poolId, options),
    (link) => ctx.client.computeNode.listNext(link),
  );
  return nodes.map(toNodeSnapshot).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}

function toNodeSnapshot(n: BatchServiceModels.ComputeNode): NodeSnapshot {
  const errors = (n.errors ?? []).map((e) => ({ code: e.code ?? 'Unknown', message: e.message ?? '' }));
  const st = n.startTaskInfo;
  const failure = st?.failureInfo ? `${st.failureInfo.code ?? 'Failure'}: ${st.failureInfo.message ?? ''}`.trim() : undefined;
  return stripUndefined({
    id: n.id ?? '',
    state: n.state ?? 'unknown',
    ipAddress: n.ipAddress ?? '',
    affinityId: n.affinityId ?? '',
    errors: errors.length ? errors : undefined,
    startTask: st ? stripUndefined({ state: st.state, exitCode: st.exitCode, failure }) : undefined,
    isDedicated: n.isDedicated === false ? false : undefined,
  });
}

/**
 * Sets the pool's dedicated and Spot/low-priority targets. A resize already under way towards the same targets counts
 * as done (a repeated call after an unknown outcome).
 */
export async function resizePool(
  ctx: BatchContext,
  poolId: string,
  targetDedicatedNodes: number,
  resizeTimeoutMinutes = 15,
  targetLowPriorityNodes = 0,
): Promise<void> {
  const resource = poolResource(poolId);
  try {
    await callWithRetry(ctx.retry, { operation: 'pools.resize', resource }, () =>
      ctx.client.pool.resize(poolId, {
        targetDedicatedNodes,
        targetLowPriorityNodes,
        resizeTimeout: `PT${resizeTimeoutMinutes}M`,
      }),
    );
  } catch (err) {
    if (!(err instanceof BatchError) || err.status !== 409) throw err;
    const pool = await callWithRetry(ctx.retry, { operation: 'pools.get', resource }, () => ctx.client.pool.get(poolId));
    if (pool.targetDedicatedNodes === targetDedicatedNodes && (pool.targetLowPriorityNodes ?? 0) === targetLowPriorityNodes) return;
    throw err;
  }
}

/**
 * Removes broken nodes (unusable, start task failed) so Batch can replace them after a resize.
 * Nodes already gone or leaving count as removed.
 */
export async function removeNodes(ctx: BatchContext, poolId: string, nodeIds: string[]): Promise<void> {
  if (nodeIds.length === 0) return;
  if (nodeIds.length > 100) throw new RangeError(`Batch removes at most 100 nodes per call, got ${nodeIds.length}`);
  const resource = poolResource(poolId);
  try {
    await callWithRetry(ctx.retry, { operation: 'pools.removeNodes', resource }, () =>
      ctx.client.pool.removeNodes(poolId, { nodeList: nodeIds, nodeDeallocationOption: 'requeue' }),
    );
  } catch (err) {
    if (!(err instanceof BatchError) || ![400, 404, 409].includes(err.status ?? 0)) throw err;
    const present = (await listNodes(ctx, poolId)).filter((n) => nodeIds.includes(n.id) && n.state !== 'leavingpool');
    if (present.length > 0) throw err;
  }
}

export interface DeleteResult {
  /** False when the pool was already gone or being deleted. */
  deleted: boolean;
}

export async function deletePool(ctx: BatchContext, poolId: string): Promise<DeleteResult> {
  try {
    await callWithRetry(ctx.retry, { operation: 'pools.delete', resource: poolResource(poolId) }, () => ctx.client.pool.deleteMethod(poolId));
    return { deleted: true };
  } catch (err) {
    if (isGone(err, ['PoolNotFound', 'PoolBeingDeleted'])) return { deleted: false };
    throw err;
  }
}

export interface OwnedPool {
  poolId: string;
  jobId: string;
  /** The submitter recorded in the pool's metadata (absent on pools created before owners). */
  owner?: string;
  state: string;
  creationTime?: string;
}

/** Pools this control plane created (for the sweep that removes leftovers). */
export async function listOwnedPools(ctx: BatchContext): Promise<OwnedPool[]> {
  const what = { operation: 'pools.list', resource: 'account pools' };
  const options = { poolListOptions: { select: 'id,state,creationTime,metadata' } };
  const pools = await collectPages(
    ctx.retry,
    what,
    () => ctx.client.pool.list(options),
    (link) => ctx.client.pool.listNext(link),
  );
  const owned: OwnedPool[] = [];
  for (const p of pools) {
    const jobId = ownerJobOf(p.metadata);
    if (jobId && p.id)
      owned.push(stripUndefined({ poolId: p.id, jobId, owner: submitterOf(p.metadata), state: p.state ?? 'unknown', creationTime: iso(p.creationTime) }));
  }
  return owned;
}

/**
 * A finished resize that fell short, as an error naming the pool, Batch's code and message and how
 * many nodes came (undefined while resizing or when nothing went wrong). Pure: reads a snapshot.
 */
export function poolAllocationError(snapshot: PoolSnapshot): BatchError | undefined {
  if (snapshot.allocationState !== 'steady' || snapshot.resizeErrors.length === 0) return undefined;
  const [first] = snapshot.resizeErrors;
  return new BatchError({
    code: first.code,
    operation: 'pools.allocate',
    resource: poolResource(snapshot.poolId),
    message:
      `allocated ${snapshot.currentDedicatedNodes} of ${snapshot.targetDedicatedNodes} dedicated nodes: ` +
      snapshot.resizeErrors.map((e) => `${e.code}: ${e.message}`).join('; '),
  });
}

/** The node error Batch reports when a pool mount fails on a node (the node is then unusable). */
export const MOUNT_CONFIGURATION_ERROR = 'MountConfigurationError';
/** What a user checks when a mount failed: the server must be reachable from the pool's subnet and export the path. */
export const MOUNT_FAILURE_HINT =
  " (a pool mount failed on the node: check that the file server is reachable from the pool's subnet, pool.network or the deployment's POOL_SUBNET_ID, and that it exports the path to it)";

export interface NodeFailure {
  nodeId: string;
  state: 'unusable' | 'starttaskfailed';
  /** Why, from the node's errors or its start task's exit code and failure. */
  reason: string;
}

/** Nodes that will never run tasks as they are (remove them to get replacements). Pure. */
export function failedNodes(snapshot: PoolSnapshot): NodeFailure[] {
  const out: NodeFailure[] = [];
  for (const n of snapshot.nodes) {
    if (n.state === 'unusable') {
      const why = n.errors?.map((e) => `${e.code}: ${e.message}${e.code === MOUNT_CONFIGURATION_ERROR ? MOUNT_FAILURE_HINT : ''}`).join('; ');
      out.push({ nodeId: n.id, state: 'unusable', reason: why || 'node is unusable (no error reported)' });
    } else if (n.state === 'starttaskfailed') {
      const st = n.startTask;
      const parts = [st?.exitCode !== undefined ? `start task exited with code ${st.exitCode}` : 'start task failed', st?.failure].filter(Boolean);
      out.push({ nodeId: n.id, state: 'starttaskfailed', reason: parts.join(': ') });
    }
  }
  return out;
}
