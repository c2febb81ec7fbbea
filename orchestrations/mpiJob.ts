import * as df from 'durable-functions';
import type { OrchestrationContext } from 'durable-functions';
import { Activities, JobOutcome, MpiResult, PipelineSettings, ProvisionedPool, StageName } from './contracts';
import { JobCancelled, Orchestration, PipelineRun, StageFailed } from './pipeline/run';
import { provision } from './stages/provision';
import { pullImages } from './stages/pullImages';
import { stageData, StagedData } from './stages/stageData';
import { runMpi } from './stages/runMpi';
import { cleanup } from './stages/cleanup';
import { planJob } from '../shared/pipeline/jobPlan';
import { mpiTaskRequest, releaseTaskCommand } from '../shared/pipeline/mpiTaskRequest';
import type { JobSpec } from '../shared/spec/schema';
import { budgetGuard, jobCost, type PriceQuote } from '../shared/ops/cost';

export const MPI_JOB = 'mpiJob';

export interface MpiJobInput {
  jobId: string;
  spec: JobSpec;
  settings: PipelineSettings;
}

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
  const timings: JobOutcome['timings'] = {};
  let pool: ProvisionedPool | undefined;
  let staged: StagedData | undefined;
  let batchJobId: string | undefined;
  let price: PriceQuote | undefined;
  let outcome: JobOutcome;

  const enter = function* (stage: StageName, reason: string): Orchestration<void> {
    const now = run.now().toISOString();
    for (const t of Object.values(timings)) t.endedAt ??= now;
    timings[stage] = { startedAt: now };
    run.report({ stage });
    yield run.activity(Activities.jobTransition, {
      jobId: input.jobId,
      to: stage,
      reason,
      patch: { batchPoolId: plan.poolId, batchJobId: batchJobId },
    });
  };

  try {
    yield* enter('Provisioning', plan.reusePool ? `reusing pool ${plan.poolId}` : `creating pool ${plan.poolId}`);
    price = (yield run.activity(Activities.costPrice, { vmSize: input.spec.pool.vmSize ?? '' })) as PriceQuote;
    run.guardBudget(budgetGuard(input.spec.limits, price));
    pool = yield* provision(run, { jobId: input.jobId, poolId: plan.poolId, reuse: plan.reusePool, vmSize: input.spec.pool.vmSize, nodes: plan.nodes, minNodes: plan.minNodes, resizeTimeoutMs: plan.resizeTimeoutMs, createRequest: plan.poolCreate });
    batchJobId = (yield run.activity(Activities.batchJobCreate, { jobId: input.jobId, batchJobId: plan.batchJobId, poolId: pool.poolId, releaseCommandLine: releaseTaskCommand(input.jobId, input.spec) })) as string;
    run.report({ resources: { batchJobId } });

    yield* enter('PullingImages', `${input.spec.container.images.length} image(s) on ${pool.nodes.length} nodes, at most ${input.spec.container.pullConcurrency} at once`);
    yield* pullImages(run, { batchJobId, nodes: pool.nodes, spec: input.spec, maxAttempts: input.settings.nodeTaskMaxAttempts });

    yield* enter('StagingData', `${input.spec.data.inputs.length} input source(s)`);
    staged = yield* stageData(run, { jobId: input.jobId, batchJobId, nodes: pool.nodes, spec: input.spec, settings: input.settings });

    yield* enter('Running', `multi-instance task on ${pool.nodes.length} nodes`);
    const mpi: MpiResult = yield* runMpi(run, mpiTaskRequest(plan, input.spec, pool.nodes, staged.destination, batchJobId));
    outcome = mpi.exitCode === 0
      ? { state: 'Succeeded', exitCode: 0, result: mpi, logs: mpi.logs, timings }
      : { state: 'Failed', reason: `MPI task exited with code ${mpi.exitCode}${mpi.failure ? `: ${mpi.failure}` : ''}`, exitCode: mpi.exitCode, result: mpi, logs: mpi.logs, timings };
  } catch (err) {
    outcome = err instanceof JobCancelled
      ? { state: 'Cancelled', reason: err.reason, timings }
      : { state: 'Failed', reason: err instanceof StageFailed ? err.message : `unexpected: ${err instanceof Error ? err.message : String(err)}`, timings };
    run.report({ lastError: outcome.reason });
  }

  yield* enter('CleaningUp', outcome.reason ?? outcome.state);
  const cleaned = yield* cleanup(run, {
    batchJobId,
    pool: pool ? { poolId: pool.poolId, createdByUs: pool.createdByUs } : plan.reusePool ? undefined : { poolId: plan.poolId, createdByUs: true },
    deletePool: plan.deletePool,
    staging: { containers: staged?.containers ?? [], keep: plan.keepStagedData },
  }, outcome.state);
  if (cleaned.failed.length) outcome.reason = [outcome.reason, `cleanup incomplete: ${cleaned.failed.join('; ')}`].filter(Boolean).join('; ');

  const end = run.now().toISOString();
  for (const t of Object.values(timings)) t.endedAt ??= end;
  // Billed from the pool's allocation to its release (cleanup requested its deletion, or kept it): `end`.
  // A job cancelled while provisioning is billed for the nodes allocated so far. MPI pools are dedicated only.
  const { nodes, allocatedAt } = run.usage;
  if (allocatedAt !== undefined) {
    outcome.cost = jobCost(
      { vmSize: input.spec.pool.vmSize, dedicatedNodes: nodes, lowPriorityNodes: 0, allocatedAt, releasedAt: end },
      timings,
      price ?? { currency: 'USD', source: 'no price looked up' },
    );
    outcome.nodeMinutes = outcome.cost.nodeMinutes.total;
  }
  run.report({ stage: outcome.state, progress: { cleanup: { done: cleaned.done } } });
  yield run.activity(Activities.jobFinish, { jobId: input.jobId, outcome });
  return outcome;
}

df.app.orchestration(MPI_JOB, mpiJobOrchestrator);
