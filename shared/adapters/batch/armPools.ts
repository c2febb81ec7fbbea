/**
 * Job-owned pools created through the management plane (Microsoft.Batch/batchAccounts/pools, api-version
 * 2023-11-01), so they carry the deployment's user-assigned identity: nodes then pull from the registry and read
 * start-task files with that identity (identityReference), and no password or SAS reaches them. Everything else
 * about the pool (snapshots, nodes, resize, delete) stays on the data plane, which sees these pools like any other.
 *
 * Idempotent like createJobPool: the create is a PUT with If-None-Match: * (never an update of someone's pool); a
 * 412 leads to a read, and a pool of ours for the same job counts as created.
 */
import type * as BatchManagementModels from '@azure/arm-batch';
import type { ArmBatchContext } from './armClient';
import {
  ownerJobOf,
  poolOwnershipMetadata,
  stripUndefined,
  submitterOf,
  toContainerSettings,
  toResourceFiles,
  type ContainerSettingsSpec,
  type NameValue,
  type ResourceFileSpec,
} from './common';
import { BatchError } from './errors';
import {
  adoptExistingPool,
  poolResource,
  publicIpConfiguration,
  toContainerRegistries,
  toMountConfiguration,
  type CreatePoolResult,
  type JobPoolSpec,
  type MountSpec,
} from './pools';
import { callWithRetry } from './retry';

type ArmPool = BatchManagementModels.Pool;

const env = (list: NameValue[] | undefined) => (list && list.length ? list.map((e) => ({ name: e.name, value: e.value })) : undefined);

/** Resource files have the same shape on both planes (identityReference included). */
const resourceFiles = (files: ResourceFileSpec[] | undefined): BatchManagementModels.ResourceFile[] | undefined => toResourceFiles(files);

/**
 * Mounts: the data plane's mountConfiguration (toMountConfiguration, one source) in the management model, whose only
 * difference is the CIFS user's name (`userName` there, `username` on the data plane).
 */
function mountConfiguration(mounts: MountSpec[] | undefined): BatchManagementModels.MountConfiguration[] | undefined {
  return toMountConfiguration(mounts)?.map(({ cifsMountConfiguration: cifs, ...rest }) => {
    if (!cifs) return rest;
    const { username, ...other } = cifs;
    return { ...rest, cifsMountConfiguration: { ...other, userName: username } };
  });
}

/** A task's container settings in the management model (its working directory enum is capitalised). */
function containerSettings(c: ContainerSettingsSpec | undefined): BatchManagementModels.TaskContainerSettings | undefined {
  const data = toContainerSettings(c);
  if (!c || !data) return undefined;
  // The same settings as on the data plane; only the working directory's enum is spelled in PascalCase here.
  const workingDirectory = { taskWorkingDirectory: 'TaskWorkingDirectory', containerImageDefault: 'ContainerImageDefault' } as const;
  return stripUndefined({ ...data, workingDirectory: c.workingDirectory ? workingDirectory[c.workingDirectory] : undefined });
}

/**
 * The management-plane Pool for a job-owned MPI pool with the identity `identityResourceId`: the same pool as
 * buildPoolAddParameter (inter-node communication, one task slot, spread, no image preload, ownership metadata),
 * in Resource Manager's shape. Pure; exported for tests and review.
 */
export function buildArmPool(spec: JobPoolSpec, identityResourceId: string): ArmPool {
  const image = spec.image.virtualMachineImageId
    ? { id: spec.image.virtualMachineImageId }
    : stripUndefined({ publisher: spec.image.publisher, offer: spec.image.offer, sku: spec.image.sku, version: spec.image.version ?? 'latest' });
  const st = spec.startTask;
  return stripUndefined({
    identity: { type: 'UserAssigned' as const, userAssignedIdentities: { [identityResourceId]: {} } },
    displayName: spec.displayName,
    vmSize: spec.vmSize,
    deploymentConfiguration: {
      virtualMachineConfiguration: {
        imageReference: image,
        nodeAgentSkuId: spec.nodeAgentSkuId,
        // No containerImageNames, as on the data plane: the pipeline pulls, a bounded number of nodes at a time.
        containerConfiguration: stripUndefined({
          type: 'DockerCompatible',
          containerRegistries: toContainerRegistries(spec.containerRegistries),
        }),
      },
    },
    scaleSettings: {
      fixedScale: {
        targetDedicatedNodes: spec.targetDedicatedNodes,
        targetLowPriorityNodes: spec.targetLowPriorityNodes ?? 0,
        resizeTimeout: `PT${spec.resizeTimeoutMinutes ?? 15}M`,
      },
    },
    interNodeCommunication: 'Enabled' as const,
    taskSlotsPerNode: 1,
    taskSchedulingPolicy: { nodeFillType: 'Spread' as const },
    networkConfiguration: spec.network
      ? stripUndefined({
          subnetId: spec.network.subnetId,
          publicIPAddressConfiguration: publicIpConfiguration(spec.network.publicIp, {
            none: 'NoPublicIPAddresses' as const,
            batch: 'BatchManaged' as const,
            user: 'UserManaged' as const,
          }),
          enableAcceleratedNetworking: spec.network.acceleratedNetworking,
        })
      : undefined,
    startTask: st
      ? stripUndefined({
          commandLine: st.commandLine,
          environmentSettings: env(st.environment),
          resourceFiles: resourceFiles(st.resourceFiles),
          containerSettings: containerSettings(st.containerSettings),
          userIdentity: st.elevated ? { autoUser: { scope: 'Pool' as const, elevationLevel: 'Admin' as const } } : undefined,
          waitForSuccess: st.waitForSuccess ?? true,
          maxTaskRetryCount: st.maxTaskRetryCount ?? 0,
        })
      : undefined,
    mountConfiguration: mountConfiguration(spec.mounts),
    metadata: poolOwnershipMetadata(spec.jobId, spec.owner).map((m) => ({ name: m.name, value: m.value })),
  });
}

