import type { MpiResult, NodeProgress } from '../../shared/contract';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';
import type { MpiTaskRequestShape } from '../../shared/planning/mpiTaskRequest';

/**
 * The MPI run: one multi-instance task (coordination command on every node, application command on the
 * master), then the job is switched to terminate itself when its tasks are done (Batch's recommended
 * order: add the tasks first, then set onAllTasksComplete), then wait and collect exit codes and logs.
 */
export function* runMpi(run: PipelineRun, req: MpiTaskRequestShape, opts: { autoComplete: boolean } = { autoComplete: true }): Orchestration<MpiResult> {
  yield* run.call('mpiTaskAdd', req);
  // Not when tasks follow the MPI task (the node uploads): the job would end as soon as the MPI task does.
  if (opts.autoComplete) yield* run.call('batchJobAutoComplete', { batchJobId: req.batchJobId });
  run.report({ progress: { mpi: { state: 'active' } } });

  for (let attempt = 0; ; attempt++) {
    const obs = yield* run.call('mpiTaskObserve', { batchJobId: req.batchJobId, taskId: req.taskId });
    run.report({ progress: { mpi: { state: obs.state, startedAt: obs.startTime } }, ...(obs.state === 'running' ? { nodes: nodesIn(run, 'running') } : {}) });
    if (obs.state === 'completed' || obs.state === 'missing') break;
    yield* run.sleep('Running', run.runningPollDelayMs(attempt));
  }
  const result = yield* run.call('mpiResultCollect', { batchJobId: req.batchJobId, taskId: req.taskId });
  run.report({ nodes: nodeOutcomes(run, result) });
  return result;
}

/** Every node of the job in one state (the MPI task spans all of them). */
function nodesIn(run: PipelineRun, state: NodeProgress): Record<string, NodeProgress> {
  return Object.fromEntries(Object.keys(run.nodeStates()).map((id) => [id, state]));
}

/** Per node: done or failed, from its subtask's exit code (the master's is the task's). */
function nodeOutcomes(run: PipelineRun, result: MpiResult): Record<string, NodeProgress> {
  const nodes = run.nodeStates();
  for (const s of result.subtasks) if (s.nodeId) nodes[s.nodeId] = s.exitCode === 0 ? 'done' : 'failed';
  const master = result.logs[0]?.node;
  if (master && master in nodes) nodes[master] = result.exitCode === 0 ? 'done' : 'failed';
  return nodes;
}
