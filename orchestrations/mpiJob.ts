import type { OrchestrationContext } from 'durable-functions';
import type { Attempt, JobOutcome, JobResult, MpiJobInput, NodeRef } from '../shared/core/contract';
import { endedProgress } from '../shared/core/contract/endedProgress';
import type { JobState, TerminalState } from '../shared/core/state/states';
import { JobCancelled, Orchestration, PipelineRun, StageFailed } from './runtime/pipelineRun';
import { activityFailureMessage } from './runtime/activityCalls';
import { provision, replaceNodes, type ProvisionedPool, type ProvisionRequest } from './stages/provision';
import { pullImages } from './stages/pullImages';
import { EarlyStaging, stageData, StagedData } from './stages/stageData';
import { preflight } from './stages/preflight';
import { runMpi, type MpiRun } from './stages/runMpi';
import { runAttempts, type AttemptContext, type AttemptsOutcome } from './stages/attempts';
import { cleanup, waitForPoolGone } from './stages/cleanup';
import { keepOutputs, withOutputs, workloadUrls, type KeptOutputs } from './stages/workloadData';
import { waitInQueue } from './stages/queue';
import { sourcesCheck } from './stages/sourcesCheck';
import { imageEvidence } from './stages/imageEvidence';
import { planJob } from '../shared/core/planning/jobPlan';
import { mpiTaskRequest, releaseTaskCommand, type MpiTaskUrls } from '../shared/core/planning/mpiTaskRequest';
import { retryPolicyFor } from '../shared/core/planning/retryPolicy';
import { poolSplit } from '../shared/core/planning/spotPolicy';
import { budgetGuard, idleNodeMinutesBeforeMpi, jobCost, type MpiStart, type PriceQuote } from '../shared/core/ops/cost';
import { needsNodeUploads, outputsPlan, type OutputsPlan } from '../shared/core/planning/workloadData';
import { priorityOf, queueOf } from '../shared/core/scheduling/demand';

/** How often a waiting job asks where it stands when the run's settings do not say (runs started before queues). */
const DEFAULT_QUEUE_POLL_MS = 60_000;

/**
 * The pipeline, one stage per line: wait in the queue (dependencies, admission) → provision → stagger image pulls →
 * stage shards → preflight → MPI task, as attempts retried by failure class on replaced nodes (the spec's `retry`),
 * and cleanup always, whatever happened before (failure, timeout, cancel); then the job's admission is given back and
 * its end recorded and announced. A job that ends while it waits has nothing to clean.
 * With `settings.overlapStaging` the shards are copied from admission on, beside provisioning and the pulls, and each
 * node downloads its shards once its own pull is done; the StagingData stage then only waits for what is left.
 */
export function* mpiJobOrchestrator(context: OrchestrationContext): Orchestration<JobOutcome> {
  const job = new MpiJobPipeline(context);
  const admitted = yield* job.admit();
  if (admitted.ended) return yield* job.endUnstarted(admitted.ended);
  const outcome = yield* job.execute(admitted.grant);
  const cleaned = yield* job.cleanUp(outcome);
  yield* job.release();
  return yield* job.finish(job.billed(cleaned.outcome, cleaned.releasedAt), cleaned.done);
}

/**
 * One job's run through the pipeline: what its stages share (the plan, the pool, the Batch job, the attempts, the
 * timings) and each stage as a method. Every method is a step of the orchestrator above, in the order of the history
 * it replays: splitting it changed no activity, timer or input.
 */
