import type { MpiResult, NodeProgress } from '../../shared/core/contract';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';
import type { MpiTaskRequest } from '../../shared/core/contract/batchTasks';
import { lostNodes } from '../../shared/core/planning/failureClass';
import type { MpiTaskObservation } from '../../shared/core/contract';
import type { BudgetLimits, PriceQuote } from '../../shared/core/ops/cost';
import { startMpiWait, type MpiWaitResult } from './mpiWait';

export interface MpiRunOptions {
  /**
   * Switch the Batch job to terminate itself once its tasks are done. Only the last attempt may: an attempt that can
   * still be retried must leave the job open for the next attempt's tasks (cleanup terminates it otherwise).
   */
  autoComplete: boolean;
  poolId: string;
  /** The attempt's nodes: one of them lost while Batch holds the task requeued ends the attempt. */
  nodes: readonly string[];
  /**
   * Wait in the mpiWait sub-orchestration, which continues as new every `pollsPerGeneration` polls (bounded history).
   * Absent in runs started before it: they replay the inline wait they started with.
   */
  waitInChild?: { pollsPerGeneration: number; budget?: { limits: BudgetLimits; price: PriceQuote } };
}

export interface MpiRun {
  mpi: MpiResult;
  /** Batch requeued the task and a node it needs is gone or unusable: the task was ended (a node failure). */
  requeued: boolean;
}

/**
 * The MPI run: one multi-instance task (coordination command on every node, application command on the
 * master), then the job is switched to terminate itself when its tasks are done (Batch's recommended
 * order: add the tasks first, then set onAllTasksComplete), then wait and collect exit codes and logs.
 * When a node goes away Batch requeues the task: if the node comes back (a reboot) Batch runs the task again and we
 * keep waiting; if it is unusable or gone the task would wait for a node forever (or start on nodes without the
 * images and shards), so it is ended and the attempt fails as a node failure.
 */
export function* runMpi(run: PipelineRun, req: MpiTaskRequest, opts: MpiRunOptions): Orchestration<MpiRun> {
  yield* run.call('mpiTaskAdd', req);
  // Not when tasks follow the MPI task (the node uploads): the job would end as soon as the MPI task does.
  if (opts.autoComplete) yield* run.call('batchJobAutoComplete', { batchJobId: req.batchJobId });
  run.report({ progress: { mpi: { state: 'active' } } });

  const ref = { batchJobId: req.batchJobId, taskId: req.taskId };
  let requeues = 0;
  let requeued = false;
  let obs = yield* run.call('mpiTaskObserve', ref);
  for (let attempt = 0; ;) {
    run.report({
      progress: { mpi: { state: obs.state, startedAt: obs.startTime } },
      ...(obs.state === 'running' ? { nodes: nodesIn(run, opts.nodes, 'running') } : {}),
    });
    if (obs.state === 'completed' || obs.state === 'missing') break;
    if ((obs.requeueCount ?? 0) > requeues) {
      requeues = obs.requeueCount ?? 0;
      const pool = yield* run.call('poolObserve', { poolId: opts.poolId });
      const lost = lostNodes(opts.nodes, pool.nodes);
      if (lost.length) {
        run.report({ lastError: `Batch requeued the MPI task: ${lost.map((n) => `${n.id} ${n.state}`).join(', ')}` });
        yield* run.call('mpiTaskTerminate', ref);
        requeued = true;
        break;
      }
      run.report({ lastError: `Batch requeued the MPI task (${requeues}×); its nodes are coming back, it runs again` });
    }
    if (opts.waitInChild && !run.hasBackground()) {
      ({ obs, polls: attempt } = yield* waitInChild(run, req, obs, attempt, opts.waitInChild));
    } else {
      yield* run.sleep('Running', run.runningPollDelayMs(attempt));
      obs = yield* run.call('mpiTaskObserve', ref);
      attempt++;
    }
  }
  const result = yield* run.call('mpiResultCollect', ref);
  run.report({ nodes: nodeOutcomes(run, result) });
  return { mpi: result, requeued };
}

/**
 * One wait in the mpiWait sub-orchestration, until Batch's answer changes: the parent's history gains a constant few
 * rows per change, however many polls the wait makes. The wall-clock limit and the budget are checked here as at every
 * wait (the child stops early when they would stop the job, and this check throws).
 */
function* waitInChild(
  run: PipelineRun,
  req: MpiTaskRequest,
  seen: MpiTaskObservation,
  polls: number,
  opts: NonNullable<MpiRunOptions['waitInChild']>,
): Orchestration<{ obs: MpiTaskObservation; polls: number }> {
  run.checkpoint('Running');
  const budget = opts.budget && { ...opts.budget, usage: { ...run.usage } };
  const deadline = run.deadlineOf();
  const batchAccount = run.placedOn();
  const task = startMpiWait(run.ctx, {
    jobId: run.jobId,
    ref: { batchJobId: req.batchJobId, taskId: req.taskId },
    poll: run.pollSettings(),
    seen,
    polls,
    pollsPerGeneration: opts.pollsPerGeneration,
    generation: 0,
    ...(deadline ? { deadline } : {}),
    ...(budget ? { budget } : {}),
    ...(batchAccount ? { batchAccount } : {}),
  });
  const ended = (yield* run.race(task)) as MpiWaitResult;
  if (ended.ended === 'checkpoint') run.checkpoint('Running');
  return { obs: ended.obs, polls: ended.polls };
}

/** The attempt's nodes in one state (the MPI task spans all of them); nodes replaced earlier keep theirs. */
function nodesIn(run: PipelineRun, nodes: readonly string[], state: NodeProgress): Record<string, NodeProgress> {
  return { ...run.nodeStates(), ...Object.fromEntries(nodes.map((id) => [id, state])) };
}

/** Per node: done or failed, from its subtask's exit code (the master's is the task's). */
function nodeOutcomes(run: PipelineRun, result: MpiResult): Record<string, NodeProgress> {
  const nodes = run.nodeStates();
  for (const s of result.subtasks) if (s.nodeId) nodes[s.nodeId] = s.exitCode === 0 ? 'done' : 'failed';
  const master = result.logs[0]?.node;
  if (master && master in nodes) nodes[master] = result.exitCode === 0 ? 'done' : 'failed';
  return nodes;
}
