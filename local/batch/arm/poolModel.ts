/**
 * The management plane's Pool (api-version 2023-11-01) and the data plane's pool, which the emulator keeps: a
 * Pools_Create body becomes a PoolAddParameter (so both planes share one pool, one set of checks and one engine),
 * and a pool record is shown back in the management shape. The management model differs in names and case
 * (deploymentConfiguration, scaleSettings.fixedScale, interNodeCommunication "Enabled", nodeAgentSkuId, "Pool"/"Admin"
 * auto-users, certificates/applicationPackages) — translated here, nothing dropped: a property with no data-plane
 * counterpart is refused.
 */
import { isDedicatedNode } from '../model/quota';
import type { Json, PoolRecord } from '../model/types';
import { ArmHttpError, armErrors } from './errors';

const lower = (v: unknown) => (typeof v === 'string' ? v.toLowerCase() : v);
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const defined = (o: Json): Json => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

function userIdentity(u: unknown): Json | undefined {
  if (!u) return undefined;
  const ui = obj(u);
  const auto = ui.autoUser ? defined({ scope: lower(obj(ui.autoUser).scope), elevationLevel: lower(obj(ui.autoUser).elevationLevel) }) : undefined;
  return defined({ userName: ui.userName, autoUser: auto });
}

/** A registry: the management plane names the user `username`, the data plane `userName`. */
function registry(r: unknown): Json {
  const { username, ...rest } = obj(r);
  return defined({ ...rest, userName: username });
}

function containerSettings(c: unknown): Json | undefined {
  if (!c) return undefined;
  const cs = obj(c);
  return defined({
    ...cs,
    registry: cs.registry ? registry(cs.registry) : undefined,
    workingDirectory: typeof cs.workingDirectory === 'string' ? cs.workingDirectory.charAt(0).toLowerCase() + cs.workingDirectory.slice(1) : undefined,
  });
}

/** Mounts: the management plane's CIFS user is `userName`, the data plane's `username`; the rest is the same shape. */
function mountConfiguration(m: unknown): Json[] | undefined {
  if (!Array.isArray(m)) return m as undefined;
  return m.map((entry) => {
    const e = obj(entry);
    if (!e.cifsMountConfiguration) return e;
    const { userName, ...cifs } = obj(e.cifsMountConfiguration);
    return { ...e, cifsMountConfiguration: defined({ ...cifs, username: userName }) };
  });
}

/** A Pools_Create body's properties as the data plane's PoolAddParameter for pool `poolId`. */
export function armPoolToPoolAdd(poolId: string, properties: Json): Json {
  const p = properties;
  const deployment = obj(p.deploymentConfiguration);
  if (deployment.cloudServiceConfiguration)
    throw armErrors.invalidContent(
      'Cloud Services Configuration pools were retired on 29 February 2024; use virtualMachineConfiguration.',
      'properties.deploymentConfiguration.cloudServiceConfiguration',
    );
  const vmc = obj(deployment.virtualMachineConfiguration);
  if (!deployment.virtualMachineConfiguration)
    throw armErrors.invalidContent('The pool needs properties.deploymentConfiguration.virtualMachineConfiguration.', 'properties.deploymentConfiguration');
  const image = obj(vmc.imageReference);
  const containers = vmc.containerConfiguration ? obj(vmc.containerConfiguration) : undefined;
  const scale = obj(p.scaleSettings);
  if (scale.autoScale)
    throw new ArmHttpError(
      501,
      'NotImplemented',
      'The local Batch emulator does not implement autoscale formulas (give properties.scaleSettings.fixedScale).',
      {},
      'properties.scaleSettings.autoScale',
    );
  const fixed = obj(scale.fixedScale);
  const st = p.startTask ? obj(p.startTask) : undefined;
  return defined({
    id: poolId,
    displayName: p.displayName,
    vmSize: p.vmSize,
    virtualMachineConfiguration: defined({
      imageReference: image.id
        ? { virtualMachineImageId: image.id }
        : defined({ publisher: image.publisher, offer: image.offer, sku: image.sku, version: image.version }),
      nodeAgentSKUId: vmc.nodeAgentSkuId,
      containerConfiguration: containers
        ? defined({
            type: lower(containers.type) === 'dockercompatible' ? 'dockerCompatible' : containers.type,
            containerImageNames: containers.containerImageNames,
            containerRegistries: Array.isArray(containers.containerRegistries) ? containers.containerRegistries.map(registry) : containers.containerRegistries,
          })
        : undefined,
      dataDisks: vmc.dataDisks,
      extensions: vmc.extensions,
      licenseType: vmc.licenseType,
      nodePlacementConfiguration: vmc.nodePlacementConfiguration,
      diskEncryptionConfiguration: vmc.diskEncryptionConfiguration,
      osDisk: vmc.osDisk,
      windowsConfiguration: vmc.windowsConfiguration,
    }),
    // "If this property is not specified, the pool will have a fixed scale with 0 targetDedicatedNodes."
    targetDedicatedNodes: fixed.targetDedicatedNodes ?? 0,
    targetLowPriorityNodes: fixed.targetLowPriorityNodes ?? 0,
    resizeTimeout: fixed.resizeTimeout,
    enableAutoScale: false,
    enableInterNodeCommunication: lower(p.interNodeCommunication) === 'enabled',
    networkConfiguration: p.networkConfiguration,
    taskSlotsPerNode: p.taskSlotsPerNode,
    taskSchedulingPolicy: p.taskSchedulingPolicy ? { nodeFillType: lower(obj(p.taskSchedulingPolicy).nodeFillType) } : undefined,
    userAccounts: p.userAccounts,
    metadata: p.metadata,
    startTask: st
      ? defined({
          commandLine: st.commandLine,
          resourceFiles: st.resourceFiles,
          environmentSettings: st.environmentSettings,
          userIdentity: userIdentity(st.userIdentity),
          maxTaskRetryCount: st.maxTaskRetryCount,
          waitForSuccess: st.waitForSuccess,
          containerSettings: containerSettings(st.containerSettings),
        })
      : undefined,
    certificateReferences: p.certificates,
    applicationPackageReferences: p.applicationPackages,
    applicationLicenses: p.applicationLicenses,
    mountConfiguration: mountConfiguration(p.mountConfiguration),
    targetNodeCommunicationMode: p.targetNodeCommunicationMode ? lower(p.targetNodeCommunicationMode) : undefined,
  });
}