class MpiJobPipeline {
  private readonly input: MpiJobInput;
  private readonly plan: ReturnType<typeof planJob>;
  private readonly run: PipelineRun;
  private readonly timings: JobResult['timings'] = {};
  private readonly attempts: Attempt[] = [];
  private pool: ProvisionedPool | undefined;
  private staged: StagedData | undefined;
  private batchJobId: string | undefined;
  private price: PriceQuote | undefined;
  private readonly outputs: OutputsPlan | undefined;
  /** Set once the MPI task may exist and until its outputs are dealt with: cleanup must let Batch upload them first. */
  private pendingOutputs: { batchJobId: string; taskId: string } | undefined;
  private nodeUploads = false;
  private outputsUrl: string | undefined;
  /** The overlapped staging (settings.overlapStaging); runs started without the setting replay the sequential one. */
  private early: EarlyStaging | undefined;
  private readonly mpiStarts: MpiStart[] = [];
  private provisioning: ProvisionRequest;
  /** pool.spot fell back to dedicated nodes at this time: the Spot nodes bill as dedicated from then on. */
  private spotUntil: string | undefined;
  /** Nodes that hold the job's images and shards; a node that replaces a failed one gets them before it is used. */
  private readonly prepared = new Set<string>();

  constructor(context: OrchestrationContext) {
    const input = context.df.getInput<MpiJobInput>();
    const plan = planJob(input.jobId, input.spec);
    this.input = input;
    this.plan = plan;
    this.run = new PipelineRun(context, input.jobId, input.settings.poll, undefined);
    this.outputs = outputsPlan(input.spec, input.jobId);
    this.provisioning = {
      jobId: input.jobId,
      poolId: plan.poolId,
      reuse: plan.reusePool,
      vmSize: input.spec.pool.vmSize,
      nodes: plan.nodes,
      minNodes: plan.minNodes,
      resizeTimeoutMs: plan.resizeTimeoutMs,
      createRequest: plan.poolCreate,
      explainFailures: input.settings.explainFailures,
      ...(plan.spot ? { spotNodes: plan.spot.nodes } : {}),
    };
  }

  /**
   * Queued, then the checks before paying for a pool: the job ends here (nothing created) when it is cancelled or
   * cannot be admitted, when what it reads does not exist, or when its image does not. Once admitted, the job runs
   * on the account it was placed on and its pipeline budget starts.
   */
  *admit(): Orchestration<{ ended: Omit<JobOutcome, 'result'>; grant?: undefined } | { ended?: undefined; grant: number }> {
    const { run, input, plan } = this;
    const waited = yield* queued(run, input, (stage, reason) => this.enter(stage, reason));
    if (waited.ended) return { ended: waited.ended };
    // Placed on another Batch account than the home one: every later activity works on that account.
    run.placeOn(waited.account);
    // Fail before paying: what the job reads must exist before its pool does. Runs started before the check skip it
    // (their histories have no such call).
    const missing = input.settings.checkSources ? yield* sourcesCheck(run, input.spec) : undefined;
    if (missing !== undefined) {
      run.report({ lastError: missing });
      return { ended: { state: 'Failed', reason: missing } };
    }
    // The MPI generation of a container job without mpi.version follows its image: read once from the registry (the
    // answer replays from the history), an image that does not exist fails here, before any pool. Runs started before
    // the read skip it (their histories have no such call).
    const image = input.settings.readImageEvidence
      ? yield* imageEvidence(run, input.jobId, input.spec, input.spec.pool.vmSize ?? plan.poolCreate.vmSize)
      : undefined;
    if (image && 'fail' in image) {
      run.report({ lastError: image.fail });
      return { ended: { state: 'Failed', reason: image.fail } };
    }
    // Every later step (preflight, the MPI task's commands) reads the generation as if the spec had declared it.
    if (image?.version) input.spec = { ...input.spec, mpi: { ...input.spec.mpi, version: image.version } };
    // The budget starts at admission: time spent waiting in the queue does not count against it.
    run.startDeadline({ at: new Date(run.now().getTime() + plan.pipelineBudgetMs).toISOString(), limit: 'pipeline budget' });
    return { grant: waited.grant };
  }

  /** A job that ends before it was admitted (or checked) has nothing to clean: its admission back, its end recorded. */
  *endUnstarted(ended: Omit<JobOutcome, 'result'>): Orchestration<JobOutcome> {
    yield* this.release();
    return yield* this.finish({ ...ended, result: { timings: this.timings } }, []);
  }