/**
 * The JSON body of Pools_Create for `pool` as @azure/arm-batch sends it: Resource Manager's envelope (the identity
 * beside `properties`, everything else under it) and the wire names where the SDK's model differs (a container
 * registry's user is `username`). What a dry run shows; tests/unit/poolIdentity.test.ts checks it against the bytes
 * the SDK sends.
 */
export function armPoolRequestBody(pool: ArmPool): Record<string, unknown> {
  const { identity, id: _id, name: _name, type: _type, etag: _etag, ...properties } = pool;
  const registries = (list: BatchManagementModels.ContainerRegistry[] | undefined) =>
    list?.map(({ userName, ...r }) => stripUndefined({ ...r, username: userName }));
  const vmc = properties.deploymentConfiguration?.virtualMachineConfiguration;
  const wire = stripUndefined({
    ...properties,
    deploymentConfiguration: vmc
      ? {
          ...properties.deploymentConfiguration,
          virtualMachineConfiguration: stripUndefined({
            ...vmc,
            containerConfiguration: vmc.containerConfiguration
              ? stripUndefined({ ...vmc.containerConfiguration, containerRegistries: registries(vmc.containerConfiguration.containerRegistries) })
              : undefined,
          }),
        }
      : undefined,
    startTask: properties.startTask?.containerSettings?.registry
      ? {
          ...properties.startTask,
          containerSettings: { ...properties.startTask.containerSettings, registry: registries([properties.startTask.containerSettings.registry])?.[0] },
        }
      : properties.startTask,
  });
  return JSON.parse(JSON.stringify(stripUndefined({ identity, properties: wire }))) as Record<string, unknown>;
}

export interface ArmPoolInspection {
  exists: boolean;
  provisioningState?: string;
  vmSize?: string;
  ownedByJob?: string;
  /** The submitter recorded in the metadata (SUBMITTER_KEY). */
  owner?: string;
  /** The user-assigned identities the pool carries (ARM ids, as given). */
  identities?: string[];
}

/** Reads the pool through the management plane; a pool that does not exist is `{ exists: false }`. */
export async function inspectArmPool(ctx: ArmBatchContext, poolId: string): Promise<ArmPoolInspection> {
  const { resourceGroup, accountName } = ctx.identity;
  try {
    const pool = await callWithRetry(ctx.retry, { operation: 'armPools.get', resource: poolResource(poolId) }, () =>
      ctx.client.poolOperations.get(resourceGroup, accountName, poolId),
    );
    return stripUndefined({
      exists: true,
      provisioningState: pool.provisioningState,
      vmSize: pool.vmSize,
      ownedByJob: ownerJobOf(pool.metadata),
      owner: submitterOf(pool.metadata),
      identities: Object.keys(pool.identity?.userAssignedIdentities ?? {}),
    });
  } catch (err) {
    if (err instanceof BatchError && err.status === 404) return { exists: false };
    throw err;
  }
}

/**
 * Creates the pool with the deployment's identity. A pool that already exists counts as created when its metadata
 * says it is ours for this job and it carries the identity (the activity ran twice); anything else is a conflict.
 */
export async function createJobPoolArm(ctx: ArmBatchContext, spec: JobPoolSpec): Promise<CreatePoolResult> {
  const resource = poolResource(spec.poolId);
  const body = buildArmPool(spec, ctx.identity.resourceId);
  const { resourceGroup, accountName } = ctx.identity;
  try {
    // If-None-Match: * makes a repeated PUT a 412, never an update; so a retry after an unknown outcome is safe.
    await callWithRetry(ctx.retry, { operation: 'armPools.create', resource }, () =>
      ctx.client.poolOperations.create(resourceGroup, accountName, spec.poolId, body, { ifNoneMatch: '*' }),
    );
    return { poolId: spec.poolId, created: true };
  } catch (err) {
    if (!(err instanceof BatchError) || err.status !== 412) throw err;
  }
  const existing = await inspectArmPool(ctx, spec.poolId);
  const carriesIdentity = (existing.identities ?? []).some((id) => id.toLowerCase() === ctx.identity.resourceId.toLowerCase());
  return adoptExistingPool('armPools.create', spec, {
    exists: existing.exists,
    vmSize: existing.vmSize,
    ours: existing.exists && existing.ownedByJob === spec.jobId && existing.provisioningState === 'Succeeded' && carriesIdentity,
    whose: `with the pool identity (owner job: ${existing.ownedByJob ?? 'none'}, state: ${existing.provisioningState ?? 'unknown'}, identities: ${(existing.identities ?? []).length})`,
  });
}
