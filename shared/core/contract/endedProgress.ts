/**
 * The live progress once a job has ended and cleanup ran: nothing may still read "running". A cancel (or a failure
 * elsewhere) stops the pipeline while its last report says the MPI task is running on every node; the pool is then
 * deleted, and without this the dashboard kept showing running nodes and `hpcjob status` "mpi running" for good.
 * Pure: the orchestrator applies it to its last report.
 */
import type { NodeProgress, PipelineStatus } from './progress';

/** Node states that already say how the node's part ended. */
const SETTLED: readonly NodeProgress[] = ['done', 'failed', 'ended', 'deleted'];
/** MPI task states that say it ended (mpiTaskObserve: completed; missing = never added or gone). */
const MPI_SETTLED = ['completed', 'missing', 'terminated'];

export interface EndedProgress {
  nodes?: Record<string, NodeProgress>;
  mpi?: NonNullable<PipelineStatus['progress']['mpi']>;
}

/**
 * Every node not yet done or failed becomes `deleted` (its pool was deleted) or `ended` (kept pool); an MPI task last
 * seen active or running becomes `terminated` (Batch terminated it with the job). Only what changes is returned.
 */
export function endedProgress(last: { nodes: Record<string, NodeProgress>; mpi?: PipelineStatus['progress']['mpi'] }, poolDeleted: boolean): EndedProgress {
  const out: EndedProgress = {};
  const open = Object.entries(last.nodes).filter(([, s]) => !SETTLED.includes(s));
  if (open.length) out.nodes = { ...last.nodes, ...Object.fromEntries(open.map(([id]) => [id, poolDeleted ? 'deleted' : 'ended'])) };
  if (last.mpi && !MPI_SETTLED.includes(last.mpi.state)) out.mpi = { ...last.mpi, state: 'terminated' };
  return out;
}