  /** Provisioning → pulls → staging → preflight → MPI, as attempts; then the outputs kept. Any failure is the outcome. */
  *execute(grant: number): Orchestration<JobOutcome> {
    try {
      const end = yield* this.runAttempts(grant);
      return yield* this.keepResults(end);
    } catch (err) {
      return this.interrupted(err);
    }
  }

  /** Enters Provisioning, looks up the price (the budget guard), starts the overlapped staging, runs the attempts. */
  private *runAttempts(grant: number): Orchestration<AttemptsOutcome> {
    const { run, input, plan } = this;
    yield* this.enter(
      'Provisioning',
      plan.reusePool ? `reusing pool ${plan.poolId} (admission grant ${grant})` : `creating pool ${plan.poolId} (admission grant ${grant})`,
    );
    this.price = yield* run.call('costPrice', { vmSize: input.spec.pool.vmSize ?? '' });
    run.guardBudget(budgetGuard(input.spec.limits, this.price));
    run.showPrice(this.price);
    // The shards need no node: their copy starts now and goes on while the pool allocates and the nodes pull.
    if (input.settings.overlapStaging)
      this.early = yield* EarlyStaging.start(run, { jobId: input.jobId, spec: input.spec, settings: input.settings, plannedNodes: plan.nodes });
    return yield* runAttempts(
      run,
      {
        jobId: input.jobId,
        poolId: plan.poolId,
        policy: retryPolicyFor(input.spec),
        records: this.attempts,
        ...(plan.spot ? { spot: plan.spot } : {}),
      },
      (attempt) => this.attempt(attempt),
    );
  }

  /** One attempt: nodes, pulls, staging, preflight, the MPI task. */
  private *attempt(attempt: AttemptContext): Orchestration<MpiRun> {
    const attemptStartedAt = this.run.now().toISOString();
    const pool = yield* this.nodesFor(attempt, attemptStartedAt);
    yield* this.enter(
      'PullingImages',
      `${this.input.spec.container.images.length} image(s) on ${pool.nodes.length} nodes, at most ${this.input.spec.container.pullConcurrency} at once`,
    );
    yield* this.pullOn(this.unprepared(), attempt.tag);
    yield* this.enter('StagingData', `${this.input.spec.data.inputs.length} input source(s)`);
    yield* this.stageOn(this.unprepared(), attempt.tag);
    const urls = yield* workloadUrls(this.run, this.input.spec, this.input.settings);
    yield* this.preflight(attempt, urls);
    return yield* this.runMpi(attempt, urls, attemptStartedAt);
  }

  /** The attempt's pool (provisioned, or the failed nodes replaced) and the Batch job (created once). */
  private *nodesFor(attempt: AttemptContext, attemptStartedAt: string): Orchestration<ProvisionedPool> {
    const { run, input, plan } = this;
    // Too many preemptions (pool.spot.fallback "dedicated"): the pool's Spot target goes to 0 and its dedicated one
    // up, so the nodes replaced now and any Spot node left are dedicated ones.
    if (attempt.dedicatedFallback && this.provisioning.spotNodes) {
      this.provisioning = { ...this.provisioning, spotNodes: 0 };
      this.spotUntil = attemptStartedAt;
    }
    const pool = this.pool
      ? yield* replaceNodes(run, this.provisioning, this.pool, attempt.replace, { exclude: attempt.exclude, reallocate: attempt.reallocate })
      : yield* provision(run, this.provisioning, { reallocate: attempt.reallocate });
    this.pool = pool;
    attempt.nodes = pool.nodes;
    this.batchJobId ??= yield* run.call('batchJobCreate', {
      jobId: input.jobId,
      batchJobId: plan.batchJobId,
      poolId: pool.poolId,
      releaseCommandLine: releaseTaskCommand(input.jobId, input.spec),
    });
    run.report({ resources: { batchJobId: this.batchJobId } });
    return pool;
  }

