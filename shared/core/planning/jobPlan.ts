/**
 * Turns a validated job spec into the concrete plan the orchestrator executes: Batch ids, the pool to
 * create or reuse, provisioning limits and cleanup policy. Pure and deterministic (the orchestrator calls it
 * during replay).
 */
import type { SpotPolicy } from './spotPolicy';
import type { PoolNetwork } from '../spec/sections/network';
import { createHash } from 'node:crypto';
import type { JobSpec } from '../spec/schema';
import { parseIsoDuration } from '../spec/duration';
import { DEFAULT_IMAGE, DEFAULT_NODE_AGENT_SKU } from '../spec/schema';
import { mountRequests, type MountRequest } from './workloadData';

export const OWNER_TAG = 'hpc-mpi-control-plane';

export interface PoolCreateRequest {
  jobId: string;
  poolId: string;
  vmSize: string;
  nodes: number;
  image?: { publisher: string; offer: string; sku: string; version: string };
  customImageId?: string;
  nodeAgentSku: string;
  resizeTimeout: string;
  containerRuntime: 'docker' | 'singularity' | 'none';
  /** Ownership tags, so the sweep can find what we created and never touches anything else. */
  metadata: { name: string; value: string }[];
  /** Node preparation (install or build the program), run by Batch on every node as it joins. */
  startTask?: { command: string; resourceFiles: { account: string; container: string; blob: string; path: string }[] };
  /** File systems mounted on every node: names and references only, resolved (secrets, SAS) by the activity. */
  mounts?: MountRequest[];
  /** The job's scratch kind when the pool's start task must prepare for it (beeond: check or install BeeOND). */
  scratch?: { kind: 'beeond' };
  /**
   * How long a SAS handed to a mount (blobfuse) must at least live: allocation plus every attempt of the MPI task.
   * Undefined without a wall-clock limit (the activity then uses the deployment's cap).
   */
  mountSasValidForMs?: number;
  /** Spot nodes of `nodes` (pool.spot.nodes): the pool's targetLowPriorityNodes; the rest are dedicated. */
  spotNodes?: number;
  /** The job's private registry: with identity "managed" the pool lists it with the pool identity (containerRegistries). */
  registry?: { server: string; identity: 'managed' | 'secret' };
  /** pool.network as the spec gives it; the deployment's default subnet is filled in by jobPoolSpec. */
  network?: PoolNetwork;
}

export interface JobPlan {
  jobId: string;
  poolId: string;
  reusePool: boolean;
  batchJobId: string;
  mpiTaskId: string;
  nodes: number;
  minNodes: number;
  resizeTimeoutMs: number;
  /** pool.spot as the orchestrator applies it (undefined: dedicated nodes only). */
  spot?: SpotPolicy;
  poolCreate: PoolCreateRequest;
  deletePool: 'always' | 'onSuccess' | 'never';
  keepStagedData: boolean;
  /** Task-level limit for the MPI run (seconds), from limits.maxWallClock. */
  mpiMaxWallClockSeconds?: number;
  /** The pipeline gives up waiting after this long from its start (allocation + run + margin). */
  pipelineBudgetMs: number;
}

/** The multi-instance MPI task's id inside the job's Batch job. */
export const MPI_TASK_ID = 'mpi';

/** Batch ids are at most 64 characters; long job ids keep a readable head and a hash for uniqueness. */
export function batchIdFor(prefix: string, jobId: string): string {
  const id = `${prefix}-${jobId}`;
  if (id.length <= 64) return id;
  const hash = createHash('sha256').update(jobId).digest('hex').slice(0, 10);
  return `${id.slice(0, 64 - hash.length - 1)}-${hash}`;
}

export function planJob(jobId: string, spec: JobSpec): JobPlan {
  const reusePool = !!spec.pool.poolId;
  const poolId = spec.pool.poolId ?? batchIdFor('hpc', jobId);
  const nodes = spec.pool.nodes;
  const minNodes = spec.pool.partialAllocation.policy === 'continue' ? Math.min(nodes, spec.pool.partialAllocation.minNodes) : nodes;
  const resizeTimeoutMs = parseIsoDuration(spec.pool.resizeTimeout) ?? 15 * 60_000;
  const wallClockMs = spec.limits.maxWallClock ? parseIsoDuration(spec.limits.maxWallClock) : undefined;
  return {
    jobId,
    poolId,
    reusePool,
    batchJobId: batchIdFor('hpc', jobId),
    mpiTaskId: MPI_TASK_ID,
    nodes,
    minNodes,
    resizeTimeoutMs,
    ...(spec.pool.spot && !reusePool ? { spot: { ...spec.pool.spot, nodes: Math.min(nodes, spec.pool.spot.nodes) } } : {}),
    poolCreate: {
      jobId,
      poolId,
      vmSize: spec.pool.vmSize ?? 'Standard_HB120rs_v3',
      nodes,
      ...(spec.pool.spot && !reusePool ? { spotNodes: Math.min(nodes, spec.pool.spot.nodes) } : {}),
      image: spec.pool.customImageId ? undefined : { ...DEFAULT_IMAGE, ...(spec.pool.image ?? {}) },
      customImageId: spec.pool.customImageId,
      nodeAgentSku: spec.pool.nodeAgentSku ?? DEFAULT_NODE_AGENT_SKU,
      resizeTimeout: spec.pool.resizeTimeout,
      containerRuntime: spec.container.runtime,
      metadata: [
        { name: 'hpc-cp-owner', value: OWNER_TAG },
        { name: 'hpc-cp-job', value: jobId },
      ],
      startTask: spec.pool.startTask,
      ...(spec.pool.network ? { network: spec.pool.network } : {}),
      ...(spec.scratch?.kind === 'beeond' ? { scratch: { kind: 'beeond' as const } } : {}),
      ...(mountRequests(spec).length
        ? {
            mounts: mountRequests(spec),
            mountSasValidForMs: wallClockMs === undefined ? undefined : resizeTimeoutMs + wallClockMs * (1 + spec.limits.maxRetries),
          }
        : {}),
      ...(spec.container.registry && spec.container.runtime !== 'none'
        ? {
            registry: {
              server: spec.container.registry.server,
              identity: spec.container.registry.identity === 'managed' ? ('managed' as const) : ('secret' as const),
            },
          }
        : {}),
    },
    deletePool: reusePool ? 'never' : spec.cleanup.deletePool,
    keepStagedData: spec.cleanup.keepStagedData !== false,
    mpiMaxWallClockSeconds: wallClockMs ? Math.ceil(wallClockMs / 1000) : undefined,
    // Generous on purpose: each stage has its own limits; this only stops a pipeline that is stuck for good.
    pipelineBudgetMs: resizeTimeoutMs + (wallClockMs ?? 7 * 24 * 3_600_000) + 6 * 3_600_000,
  };
}

/** One staging container per job and account, so cleanup is one delete per account. Blob container rules: 3–63 chars, no "--". */
export function stagingContainerFor(jobId: string): string {
  const hash = createHash('sha256').update(jobId).digest('hex').slice(0, 8);
  const readable = jobId.replace(/-+/g, '-').replace(/^-|-$/g, '');
  return `stg-${hash}-${readable}`.slice(0, 63).replace(/-+$/, '');
}
