import type { Counter, NodeProgress, NodeRef, NodeTaskObservation, NodeTaskRequest } from '../../shared/contract';
import type { JobState } from '../../shared/state/states';
import { Orchestration, PipelineRun, StageFailed } from './pipelineRun';
import { initPullPlan, isDone, nextPulls, nodesNotPulled, onPullResult, progress, PullPlanState, PullWork } from '../../shared/planning/pullWindow';
import { deterministicRand01 } from '../../shared/planning/hash';
import { nodeTaskId } from '../../shared/planning/batchRequests';

export interface NodeTaskWindowRequest {
  stage: JobState;
  batchJobId: string;
  nodes: NodeRef[];
  /** What every node must end up holding (image references, or a label such as "shards"). */
  items: string[];
  concurrency: number;
  maxAttempts: number;
  /** Short task-id prefix, e.g. "pull" or "dl". */
  taskPrefix: string;
  /** The Batch task for one node (already pinned by its affinity id). */
  taskFor(node: NodeRef, nodeIndex: number, work: PullWork): Omit<NodeTaskRequest, 'id' | 'affinityId'>;
  /** Custom-status keys this window reports under. */
  progressKey: 'imagesPulled' | 'shardsDownloaded';
  inFlightState: NodeProgress;
  doneState: NodeProgress;
}

/**
 * Runs one pinned task per node, at most `concurrency` at a time, until every node is covered: the seeds'
 * rule that at most 10 nodes pull from a registry at once. Batch affinity is only a hint, so the node a task
 * really ran on is what counts (the planner re-issues the intended node). Throttling is retried with
 * deterministic jittered backoff; a permanent failure fails the stage naming the node and the message.
 */
export function* nodeTaskWindow(run: PipelineRun, req: NodeTaskWindowRequest): Orchestration<void> {
  const byId = new Map(req.nodes.map((n, i) => [n.id, { node: n, index: i }]));
  let plan: PullPlanState = initPullPlan({
    nodes: req.nodes.map((n) => n.id),
    images: req.items,
    concurrency: req.concurrency,
    maxAttempts: req.maxAttempts,
    backoff: { baseMs: 2 * run.pollDelayMs(0), maxMs: 60_000, factor: 2 },
  });
  const inFlight = new Map<string, PullWork>();
  const nodeStates: Record<string, NodeProgress> = {};

  const report = () => {
    const p = progress(plan, run.now().getTime());
    const counter: Counter = { done: p.pulled, total: p.total };
    run.report({ progress: { [req.progressKey]: counter }, nodes: { ...run.nodeStates(), ...nodeStates } });
  };

  for (let tick = 0; ; tick++) {
    const now = run.now().getTime();
    const next = nextPulls(plan, now);
    plan = next.state;
    if (next.work.length) {
      const tasks: NodeTaskRequest[] = next.work.map((w) => {
        const { node, index } = byId.get(w.nodeId)!;
        const id = nodeTaskId(req.taskPrefix, index, w.attempt);
        inFlight.set(id, w);
        nodeStates[w.nodeId] = req.inFlightState;
        return { id, affinityId: node.affinityId, ...req.taskFor(node, index, w) };
      });
      yield* run.call('nodeTasksAdd', { batchJobId: req.batchJobId, tasks });
    }
    report();
    if (isDone(plan)) break;

    // Poll at the base interval while work is in flight; when only backoff holds work back, wake when it ends.
    const wait = inFlight.size > 0 ? run.pollDelayMs(0) : Math.max(run.pollDelayMs(0), (next.wakeAtMs ?? now) - now);
    yield* run.sleep(req.stage, wait);
    if (inFlight.size === 0) continue;

    const observed = yield* run.call('nodeTasksObserve', { batchJobId: req.batchJobId, taskIds: [...inFlight.keys()] });
    const nowMs = run.now().getTime();
    for (const o of observed) {
      const work = inFlight.get(o.id);
      if (!work || (o.state !== 'completed' && o.state !== 'missing')) continue;
      inFlight.delete(o.id);
      const ok = o.state === 'completed' && o.exitCode === 0;
      const ranOn = o.nodeId && byId.has(o.nodeId) ? o.nodeId : work.nodeId;
      plan = onPullResult(
        plan,
        { nodeId: work.nodeId, ranOnNodeId: ranOn, outcome: ok ? 'ok' : 'failed', attempt: work.attempt, message: ok ? undefined : failureMessage(o) },
        { nowMs, rand01: deterministicRand01(`${run.jobId}:${o.id}`) },
      );
      for (const id of Object.keys(plan.nodes)) if (plan.nodes[id].pulled) nodeStates[id] = req.doneState;
      if (!ok && plan.failure?.nodeId === work.nodeId) nodeStates[work.nodeId] = 'failed';
    }
  }

  if (plan.failure) {
    const f = plan.failure;
    throw new StageFailed(req.stage, `node ${f.nodeId}${f.ranOnNodeId !== f.nodeId ? ` (ran on ${f.ranOnNodeId})` : ''} failed after ${f.attempts} attempt(s): ${f.message}`);
  }
  const missing = nodesNotPulled(plan);
  if (missing.length) throw new StageFailed(req.stage, `nodes not covered: ${missing.join(', ')}`);
  run.report({ lastError: undefined });
}

/**
 * Batch's failure info for a task that exited non-zero only says so (FailureExitCode); the cause, such as the
 * registry's "manifest unknown", is in the task's output, so a failure carries both.
 */
export function failureMessage(o: NodeTaskObservation): string {
  const parts = [o.failure, o.outputTail && `output: ${o.outputTail}`].filter((p): p is string => !!p);
  return parts.length ? parts.join('; ') : `task ${o.id} ${o.state}`;
}