  /** The preflight on the attempt's nodes; a node it replaces gets the images and shards first. */
  private *preflight(attempt: AttemptContext, urls: MpiTaskUrls): Orchestration<void> {
    const { run, input, plan } = this;
    const checked = yield* preflight(run, {
      jobId: input.jobId,
      batchJobId: this.batchJobId!,
      attempt: attempt.number,
      plan,
      spec: input.spec,
      pool: this.pool!,
      urls,
      fabricDefaults: input.settings.preflightFabricDefaults !== false,
      sshWaitMinMs: input.settings.preflightSshWaitMinMs,
      healthChecks: input.settings.preflightHealthChecks ?? [],
      replace: (bad, round) => this.replaceForPreflight(attempt, bad, round),
    });
    this.pool = checked.pool;
    attempt.preflight = checked.result;
  }

  /** Nodes the preflight found bad, replaced; the newcomers pull and get their shards. */
  private *replaceForPreflight(attempt: AttemptContext, bad: string[], round: number): Orchestration<ProvisionedPool> {
    const pool = yield* replaceNodes(this.run, this.provisioning, this.pool!, bad, { exclude: [...attempt.exclude, ...bad], reallocate: false });
    this.pool = pool;
    attempt.nodes = pool.nodes;
    yield* this.pullOn(this.unprepared(), `${attempt.tag}-p${round}`);
    yield* this.stageOn(this.unprepared(), `${attempt.tag}-p${round}`);
    return pool;
  }

  /** Enters Running and runs the attempt's MPI task to its end. */
  private *runMpi(attempt: AttemptContext, urls: MpiTaskUrls, attemptStartedAt: string): Orchestration<MpiRun> {
    const { run, input, plan } = this;
    const pool = this.pool!;
    const batchJobId = this.batchJobId!;
    yield* this.enter('Running', `multi-instance task on ${pool.nodes.length} nodes`);
    // Node uploads follow the MPI task when some output comes from every node (or their logs): no auto-complete
    // then; nor before the last attempt, whose tasks may still follow.
    this.nodeUploads = needsNodeUploads(this.outputs, pool.nodes.length);
    if (this.outputs) this.pendingOutputs = { batchJobId, taskId: attempt.mpiTaskId };
    this.mpiStarts.push({ at: run.now().toISOString(), nodes: pool.nodes.map((n) => n.id), attemptStartedAt });
    const ran = yield* runMpi(run, mpiTaskRequest(plan, input.spec, pool.nodes, this.staged!.destination, batchJobId, urls, attempt.mpiTaskId), {
      autoComplete: input.spec.cleanup.autoComplete && attempt.isLast && !this.nodeUploads,
      poolId: pool.poolId,
      nodes: pool.nodes.map((n) => n.id),
      ...this.waitInChild(),
    });
    this.pendingOutputs = undefined;
    this.outputsUrl = urls.outputsContainerUrl;
    return ran;
  }

  /** The MPI wait in a sub-orchestration that continues as new (bounded history); runs started before it wait inline. */
  private waitInChild() {
    const generation = this.input.settings.mpiWaitPollsPerGeneration;
    const price = this.price;
    return generation ? { waitInChild: { pollsPerGeneration: generation, ...(price ? { budget: { limits: this.input.spec.limits, price } } : {}) } } : {};
  }

  /** The attempts' end as the job's outcome, with the last attempt's outputs kept. */
  private *keepResults(end: AttemptsOutcome): Orchestration<JobOutcome> {
    const { run, input, outputs } = this;
    const { mpi } = end;
    const result: JobResult = { ...(mpi.noExitCode ? {} : { exitCode: mpi.exitCode }), timings: this.timings, logs: mpi.logs, mpi, ...checksOf(this.attempts) };
    const outcome: JobOutcome = end.failure === undefined ? { state: 'Succeeded', result } : { state: 'Failed', reason: end.failure, result };
    // The last attempt's outputs: an earlier attempt's uploads under the same prefix are overwritten or left beside them.
    if (!outputs || !this.outputsUrl) return outcome;
    const kept = yield* keepOutputs(run, {
      plan: outputs,
      batchJobId: this.batchJobId!,
      poolId: this.pool!.poolId,
      nodes: this.pool!.nodes,
      mpi,
      containerUrl: this.outputsUrl,
      nodeUploads: this.nodeUploads,
      autoComplete: input.spec.cleanup.autoComplete,
      maxAttempts: input.settings.nodeTaskMaxAttempts,
      logsListed: input.settings.nodeLogsListed,
    });
    return withOutputs(outcome, kept, outputs.onUploadFailure);
  }

