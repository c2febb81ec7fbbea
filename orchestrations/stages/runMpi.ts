import { Activities, MpiResult, MpiTaskObservation, NodeProgress } from '../contracts';
import { Orchestration, PipelineRun } from '../pipeline/run';
import type { MpiTaskRequestShape } from '../../shared/pipeline/mpiTaskRequest';

/**
 * The MPI run: one multi-instance task (coordination command on every node, application command on the
 * master), then the job is switched to terminate itself when its tasks are done (Batch's recommended
 * order: add the tasks first, then set onAllTasksComplete), then wait and collect exit codes and logs.
 */
export function* runMpi(run: PipelineRun, req: MpiTaskRequestShape): Orchestration<MpiResult> {
  yield run.activity(Activities.mpiTaskAdd, req);
  yield run.activity(Activities.batchJobAutoComplete, { batchJobId: req.batchJobId });
  run.report({ progress: { mpi: { state: 'active' } } });

  for (let attempt = 0; ; attempt++) {
    const obs = (yield run.activity(Activities.mpiTaskObserve, { batchJobId: req.batchJobId, taskId: req.taskId })) as MpiTaskObservation;
    run.report({ progress: { mpi: { state: obs.state, startedAt: obs.startTime } }, ...(obs.state === 'running' ? { nodes: nodesIn(run, 'running') } : {}) });
    if (obs.state === 'completed' || obs.state === 'missing') break;
    yield* run.sleep('Running', run.runningPollDelayMs(attempt));
  }
  const result = (yield run.activity(Activities.mpiResultCollect, { batchJobId: req.batchJobId, taskId: req.taskId })) as MpiResult;
  run.report({ nodes: nodeOutcomes(run, result) });
  return result;
}

/** Every node of the job in one state (the MPI task spans all of them). */
function nodesIn(run: PipelineRun, state: NodeProgress): Record<string, NodeProgress> {
  return Object.fromEntries(Object.keys(run.snapshot().nodes ?? {}).map((id) => [id, state]));
}

/** Per node: done or failed, from its subtask's exit code (the master's is the task's). */
function nodeOutcomes(run: PipelineRun, result: MpiResult): Record<string, NodeProgress> {
  const nodes = { ...(run.snapshot().nodes ?? {}) };
  for (const s of result.subtasks) if (s.nodeId) nodes[s.nodeId] = s.exitCode === 0 ? 'done' : 'failed';
  const master = result.logs[0]?.node;
  if (master && master in nodes) nodes[master] = result.exitCode === 0 ? 'done' : 'failed';
  return nodes;
}
