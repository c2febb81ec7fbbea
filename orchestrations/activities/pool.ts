import { appConfig, batchContext, dataAccount } from '../../shared/services';
import { createJobPool, deletePool, getPoolSnapshot, inspectPool, removeNodes, resizePool, type PoolInspection } from '../../shared/batch';
import { registerActivity } from '../runtime/activityCalls';
import { refuseIfEnded } from './jobGuard';
import type { PoolCreateRequest } from '../../shared/planning/jobPlan';
import type { PoolObservation } from '../../shared/planning/provisionPolicy';
import { readOnlyBlobUrl } from '../../shared/storage/sas';
import { userCommandLine } from '../../shared/mpi/userShell';
import { parseIsoDuration } from '../../shared/spec/duration';
import { dataAccessPolicy } from '../../shared/intake/dataAccess';
import { mountSourceAllowed, storageNfsTarget } from '../../shared/intake/workloadDataAccess';
import { MountRefused, resolveMounts } from './mounts';

/** Creates the job-owned pool; a repeated call for the same job finds its pool and succeeds. */
export async function poolCreate(input: PoolCreateRequest): Promise<{ created: boolean }> {
  await refuseIfEnded(input.jobId, `pool ${input.poolId}`);
  // The start task's files are read through SAS URLs valid for a day (or the deployment's shorter SAS cap): long
  // enough for nodes that join late (replacements), short enough not to matter if they leak.
  const expires = new Date(Date.now() + Math.min(24 * 60, appConfig().pipeline.sasMaxLifetimeMinutes) * 60_000);
  const resourceFiles = input.startTask
    ? await Promise.all(input.startTask.resourceFiles.map(async (f) => ({
        httpUrl: await readOnlyBlobUrl(dataAccount(f.account, f.container), f.container, f.blob, expires),
        filePath: f.path,
      })))
    : undefined;
  const mounts = input.mounts?.length ? await resolveMounts(input.mounts, mountDeps(input.mountSasValidForMs)) : undefined;
  const result = await createJobPool(batchContext(), {
    poolId: input.poolId,
    jobId: input.jobId,
    vmSize: input.vmSize,
    targetDedicatedNodes: input.nodes,
    image: input.customImageId ? { virtualMachineImageId: input.customImageId } : { ...input.image },
    nodeAgentSkuId: input.nodeAgentSku,
    resizeTimeoutMinutes: Math.max(5, Math.round((parseIsoDuration(input.resizeTimeout) ?? 15 * 60_000) / 60_000)),
    startTask: input.startTask ? { commandLine: userCommandLine(input.startTask.command), resourceFiles, elevated: true, waitForSuccess: true } : undefined,
    displayName: `hpc-mpi job ${input.jobId}`,
    mounts,
  });
  return { created: result.created };
}

/** What resolving mounts needs from this deployment: its mount secrets, data accounts and file-server list. */
function mountDeps(validForMs: number | undefined) {
  const config = appConfig();
  const capMs = config.pipeline.sasMaxLifetimeMinutes * 60_000;
  const lifetimeMs = Math.min(capMs, (validForMs ?? capMs) + config.pipeline.sasMarginMinutes * 60_000);
  const sources = dataAccessPolicy(config).mountSources ?? [];
  return {
    secrets: config.mountSecrets,
    dataAccount,
    checkSource: (source: string) => {
      // NFS served by a data account (host <account>.blob|file.…) is checked as that account's container.
      const onStorage = storageNfsTarget(source);
      if (onStorage && onStorage.account === onStorage.exportAccount) dataAccount(onStorage.account, onStorage.container);
      else if (!mountSourceAllowed(sources, source)) throw new MountRefused(`file server ${source} is not one jobs may mount on this deployment (DATA_MOUNT_SOURCES)`);
    },
    sasExpiresOn: new Date(Date.now() + lifetimeMs),
  };
}

export async function poolInspect(input: { poolId: string }): Promise<PoolInspection> {
  return inspectPool(batchContext(), input.poolId);
}

export async function poolObserve(input: { poolId: string }): Promise<PoolObservation> {
  const snap = await getPoolSnapshot(batchContext(), input.poolId);
  if (!snap) return { state: 'missing', allocationState: 'steady', currentDedicatedNodes: 0, targetDedicatedNodes: 0, resizeErrors: [], nodes: [] };
  return {
    state: snap.state,
    allocationState: snap.allocationState,
    currentDedicatedNodes: snap.currentDedicatedNodes,
    targetDedicatedNodes: snap.targetDedicatedNodes,
    resizeErrors: snap.resizeErrors,
    nodes: snap.nodes.map((n) => ({ id: n.id, state: n.state, ipAddress: n.ipAddress, affinityId: n.affinityId })),
  };
}

export async function poolRemoveNodes(input: { poolId: string; nodeIds: string[] }): Promise<void> {
  await removeNodes(batchContext(), input.poolId, input.nodeIds);
}

export async function poolResize(input: { poolId: string; target: number }): Promise<void> {
  await resizePool(batchContext(), input.poolId, input.target);
}

export async function poolDelete(input: { poolId: string }): Promise<{ deleted: boolean }> {
  return deletePool(batchContext(), input.poolId);
}

registerActivity('poolCreate', poolCreate);
registerActivity('poolInspect', poolInspect);
registerActivity('poolObserve', poolObserve);
registerActivity('poolRemoveNodes', poolRemoveNodes);
registerActivity('poolResize', poolResize);
registerActivity('poolDelete', poolDelete);