  /** A cancel, a stage that failed for good, or a bug: the outcome, with the attempts so far. */
  private interrupted(err: unknown): JobOutcome {
    const result: JobResult = { timings: this.timings, ...(this.attempts.length ? checksOf(this.attempts) : {}) };
    const outcome: JobOutcome =
      err instanceof JobCancelled
        ? { state: 'Cancelled', reason: err.reason, result }
        : {
            state: 'Failed',
            reason: err instanceof StageFailed ? err.message : `unexpected: ${activityFailureMessage(err)}`,
            result,
            ...(err instanceof StageFailed && err.evidence ? { evidence: err.evidence } : {}),
          };
    this.run.report({ lastError: outcome.reason });
    return outcome;
  }

  /**
   * CleaningUp, whatever happened before: the Batch job, the pool and the staged shards go (or stay, as the spec
   * says); outputs of an MPI task cut short are listed; a deleted pool is waited out. `releasedAt` ends the billing.
   */
  *cleanUp(ended: JobOutcome): Orchestration<{ outcome: JobOutcome; done: string[]; releasedAt: string }> {
    const { run, plan, outputs, early, pool } = this;
    let outcome = ended;
    yield* this.enter('CleaningUp', outcome.reason ?? outcome.state, outcome.state);
    const cleaned = yield* cleanup(
      run,
      {
        batchJobId: this.batchJobId,
        pool: pool ? { poolId: pool.poolId, createdByUs: pool.createdByUs } : plan.reusePool ? undefined : { poolId: plan.poolId, createdByUs: true },
        deletePool: plan.deletePool,
        // The containers stageData reported, not only those of a finished stage: shards copied before a cancel or a
        // failed download are deleted too.
        staging: { containers: run.resources().stagingContainers ?? [], keep: plan.keepStagedData, settle: early && (() => early.settle()) },
        awaitOutputs: this.pendingOutputs,
      },
      outcome.state,
    );
    if (cleaned.failed.length) outcome.reason = [outcome.reason, `cleanup incomplete: ${cleaned.failed.join('; ')}`].filter(Boolean).join('; ');
    // Billed from the pool's allocation to its release (cleanup requested its deletion, or kept it).
    const releasedAt = run.now().toISOString();
    const deletedPool = cleaned.done.includes('pool deleted') ? (pool?.poolId ?? plan.poolId) : undefined;
    // A cancel (or failure) while the MPI task ran: cleanup terminated it and let Batch upload its output files and logs
    // before the pool went; the result lists what arrived, as after a normal end.
    if (outputs && this.pendingOutputs && cleaned.done.includes('outputs uploaded')) outcome = withOutputs(outcome, yield* listOutputs(run, outputs), 'report');
    if (deletedPool) yield* waitForPoolGone(run, deletedPool);
    return { outcome, done: cleaned.done, releasedAt };
  }

  /**
   * The outcome with the job's cost: every attempt ran on the same pool, so this sums them and the waits between
   * them. A job cancelled while provisioning is billed for the nodes allocated so far. Spot nodes (pool.spot) are
   * billed apart.
   */
  billed(outcome: JobOutcome, releasedAt: string): JobOutcome {
    const { run, input, plan } = this;
    const { nodes, allocatedAt } = run.usage;
    if (allocatedAt !== undefined) {
      const cost = jobCost(
        { vmSize: input.spec.pool.vmSize, ...spotUsage(nodes, plan.spot?.nodes, this.spotUntil), allocatedAt, releasedAt },
        this.timings,
        this.price ?? { currency: 'USD', source: 'no price looked up' },
        this.mpiStarts.length ? idleNodeMinutesBeforeMpi(run.nodeReadyAt, this.mpiStarts) : undefined,
      );
      outcome.result = { ...outcome.result, cost, nodeMinutes: cost.nodeMinutes.total };
    }
    if (this.early) outcome.result = { ...outcome.result, staging: { overlapped: true, ...this.early.times } };
    return outcome;
  }

