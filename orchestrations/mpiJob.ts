import type { OrchestrationContext } from 'durable-functions';
import type { Attempt, JobOutcome, JobResult, MpiJobInput, NodeRef } from '../shared/contract';
import type { JobState } from '../shared/state/states';
import { JobCancelled, Orchestration, PipelineRun, StageFailed } from './runtime/pipelineRun';
import { activityFailureMessage } from './runtime/activityCalls';
import { provision, replaceNodes, type ProvisionedPool, type ProvisionRequest } from './stages/provision';
import { pullImages } from './stages/pullImages';
import { stageData, StagedData } from './stages/stageData';
import { preflight } from './stages/preflight';
import { runMpi } from './stages/runMpi';
import { runAttempts } from './stages/attempts';
import { cleanup } from './stages/cleanup';
import { planJob } from '../shared/planning/jobPlan';
import { mpiTaskRequest, releaseTaskCommand } from '../shared/planning/mpiTaskRequest';
import { retryPolicyFor } from '../shared/planning/retryPolicy';
import { budgetGuard, jobCost, type PriceQuote } from '../shared/ops/cost';

/**
 * The pipeline, one stage per line: provision → stagger image pulls → stage shards → preflight → MPI task, as
 * attempts retried by failure class on replaced nodes (the spec's `retry`), and cleanup always, whatever happened
 * before (failure, timeout, cancel).
 */
