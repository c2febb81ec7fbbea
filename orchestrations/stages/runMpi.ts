import { Activities, MpiResult, MpiTaskObservation } from '../contracts';
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
    run.report({ progress: { mpi: { state: obs.state, startedAt: obs.startTime } } });
    if (obs.state === 'completed' || obs.state === 'missing') break;
    yield* run.sleep('Running', run.pollDelayMs(attempt));
  }
  return (yield run.activity(Activities.mpiResultCollect, { batchJobId: req.batchJobId, taskId: req.taskId })) as MpiResult;
}