  /** Enters a stage: its timing starts, the previous ones end, the job's row moves. */
  private *enter(stage: JobState, reason: string, endingAs?: TerminalState): Orchestration<void> {
    const { run, timings } = this;
    // A later attempt goes through the stages again; the job row only moves forward (its timeline has the attempts).
    if (timings[stage]) return run.report({ stage });
    const now = run.now().toISOString();
    for (const t of Object.values(timings)) t.endedAt ??= now;
    timings[stage] = { startedAt: now };
    run.report({ stage });
    yield* run.call('jobTransition', {
      jobId: this.input.jobId,
      to: stage,
      reason,
      patch: { batchPoolId: this.plan.poolId, batchJobId: this.batchJobId, endingAs },
    });
  }

  /** The pool's nodes that do not hold the job's images and shards yet. */
  private unprepared(): NodeRef[] {
    return (this.pool?.nodes ?? []).filter((n) => !this.prepared.has(n.id));
  }

  /** The image pulls on `nodes`; the holders already prepared may serve them. */
  private pullOn(nodes: NodeRef[], tag: string) {
    const { input, early } = this;
    // Overlapped: each of these nodes downloads its shards as soon as its own pull is done.
    early?.expect(this.batchJobId!, this.pool!.nodes, nodes, `dl${tag}`);
    const onNodesPulled = early ? (ids: string[]) => early.offer(ids) : undefined;
    return pullImages(this.run, {
      jobId: input.jobId,
      batchJobId: this.batchJobId!,
      nodes,
      spec: input.spec,
      maxAttempts: input.settings.nodeTaskMaxAttempts,
      sasMaxLifetimeMinutes: input.settings.sasMaxLifetimeMinutes,
      poolIdentityClientId: input.settings.poolIdentityClientId,
      taskPrefix: `pull${tag}`,
      holders: (this.pool?.nodes ?? []).filter((n) => this.prepared.has(n.id)),
      onNodesPulled,
    });
  }

  /** The shards on `nodes` (all of them the first time; the newcomers after a replacement). */
  private *stageOn(nodes: NodeRef[], tag: string): Orchestration<void> {
    const { input, early } = this;
    this.staged = early
      ? yield* early.drain()
      : yield* stageData(this.run, {
          jobId: input.jobId,
          batchJobId: this.batchJobId!,
          nodes: this.pool!.nodes,
          spec: input.spec,
          settings: input.settings,
          previous: this.staged,
          only: this.staged ? nodes.map((n) => n.id) : undefined,
          taskPrefix: `dl${tag}`,
        });
    for (const n of nodes) this.prepared.add(n.id);
  }

  /** Records the end once (the last write of the job's row) and tells whoever waits on this job. */
  *finish(ended: JobOutcome, cleanedUp: string[]): Orchestration<JobOutcome> {
    const { run } = this;
    const end = run.now().toISOString();
    for (const t of Object.values(this.timings)) t.endedAt ??= end;
    // The last report may still say the MPI task runs on every node (a cancel stopped the pipeline there): the
    // final status says how each ended instead, so no view shows running nodes of a deleted pool. A succeeded job's
    // nodes are left to the result's subtasks (the dashboard shows its ready nodes done).
    const settled = ended.state === 'Succeeded' ? {} : endedProgress({ nodes: run.nodeStates(), mpi: run.mpiProgress() }, cleanedUp.includes('pool deleted'));
    run.report({
      stage: ended.state,
      progress: { cleanup: { done: cleanedUp }, ...(settled.mpi ? { mpi: settled.mpi } : {}) },
      ...(settled.nodes ? { nodes: settled.nodes } : {}),
    });
    yield* run.call('jobFinish', { jobId: this.input.jobId, outcome: ended });
    yield* run.call('jobEnded', { jobId: this.input.jobId });
    return ended;
  }

