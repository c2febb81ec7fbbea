import type { ActivityInput, NodeTaskObservation, NodeTaskRequest } from '../../shared/core/contract';
import { batchContext, registrySecret } from '../../shared/services';
import { addTaskCollection, buildNodeTaskParameter, getTasks, readTaskFile, type BatchContext } from '../../shared/adapters/batch';
import { registerActivity } from './registration';
import { nodeTaskSpec } from '../../shared/core/planning/batchRequests';
import { parseDigestLines } from '../../shared/core/mpi/imageTransfer';

/**
 * Adds pinned per-node tasks in task collections (one request per 100 tasks, not one per node:
 * shared/adapters/batch/taskCollection.ts); a task that already exists (a retried activity) counts as added, not added twice.
 */
export async function addNodeTasks(ctx: BatchContext, input: { batchJobId: string; tasks: NodeTaskRequest[] }): Promise<void> {
  // Registry secrets are read here, at the last moment: the orchestration (whose history is stored) names settings only.
  const params = input.tasks.map((t) => buildNodeTaskParameter(nodeTaskSpec(t, (s) => registrySecret(s.server, s.setting))));
  await addTaskCollection(ctx, input.batchJobId, params, 'tasks.addNodeTasks');
}

export function nodeTasksAdd(input: { batchJobId: string; tasks: NodeTaskRequest[] }): Promise<void> {
  return addNodeTasks(batchContext(), input);
}

/**
 * State of each task, where it really ran, and for failures the end of its output (the registry's message). A
 * task that does not exist is reported `missing` (the window counts it as a failed attempt).
 */
export async function observeNodeTasks(ctx: BatchContext, input: ActivityInput<'nodeTasksObserve'>): Promise<NodeTaskObservation[]> {
  const states = await getTasks(ctx, input.batchJobId, input.taskIds);
  return Promise.all(
    input.taskIds.map(async (id): Promise<NodeTaskObservation> => {
      const t = states.get(id) ?? { taskId: id, state: 'missing' as const };
      const obs: NodeTaskObservation = { id, state: t.state, exitCode: t.exitCode, nodeId: t.nodeId };
      if (t.failure) obs.failure = `${t.failure.code}: ${t.failure.message}`;
      if (t.state === 'completed' && t.exitCode !== 0) {
        const err = await readTaskFile(ctx, input.batchJobId, id, 'stderr.txt', { maxBytes: 2048 }).catch(() => undefined);
        if (err?.content.trim()) obs.outputTail = err.content.trim().split('\n').slice(-5).join('\n');
      }
      if (input.digests && t.state === 'completed' && t.exitCode === 0 && (!input.digestsOf || input.digestsOf.includes(id))) {
        const out = await readTaskFile(ctx, input.batchJobId, id, 'stdout.txt', { maxBytes: 4096 }).catch(() => undefined);
        const digests = out ? parseDigestLines(out.content, input.digests) : undefined;
        if (digests) obs.digests = digests;
      }
      return obs;
    }),
  );
}

export function nodeTasksObserve(input: ActivityInput<'nodeTasksObserve'>): Promise<NodeTaskObservation[]> {
  return observeNodeTasks(batchContext(), input);
}

registerActivity('nodeTasksAdd', nodeTasksAdd);
registerActivity('nodeTasksObserve', nodeTasksObserve);
