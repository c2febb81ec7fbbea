/** Defaults that depend on other fields, applied after the schema's own defaults. */
import { z } from 'zod';
import { DEFAULT_IMAGE, DEFAULT_NODE_AGENT_SKU, JobSpec, JobSpecSchema } from './schema';

export function normalizeSpec(parsed: z.output<typeof JobSpecSchema>): JobSpec {
  const pool = { ...parsed.pool };
  const reuse = pool.poolId !== undefined;
  if (!reuse && pool.image === undefined && pool.customImageId === undefined) {
    pool.image = { ...DEFAULT_IMAGE };
    pool.nodeAgentSku = DEFAULT_NODE_AGENT_SKU;
  }
  return {
    ...parsed,
    pool,
    mpi: { ...parsed.mpi, sshPort: parsed.mpi.sshPort ?? (parsed.container.runtime === 'docker' ? 23 : 22) },
    cleanup: { ...parsed.cleanup, deletePool: parsed.cleanup.deletePool ?? (reuse ? 'never' : 'always') },
  };
}

/** True when the job runs on an existing pool (pool.poolId) rather than one it creates and owns. */
export function isPoolReuse(spec: JobSpec): boolean {
  return spec.pool.poolId !== undefined;
}

/** Where shards land on a node: data.destination, or a per-job folder under the node's shared directory. */
export function resolveDestination(spec: JobSpec, jobId: string, nodeSharedDir: string): string {
  return spec.data.destination ?? `${nodeSharedDir.replace(/\/+$/, '')}/jobdata/${jobId}`;
}