const cap = (v: unknown) => (typeof v === 'string' && v ? v.charAt(0).toUpperCase() + v.slice(1) : v);

/** Where a pool lives in Resource Manager. */
export interface ArmScope {
  subscriptionId: string;
  resourceGroup: string;
  accountName: string;
}

export function armPoolId(scope: ArmScope, poolId: string): string {
  return `/subscriptions/${scope.subscriptionId}/resourceGroups/${scope.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${scope.accountName}/pools/${poolId}`;
}

/** The pool's version as Resource Manager's ETag header carries it (the model has no etag property in 2023-11-01). */
export function armETag(p: PoolRecord): string {
  return `W/"${p.eTag}"`;
}

/** A pool record in the management plane's shape (what Pools_Get and Pools_ListByBatchAccount return). */
export function armPoolView(scope: ArmScope, p: PoolRecord): Json {
  const s = p.spec;
  const vmc = obj(s.virtualMachineConfiguration);
  const image = obj(vmc.imageReference);
  const containers = vmc.containerConfiguration ? obj(vmc.containerConfiguration) : undefined;
  const st = p.startTask;
  const allocation = { steady: 'Steady', resizing: 'Resizing', stopping: 'Stopping' }[p.allocationState];
  const properties = defined({
    displayName: s.displayName,
    lastModified: p.lastModified.toISOString(),
    creationTime: p.creationTime.toISOString(),
    provisioningState: p.state === 'deleting' ? 'Deleting' : 'Succeeded',
    provisioningStateTransitionTime: p.stateTransitionTime.toISOString(),
    allocationState: allocation,
    allocationStateTransitionTime: p.allocationStateTransitionTime.toISOString(),
    vmSize: s.vmSize,
    deploymentConfiguration: {
      virtualMachineConfiguration: defined({
        imageReference: image.virtualMachineImageId
          ? { id: image.virtualMachineImageId }
          : defined({ publisher: image.publisher, offer: image.offer, sku: image.sku, version: image.version }),
        nodeAgentSkuId: vmc.nodeAgentSKUId,
        containerConfiguration: containers
          ? defined({
              type: containers.type === 'dockerCompatible' ? 'DockerCompatible' : containers.type,
              containerImageNames: containers.containerImageNames,
              // Passwords are never shown back.
              containerRegistries: Array.isArray(containers.containerRegistries)
                ? (containers.containerRegistries as Json[]).map(({ userName, ...r }) => defined({ ...r, username: userName, password: undefined }))
                : undefined,
            })
          : undefined,
      }),
    },
    currentDedicatedNodes: [...p.nodes.values()].filter((n) => !n.removed && isDedicatedNode(n)).length,
    currentLowPriorityNodes: [...p.nodes.values()].filter((n) => !n.removed && !isDedicatedNode(n)).length,
    scaleSettings: {
      fixedScale: defined({ targetDedicatedNodes: p.targetDedicatedNodes, targetLowPriorityNodes: p.targetLowPriorityNodes, resizeTimeout: p.resizeTimeout }),
    },
    interNodeCommunication: s.enableInterNodeCommunication === true ? 'Enabled' : 'Disabled',
    networkConfiguration: s.networkConfiguration,
    taskSlotsPerNode: s.taskSlotsPerNode ?? 1,
    taskSchedulingPolicy: { nodeFillType: cap(obj(s.taskSchedulingPolicy).nodeFillType ?? 'spread') },
    metadata: p.metadata.length ? p.metadata : undefined,
    startTask: st
      ? defined({
          commandLine: st.commandLine,
          resourceFiles: st.resourceFiles,
          environmentSettings: st.environmentSettings,
          userIdentity: st.userIdentity
            ? defined({
                userName: obj(st.userIdentity).userName,
                autoUser: obj(st.userIdentity).autoUser
                  ? defined({ scope: cap(obj(obj(st.userIdentity).autoUser).scope), elevationLevel: cap(obj(obj(st.userIdentity).autoUser).elevationLevel) })
                  : undefined,
              })
            : undefined,
          maxTaskRetryCount: st.maxTaskRetryCount,
          waitForSuccess: st.waitForSuccess,
        })
      : undefined,
    resizeOperationStatus:
      p.resizeErrors.length && p.allocationState === 'steady'
        ? { targetDedicatedNodes: p.targetDedicatedNodes, errors: p.resizeErrors.map((e) => defined({ code: e.code, message: e.message })) }
        : undefined,
  });
  return defined({
    id: armPoolId(scope, p.id),
    name: p.id,
    type: 'Microsoft.Batch/batchAccounts/pools',
    identity: p.identity
      ? {
          type: 'UserAssigned',
          userAssignedIdentities: Object.fromEntries(
            p.identity.userAssignedIdentities.map((i) => [i.resourceId, { principalId: i.principalId, clientId: i.clientId }]),
          ),
        }
      : undefined,
    properties,
  });
}