export function* mpiJobOrchestrator(context: OrchestrationContext): Orchestration<JobOutcome> {
  const input = context.df.getInput<MpiJobInput>();
  const plan = planJob(input.jobId, input.spec);
  const started = context.df.currentUtcDateTime;
  const deadline = { at: new Date(started.getTime() + plan.pipelineBudgetMs).toISOString(), limit: 'pipeline budget' };
  const run = new PipelineRun(context, input.jobId, input.settings.poll, deadline);
  const timings: JobResult['timings'] = {};
  const attempts: Attempt[] = [];
  let pool: ProvisionedPool | undefined;
  let staged: StagedData | undefined;
  let batchJobId: string | undefined;
  let price: PriceQuote | undefined;
  let outcome: JobOutcome;

  const enter = function* (stage: JobState, reason: string): Orchestration<void> {
    // A later attempt goes through the stages again; the job row only moves forward (its timeline has the attempts).
    if (timings[stage]) return run.report({ stage });
    const now = run.now().toISOString();
    for (const t of Object.values(timings)) t.endedAt ??= now;
    timings[stage] = { startedAt: now };
    run.report({ stage });
    yield* run.call('jobTransition', { jobId: input.jobId, to: stage, reason, patch: { batchPoolId: plan.poolId, batchJobId } });
  };
  const provisioning: ProvisionRequest = { jobId: input.jobId, poolId: plan.poolId, reuse: plan.reusePool, vmSize: input.spec.pool.vmSize, nodes: plan.nodes, minNodes: plan.minNodes, resizeTimeoutMs: plan.resizeTimeoutMs, createRequest: plan.poolCreate };
  // Nodes that hold the job's images and shards; a node that replaces a failed one gets them before it is used.
  const prepared = new Set<string>();
  const unprepared = () => (pool?.nodes ?? []).filter((n) => !prepared.has(n.id));
  const pullOn = (nodes: NodeRef[], tag: string) =>
    pullImages(run, { jobId: input.jobId, batchJobId: batchJobId!, nodes, spec: input.spec, maxAttempts: input.settings.nodeTaskMaxAttempts, sasMaxLifetimeMinutes: input.settings.sasMaxLifetimeMinutes, taskPrefix: `pull${tag}` });
  const stageOn = function* (nodes: NodeRef[], tag: string): Orchestration<void> {
    staged = yield* stageData(run, { jobId: input.jobId, batchJobId: batchJobId!, nodes: pool!.nodes, spec: input.spec, settings: input.settings, previous: staged, only: staged ? nodes.map((n) => n.id) : undefined, taskPrefix: `dl${tag}` });
    for (const n of nodes) prepared.add(n.id);
  };

  try {
    yield* enter('Provisioning', plan.reusePool ? `reusing pool ${plan.poolId}` : `creating pool ${plan.poolId}`);
    price = yield* run.call('costPrice', { vmSize: input.spec.pool.vmSize ?? '' });
    run.guardBudget(budgetGuard(input.spec.limits, price));
    const end = yield* runAttempts(run, { jobId: input.jobId, poolId: plan.poolId, policy: retryPolicyFor(input.spec), records: attempts }, function* (attempt) {
      pool = pool
        ? yield* replaceNodes(run, provisioning, pool, attempt.replace, { exclude: attempt.exclude, reallocate: attempt.reallocate })
        : yield* provision(run, provisioning, { reallocate: attempt.reallocate });
      attempt.nodes = pool.nodes;
      batchJobId ??= yield* run.call('batchJobCreate', { jobId: input.jobId, batchJobId: plan.batchJobId, poolId: pool.poolId, releaseCommandLine: releaseTaskCommand(input.jobId, input.spec) });
      run.report({ resources: { batchJobId } });

      yield* enter('PullingImages', `${input.spec.container.images.length} image(s) on ${pool.nodes.length} nodes, at most ${input.spec.container.pullConcurrency} at once`);
      yield* pullOn(unprepared(), attempt.tag);

      yield* enter('StagingData', `${input.spec.data.inputs.length} input source(s)`);
      yield* stageOn(unprepared(), attempt.tag);

      const checked = yield* preflight(run, { jobId: input.jobId, batchJobId, attempt: attempt.number, plan, spec: input.spec, pool, fabricDefaults: input.settings.preflightFabricDefaults !== false, replace: function* (bad, round) {
        pool = yield* replaceNodes(run, provisioning, pool!, bad, { exclude: [...attempt.exclude, ...bad], reallocate: false });
        attempt.nodes = pool.nodes;
        yield* pullOn(unprepared(), `${attempt.tag}-p${round}`);
        yield* stageOn(unprepared(), `${attempt.tag}-p${round}`);
        return pool;
      } });
      ({ pool } = checked);
      attempt.preflight = checked.result;

      yield* enter('Running', `multi-instance task on ${pool.nodes.length} nodes`);
      return yield* runMpi(run, mpiTaskRequest(plan, input.spec, pool.nodes, staged!.destination, batchJobId, attempt.mpiTaskId), { autoComplete: attempt.isLast, poolId: pool.poolId, nodes: pool.nodes.map((n) => n.id) });
    });
    const { mpi } = end;
    const result: JobResult = { exitCode: mpi.exitCode, timings, logs: mpi.logs, mpi, attempts, ...lastPreflight(attempts) };
    outcome = end.failure === undefined ? { state: 'Succeeded', result } : { state: 'Failed', reason: end.failure, result };
  } catch (err) {
    const result: JobResult = { timings, ...(attempts.length ? { attempts, ...lastPreflight(attempts) } : {}) };
    outcome = err instanceof JobCancelled
      ? { state: 'Cancelled', reason: err.reason, result }
      : { state: 'Failed', reason: err instanceof StageFailed ? err.message : `unexpected: ${activityFailureMessage(err)}`, result };
    run.report({ lastError: outcome.reason });
  }

  yield* enter('CleaningUp', outcome.reason ?? outcome.state);
  const cleaned = yield* cleanup(run, {
    batchJobId,
    pool: pool ? { poolId: pool.poolId, createdByUs: pool.createdByUs } : plan.reusePool ? undefined : { poolId: plan.poolId, createdByUs: true },
    deletePool: plan.deletePool,
    // The containers stageData reported, not only those of a finished stage: shards copied before a cancel or a
    // failed download are deleted too.
    staging: { containers: run.resources().stagingContainers ?? [], keep: plan.keepStagedData },
  }, outcome.state);
  if (cleaned.failed.length) outcome.reason = [outcome.reason, `cleanup incomplete: ${cleaned.failed.join('; ')}`].filter(Boolean).join('; ');

  const end = run.now().toISOString();
  for (const t of Object.values(timings)) t.endedAt ??= end;
  // Billed from the pool's allocation to its release (cleanup requested its deletion, or kept it): `end`. Every
  // attempt ran on the same pool, so this sums them and the waits between them. A job cancelled while provisioning
  // is billed for the nodes allocated so far. MPI pools are dedicated only.
  const { nodes, allocatedAt } = run.usage;
  if (allocatedAt !== undefined) {
    const cost = jobCost(
      { vmSize: input.spec.pool.vmSize, dedicatedNodes: nodes, lowPriorityNodes: 0, allocatedAt, releasedAt: end },
      timings,
      price ?? { currency: 'USD', source: 'no price looked up' },
    );
    outcome.result = { ...outcome.result, cost, nodeMinutes: cost.nodeMinutes.total };
  }
  run.report({ stage: outcome.state, progress: { cleanup: { done: cleaned.done } } });
  yield* run.call('jobFinish', { jobId: input.jobId, outcome });
  return outcome;
}

/** The last preflight check of the run, for the job result. */
function lastPreflight(attempts: Attempt[]): Pick<JobResult, 'preflight'> {
  const p = [...attempts].reverse().find((a) => a.preflight)?.preflight;
  return p ? { preflight: p } : {};
}