  /** Gives the job's admission back. A failure here must not keep the end from being recorded: the sweep reconciles. */
  *release(): Orchestration<void> {
    try {
      yield* this.run.call('admissionRelease', { jobId: this.input.jobId });
    } catch (err) {
      this.run.report({ lastError: `admission not given back (the sweep will): ${activityFailureMessage(err)}` });
    }
  }
}

/** The pool's nodes as billed: `spot` of them Spot nodes (until `until`, a fallback to dedicated ones), the rest dedicated. */
function spotUsage(
  nodes: number,
  spot: number | undefined,
  until: string | undefined,
): { dedicatedNodes: number; lowPriorityNodes: number; lowPriorityUntil?: string } {
  const split = poolSplit(nodes, spot);
  return { dedicatedNodes: split.dedicated, lowPriorityNodes: split.lowPriority, ...(until && split.lowPriority ? { lowPriorityUntil: until } : {}) };
}

/**
 * The Queued stage: the job waits for its dependencies and for admission. It ends here (nothing was created) when
 * cancelled, when a dependency can no longer be met, or when it can never fit.
 */
function* queued(
  run: PipelineRun,
  input: MpiJobInput,
  enter: (stage: JobState, reason: string) => Orchestration<void>,
): Orchestration<{ ended: Omit<JobOutcome, 'result'>; grant?: undefined } | { ended?: undefined; grant: number; account?: string }> {
  const deps = input.spec.dependsOn ?? [];
  try {
    yield* enter(
      'Queued',
      `queue ${queueOf(input.spec)}, priority ${priorityOf(input.spec)}${deps.length ? `, after ${deps.map((d) => `${d.job} (${d.condition})`).join(', ')}` : ''}`,
    );
    const granted = yield* waitInQueue(run, {
      jobId: input.jobId,
      hasDependencies: deps.length > 0,
      pollMs: input.settings.queuePollMs ?? DEFAULT_QUEUE_POLL_MS,
    });
    return { grant: granted.grant, ...(granted.account ? { account: granted.account } : {}) };
  } catch (err) {
    const ended: Omit<JobOutcome, 'result'> =
      err instanceof JobCancelled
        ? { state: 'Cancelled', reason: err.reason }
        : { state: 'Failed', reason: err instanceof StageFailed ? err.reason : `unexpected: ${activityFailureMessage(err)}` };
    run.report({ lastError: ended.reason, queue: undefined });
    return { ended };
  }
}

/**
 * The attempts and the last preflight check, for the job result. The last check keeps every node's figures; the
 * attempts keep theirs for the failing nodes only, so the result does not carry a large job's figures twice (it is
 * stored in one table row, at most 1 MiB).
 */
function checksOf(attempts: Attempt[]): Pick<JobResult, 'attempts' | 'preflight'> {
  const last = [...attempts].reverse().find((a) => a.preflight)?.preflight;
  const compact = attempts.map((a) =>
    a.preflight ? { ...a, preflight: { ...a.preflight, nodes: Object.fromEntries(Object.entries(a.preflight.nodes).filter(([, n]) => !n.ok)) } } : a,
  );
  return { attempts: compact, ...(last ? { preflight: last } : {}) };
}

/** What landed under the outputs prefix (a listing failure is reported, never fails the job's end). */
function* listOutputs(run: PipelineRun, plan: OutputsPlan): Orchestration<KeptOutputs> {
  try {
    return { listing: yield* run.call('outputsList', { account: plan.account, container: plan.container, prefix: plan.prefix, errors: [] }), errors: [] };
  } catch (err) {
    return { errors: [`outputs not listed: ${activityFailureMessage(err)}`] };
  }
}
