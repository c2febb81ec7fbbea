import type { OrchestrationContext } from 'durable-functions';
import type { JobOutcome, JobResult, MpiJobInput } from '../shared/contract';
import type { JobState } from '../shared/state/states';
import { JobCancelled, Orchestration, PipelineRun, StageFailed } from './runtime/pipelineRun';
import { activityFailureMessage } from './runtime/activityCalls';
import { provision, type ProvisionedPool } from './stages/provision';
import { pullImages } from './stages/pullImages';
import { stageData, StagedData } from './stages/stageData';
import { runMpi } from './stages/runMpi';
import { cleanup } from './stages/cleanup';
import { keepOutputs, withOutputs, workloadUrls } from './stages/workloadData';
import { planJob } from '../shared/planning/jobPlan';
import { mpiTaskRequest, releaseTaskCommand } from '../shared/planning/mpiTaskRequest';
import { budgetGuard, jobCost, type PriceQuote } from '../shared/ops/cost';
import { outputsPlan } from '../shared/planning/workloadData';

/**
 * The pipeline, one stage per line: provision → stagger image pulls → stage shards → MPI task, and
 * cleanup always, whatever happened before (failure, timeout, cancel).
 */
export function* mpiJobOrchestrator(context: OrchestrationContext): Orchestration<JobOutcome> {
  const input = context.df.getInput<MpiJobInput>();
  const plan = planJob(input.jobId, input.spec);
  const started = context.df.currentUtcDateTime;
  const deadline = { at: new Date(started.getTime() + plan.pipelineBudgetMs).toISOString(), limit: 'pipeline budget' };
  const run = new PipelineRun(context, input.jobId, input.settings.poll, deadline);
  const timings: JobResult['timings'] = {};
  let pool: ProvisionedPool | undefined;
  let staged: StagedData | undefined;
  let batchJobId: string | undefined;
  let price: PriceQuote | undefined;
  let outcome: JobOutcome;
  const outputs = outputsPlan(input.spec, input.jobId);
  /** Set once the MPI task may exist and until its outputs are dealt with: cleanup must let Batch upload them first. */
  let pendingOutputs: { batchJobId: string; taskId: string } | undefined;

  const enter = function* (stage: JobState, reason: string): Orchestration<void> {
    const now = run.now().toISOString();
    for (const t of Object.values(timings)) t.endedAt ??= now;
    timings[stage] = { startedAt: now };
    run.report({ stage });
    yield* run.call('jobTransition', { jobId: input.jobId, to: stage, reason, patch: { batchPoolId: plan.poolId, batchJobId } });
  };

  try {
    yield* enter('Provisioning', plan.reusePool ? `reusing pool ${plan.poolId}` : `creating pool ${plan.poolId}`);
    price = yield* run.call('costPrice', { vmSize: input.spec.pool.vmSize ?? '' });
    run.guardBudget(budgetGuard(input.spec.limits, price));
    pool = yield* provision(run, { jobId: input.jobId, poolId: plan.poolId, reuse: plan.reusePool, vmSize: input.spec.pool.vmSize, nodes: plan.nodes, minNodes: plan.minNodes, resizeTimeoutMs: plan.resizeTimeoutMs, createRequest: plan.poolCreate });
    batchJobId = yield* run.call('batchJobCreate', { jobId: input.jobId, batchJobId: plan.batchJobId, poolId: pool.poolId, releaseCommandLine: releaseTaskCommand(input.jobId, input.spec) });
    run.report({ resources: { batchJobId } });

    yield* enter('PullingImages', `${input.spec.container.images.length} image(s) on ${pool.nodes.length} nodes, at most ${input.spec.container.pullConcurrency} at once`);
    yield* pullImages(run, { jobId: input.jobId, batchJobId, nodes: pool.nodes, spec: input.spec, maxAttempts: input.settings.nodeTaskMaxAttempts, sasMaxLifetimeMinutes: input.settings.sasMaxLifetimeMinutes });

    yield* enter('StagingData', `${input.spec.data.inputs.length} input source(s)`);
    staged = yield* stageData(run, { jobId: input.jobId, batchJobId, nodes: pool.nodes, spec: input.spec, settings: input.settings });

    yield* enter('Running', `multi-instance task on ${pool.nodes.length} nodes`);
    const urls = yield* workloadUrls(run, input.spec, input.settings);
    // Node uploads follow the MPI task when some output comes from every node (or their logs): no auto-complete then.
    const nodeUploads = !!outputs && (outputs.nodePatterns.length > 0 || (outputs.logs && pool.nodes.length > 1));
    if (outputs) pendingOutputs = { batchJobId, taskId: plan.mpiTaskId };
    const mpi = yield* runMpi(run, mpiTaskRequest(plan, input.spec, pool.nodes, staged.destination, batchJobId, urls), { autoComplete: !nodeUploads });
    pendingOutputs = undefined;
    const result: JobResult = { exitCode: mpi.exitCode, timings, logs: mpi.logs, mpi };
    outcome = mpi.exitCode === 0
      ? { state: 'Succeeded', result }
      : { state: 'Failed', reason: `MPI task exited with code ${mpi.exitCode}${mpi.failure ? `: ${mpi.failure}` : ''}`, result };
    if (outputs && urls.outputsContainerUrl) {
      const kept = yield* keepOutputs(run, { plan: outputs, batchJobId, nodes: pool.nodes, mpi, containerUrl: urls.outputsContainerUrl, nodeUploads, maxAttempts: input.settings.nodeTaskMaxAttempts });
      outcome = withOutputs(outcome, kept, outputs.onUploadFailure);
    }
  } catch (err) {
    outcome = err instanceof JobCancelled
      ? { state: 'Cancelled', reason: err.reason, result: { timings } }
      : { state: 'Failed', reason: err instanceof StageFailed ? err.message : `unexpected: ${activityFailureMessage(err)}`, result: { timings } };
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
    awaitOutputs: pendingOutputs,
  }, outcome.state);
  if (cleaned.failed.length) outcome.reason = [outcome.reason, `cleanup incomplete: ${cleaned.failed.join('; ')}`].filter(Boolean).join('; ');

  const end = run.now().toISOString();
  for (const t of Object.values(timings)) t.endedAt ??= end;
  // Billed from the pool's allocation to its release (cleanup requested its deletion, or kept it): `end`.
  // A job cancelled while provisioning is billed for the nodes allocated so far. MPI pools are dedicated only.
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
