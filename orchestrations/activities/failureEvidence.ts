import type { StartTaskFailure } from '../../shared/core/contract';
import { batchContext } from '../../shared/services';
import { listNodes, readNodeFile, type BatchContext } from '../../shared/adapters/batch';
import { registerActivity } from './registration';

/** Enough of a start task's stderr for its last lines (the job's error keeps 20, the timeline 5). */
const STDERR_BYTES = 4 * 1024;

/**
 * The start task's exit code, Batch's failure and the end of its stderr on each of these nodes, read through Batch's
 * node file API (startup/stderr.txt) before the nodes are removed or the pool deleted: afterwards nobody can. A node
 * gone or a file not there gives what could be read (a failed read is never the job's failure).
 */
export async function readStartTaskFailures(ctx: BatchContext, input: { poolId: string; nodeIds: string[] }): Promise<StartTaskFailure[]> {
  const nodes = await listNodes(ctx, input.poolId).catch(() => []);
  return Promise.all(
    input.nodeIds.map(async (nodeId) => {
      const st = nodes.find((n) => n.id === nodeId)?.startTask;
      const stderr = await readNodeFile(ctx, input.poolId, nodeId, 'startup/stderr.txt', { maxBytes: STDERR_BYTES }).catch(() => undefined);
      return {
        nodeId,
        ...(st?.exitCode !== undefined ? { exitCode: st.exitCode } : {}),
        ...(st?.failure ? { failure: st.failure } : {}),
        ...(stderr?.content ? { stderr: stderr.content } : {}),
      };
    }),
  );
}

export function startTaskFailures(input: { poolId: string; nodeIds: string[] }): Promise<StartTaskFailure[]> {
  return readStartTaskFailures(batchContext(), input);
}

registerActivity('startTaskFailures', startTaskFailures);
