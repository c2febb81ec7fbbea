import { appConfig, armBatchContext, batchContext, dataAccount, jobStore, poolLookup } from '../../shared/services';
import { callerOfJobRow, judgePool } from '../../shared/core/intake/poolAccess';
import { OPERATOR, QUEUE_OWNER } from '../../shared/adapters/auth';
import type { PoolAccessVerdict } from '../../shared/core/contract/activities';
import type { JobRecord } from '../../shared/adapters/state';
import {
  createJobPool,
  createJobPoolArm,
  deletePool,
  failedNodes,
  getPoolSnapshot,
  inspectPool,
  removeNodes,
  resizePool,
  type PoolInspection,
} from '../../shared/adapters/batch';
import { registerActivity } from './registration';
import { refuseIfEnded } from './jobGuard';
import type { PoolCreateRequest } from '../../shared/core/planning/jobPlan';
import type { PoolObservation } from '../../shared/core/planning/provisionPolicy';
import { readOnlyBlobUrl } from '../../shared/adapters/storage/sas';
import { jobPoolSpec, mountSasLifetimeMs, startTaskResourceFile, startTaskSasMinutes } from '../../shared/core/planning/batchRequests';
import { dataAccessPolicy } from '../../shared/core/intake/dataAccess';
import { mountSourceAllowed, storageNfsTarget } from '../../shared/core/intake/workloadDataAccess';
import { MountRefused, resolveMounts } from './mounts';

/**
 * Creates the job-owned pool; a repeated call for the same job finds its pool and succeeds. With a pool identity the
 * pool comes from the management plane and carries it: the registry and the start task's files are reached with it
 * (identityReference), so no SAS or password is in the pool. Without one, the data plane and SAS URLs, as before.
 */
export async function poolCreate(input: PoolCreateRequest): Promise<{ created: boolean }> {
  // The row says who submitted the job: the pool records it, so only that owner's jobs may reuse it if it is kept.
  const job = await refuseIfEnded(input.jobId, `pool ${input.poolId}`);
  const arm = armBatchContext();
  const identityResourceId = arm?.identity.resourceId;
  // Without an identity, the start task's files are read through SAS URLs valid for a day (or the deployment's shorter
  // SAS cap): long enough for nodes that join late (replacements), short enough not to matter if they leak. With one,
  // through their plain URLs, read by the nodes with the pool identity.
  const expires = new Date(Date.now() + startTaskSasMinutes(appConfig().pipeline.sasMaxLifetimeMinutes) * 60_000);
  const startTaskFiles = input.startTask
    ? await Promise.all(
        input.startTask.resourceFiles.map(async (f) => {
          const account = dataAccount(f.account, f.container);
          return identityResourceId
            ? startTaskResourceFile(f, account.service.getContainerClient(f.container).getBlobClient(f.blob).url, identityResourceId)
            : startTaskResourceFile(f, await readOnlyBlobUrl(account, f.container, f.blob, expires));
        }),
      )
    : undefined;
  const mounts = input.mounts?.length ? await resolveMounts(input.mounts, mountDeps(input.mountSasValidForMs)) : undefined;
  const defaultSubnetId = appConfig().poolSubnetId;
  const spec = jobPoolSpec(input, { startTaskFiles, mounts, identityResourceId, owner: job?.owner, ...(defaultSubnetId ? { defaultSubnetId } : {}) });
  const result = arm ? await createJobPoolArm(arm, spec) : await createJobPool(batchContext(), spec);
  return { created: result.created };
}

/** What resolving mounts needs from this deployment: its mount secrets, data accounts and file-server list. */
function mountDeps(validForMs: number | undefined) {
  const config = appConfig();
  const lifetimeMs = mountSasLifetimeMs(validForMs, config.pipeline);
  const sources = dataAccessPolicy(config).mountSources ?? [];
  return {
    secrets: config.mountSecrets,
    dataAccount,
    checkSource: (source: string) => {
      // NFS served by a data account (host <account>.blob|file.…) is checked as that account's container.
      const onStorage = storageNfsTarget(source);
      if (onStorage && onStorage.account === onStorage.exportAccount) dataAccount(onStorage.account, onStorage.container);
      else if (!mountSourceAllowed(sources, source))
        throw new MountRefused(`file server ${source} is not one jobs may mount on this deployment (DATA_MOUNT_SOURCES)`);
    },
    sasExpiresOn: new Date(Date.now() + lifetimeMs),
  };
}

/**
 * Reads the pool a job names; with `jobId`, judges again (as at the door, from the pool's metadata as it is now and
 * the job row's owner) whether the job may be placed on it. An admin's job keeps the right the door recorded.
 */
export async function poolInspect(input: { poolId: string; jobId?: string }): Promise<PoolInspection & { access?: PoolAccessVerdict }> {
  const pool = await inspectPool(batchContext(), input.poolId);
  if (input.jobId === undefined) return pool;
  const job = await (await jobStore()).get(input.jobId);
  return { ...pool, access: await jobPoolVerdict(job, input.jobId, input.poolId, pool) };
}

/**
 * May the job (its row) be placed on `poolId`, as the pool is now? Judged as at the door, with the row's owner; `pool`
 * is a read made just before (else the pool is read here).
 */
export async function jobPoolVerdict(job: JobRecord | undefined, jobId: string, poolId: string, pool?: PoolInspection): Promise<PoolAccessVerdict> {
  if (!job) return { allowed: false, reason: `job ${jobId} has no row: its owner is unknown` };
  const caller = callerOfJobRow(job, { queue: QUEUE_OWNER, operator: OPERATOR.id });
  const lookup = poolLookup();
  const access = await judgePool(poolId, { caller, shared: appConfig().sharedPools, lookup: pool ? { ...lookup, inspect: async () => pool } : lookup });
  return access.allowed ? { allowed: true } : { allowed: false, reason: access.reason };
}

/** A job refused a pool that is not (or no longer) its owner's: nothing of the job is placed on it. */
export class PoolNotYours extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'PoolNotYours';
  }
}

export async function poolObserve(input: { poolId: string }): Promise<PoolObservation> {
  const snap = await getPoolSnapshot(batchContext(), input.poolId);
  if (!snap) return { state: 'missing', allocationState: 'steady', currentDedicatedNodes: 0, targetDedicatedNodes: 0, resizeErrors: [], nodes: [] };
  return {
    state: snap.state,
    allocationState: snap.allocationState,
    currentDedicatedNodes: snap.currentDedicatedNodes,
    targetDedicatedNodes: snap.targetDedicatedNodes,
    ...(snap.targetLowPriorityNodes ? { targetLowPriorityNodes: snap.targetLowPriorityNodes } : {}),
    resizeErrors: snap.resizeErrors,
    // An unusable node's reason (its node errors) goes with it: the job's error and timeline say why it failed.
    nodes: snap.nodes.map((n) => {
      const error = n.state === 'unusable' ? failedNodes({ ...snap, nodes: [n] })[0]?.reason : undefined;
      return { id: n.id, state: n.state, ipAddress: n.ipAddress, affinityId: n.affinityId, ...(error ? { error } : {}) };
    }),
  };
}

export async function poolRemoveNodes(input: { poolId: string; nodeIds: string[] }): Promise<void> {
  await removeNodes(batchContext(), input.poolId, input.nodeIds);
}

/** `target` dedicated nodes and `lowPriority` Spot nodes (absent: none, as before pool.spot). */
export async function poolResize(input: { poolId: string; target: number; lowPriority?: number }): Promise<void> {
  await resizePool(batchContext(), input.poolId, input.target, 15, input.lowPriority ?? 0);
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
