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
import { runMpi } from './stages/runMpi';
import { runAttempts } from './stages/attempts';
import { cleanup, waitForPoolGone } from './stages/cleanup';
import { keepOutputs, withOutputs, workloadUrls, type KeptOutputs } from './stages/workloadData';
import { waitInQueue } from './stages/queue';
import { sourcesCheck } from './stages/sourcesCheck';
import { imageEvidence } from './stages/imageEvidence';
import { planJob } from '../shared/core/planning/jobPlan';
import { mpiTaskRequest, releaseTaskCommand } from '../shared/core/planning/mpiTaskRequest';
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
// eslint-disable-next-line max-lines-per-function -- not yet split into stages of its own (issue 25, item 6); a replay-covered change for its own commit.
export function* mpiJobOrchestrator(context: OrchestrationContext): Orchestration<JobOutcome> {
  const input = context.df.getInput<MpiJobInput>();
  const plan = planJob(input.jobId, input.spec);
  const run = new PipelineRun(context, input.jobId, input.settings.poll, undefined);
  const timings: JobResult['timings'] = {};
  const attempts: Attempt[] = [];
  let pool: ProvisionedPool | undefined;
  let staged: StagedData | undefined;
  let batchJobId: string | undefined;
  let price: PriceQuote | undefined;
  let outcome: JobOutcome;
  const outputs = outputsPlan(input.spec, input.jobId);
  /** Set once the MPI task may exist and until its outputs are dealt with: cleanup must let Batch upload them first. */
  let pendingOutputs: { batchJobId: string; taskId: string } | undefined;
  let nodeUploads = false;
  let outputsUrl: string | undefined;
  /** The overlapped staging (settings.overlapStaging); runs started without the setting replay the sequential one. */
  let early: EarlyStaging | undefined;
  const mpiStarts: MpiStart[] = [];
  /** The MPI wait in a sub-orchestration that continues as new (bounded history); runs started before it wait inline. */
  const generation = input.settings.mpiWaitPollsPerGeneration;
  const waitInChild = () =>
    generation ? { waitInChild: { pollsPerGeneration: generation, ...(price ? { budget: { limits: input.spec.limits, price } } : {}) } } : {};

  const enter = function* (stage: JobState, reason: string, endingAs?: TerminalState): Orchestration<void> {
    // A later attempt goes through the stages again; the job row only moves forward (its timeline has the attempts).
    if (timings[stage]) return run.report({ stage });
    const now = run.now().toISOString();
    for (const t of Object.values(timings)) t.endedAt ??= now;
    timings[stage] = { startedAt: now };
    run.report({ stage });
    yield* run.call('jobTransition', { jobId: input.jobId, to: stage, reason, patch: { batchPoolId: plan.poolId, batchJobId, endingAs } });
  };
  let provisioning: ProvisionRequest = {
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
  /** pool.spot fell back to dedicated nodes at this time: the Spot nodes bill as dedicated from then on. */
  let spotUntil: string | undefined;
  // Nodes that hold the job's images and shards; a node that replaces a failed one gets them before it is used.
  const prepared = new Set<string>();
  const unprepared = () => (pool?.nodes ?? []).filter((n) => !prepared.has(n.id));
  const pullOn = (nodes: NodeRef[], tag: string) => {
    // Overlapped: each of these nodes downloads its shards as soon as its own pull is done.
    early?.expect(batchJobId!, pool!.nodes, nodes, `dl${tag}`);
    const onNodesPulled = early ? (ids: string[]) => early!.offer(ids) : undefined;
    return pullImages(run, {
      jobId: input.jobId,
      batchJobId: batchJobId!,
      nodes,
      spec: input.spec,
      maxAttempts: input.settings.nodeTaskMaxAttempts,
      sasMaxLifetimeMinutes: input.settings.sasMaxLifetimeMinutes,
      poolIdentityClientId: input.settings.poolIdentityClientId,
      taskPrefix: `pull${tag}`,
      holders: (pool?.nodes ?? []).filter((n) => prepared.has(n.id)),
      onNodesPulled,
    });
  };
  const stageOn = function* (nodes: NodeRef[], tag: string): Orchestration<void> {
    staged = early
      ? yield* early.drain()
      : yield* stageData(run, {
          jobId: input.jobId,
          batchJobId: batchJobId!,
          nodes: pool!.nodes,
          spec: input.spec,
          settings: input.settings,
          previous: staged,
          only: staged ? nodes.map((n) => n.id) : undefined,
          taskPrefix: `dl${tag}`,
        });
    for (const n of nodes) prepared.add(n.id);
  };

  /** Records the end once (the last write of the job's row) and tells whoever waits on this job. */
  const finish = function* (ended: JobOutcome, cleanedUp: string[]): Orchestration<JobOutcome> {
    const end = run.now().toISOString();
    for (const t of Object.values(timings)) t.endedAt ??= end;
    // The last report may still say the MPI task runs on every node (a cancel stopped the pipeline there): the
    // final status says how each ended instead, so no view shows running nodes of a deleted pool. A succeeded job's
    // nodes are left to the result's subtasks (the dashboard shows its ready nodes done).
    const settled = ended.state === 'Succeeded' ? {} : endedProgress({ nodes: run.nodeStates(), mpi: run.mpiProgress() }, cleanedUp.includes('pool deleted'));
    run.report({
      stage: ended.state,
      progress: { cleanup: { done: cleanedUp }, ...(settled.mpi ? { mpi: settled.mpi } : {}) },
      ...(settled.nodes ? { nodes: settled.nodes } : {}),
    });
    yield* run.call('jobFinish', { jobId: input.jobId, outcome: ended });
    yield* run.call('jobEnded', { jobId: input.jobId });
    return ended;
  };

  /** Gives the job's admission back. A failure here must not keep the end from being recorded: the sweep reconciles. */
  const release = function* (): Orchestration<void> {
    try {
      yield* run.call('admissionRelease', { jobId: input.jobId });
    } catch (err) {
      run.report({ lastError: `admission not given back (the sweep will): ${activityFailureMessage(err)}` });
    }
  };

  const waited = yield* queued(run, input, enter);
  if (waited.ended) {
    yield* release();
    return yield* finish({ ...waited.ended, result: { timings } }, []);
  }
  // Placed on another Batch account than the home one: every later activity works on that account.
  run.placeOn(waited.account);
  // Fail before paying: what the job reads must exist before its pool does. Runs started before the check skip it
  // (their histories have no such call).
  const missing = input.settings.checkSources ? yield* sourcesCheck(run, input.spec) : undefined;
  if (missing !== undefined) {
    run.report({ lastError: missing });
    yield* release();
    return yield* finish({ state: 'Failed', reason: missing, result: { timings } }, []);
  }
  // The MPI generation of a container job without mpi.version follows its image: read once from the registry (the
  // answer replays from the history), an image that does not exist fails here, before any pool. Runs started before
  // the read skip it (their histories have no such call).
  const image = input.settings.readImageEvidence
    ? yield* imageEvidence(run, input.jobId, input.spec, input.spec.pool.vmSize ?? plan.poolCreate.vmSize)
    : undefined;
  if (image && 'fail' in image) {
    run.report({ lastError: image.fail });
    yield* release();
    return yield* finish({ state: 'Failed', reason: image.fail, result: { timings } }, []);
  }
  // Every later step (preflight, the MPI task's commands) reads the generation as if the spec had declared it.
  if (image?.version) input.spec = { ...input.spec, mpi: { ...input.spec.mpi, version: image.version } };
  // The budget starts at admission: time spent waiting in the queue does not count against it.
  run.startDeadline({ at: new Date(run.now().getTime() + plan.pipelineBudgetMs).toISOString(), limit: 'pipeline budget' });

  try {
    yield* enter(
      'Provisioning',
      plan.reusePool ? `reusing pool ${plan.poolId} (admission grant ${waited.grant})` : `creating pool ${plan.poolId} (admission grant ${waited.grant})`,
    );
    price = yield* run.call('costPrice', { vmSize: input.spec.pool.vmSize ?? '' });
    run.guardBudget(budgetGuard(input.spec.limits, price));
    run.showPrice(price);
    // The shards need no node: their copy starts now and goes on while the pool allocates and the nodes pull.
    if (input.settings.overlapStaging)
      early = yield* EarlyStaging.start(run, { jobId: input.jobId, spec: input.spec, settings: input.settings, plannedNodes: plan.nodes });
    const end = yield* runAttempts(
      run,
      { jobId: input.jobId, poolId: plan.poolId, policy: retryPolicyFor(input.spec), records: attempts, ...(plan.spot ? { spot: plan.spot } : {}) },
      function* (attempt) {
        const attemptStartedAt = run.now().toISOString();
        // Too many preemptions (pool.spot.fallback "dedicated"): the pool's Spot target goes to 0 and its dedicated one
        // up, so the nodes replaced now and any Spot node left are dedicated ones.
        if (attempt.dedicatedFallback && provisioning.spotNodes) {
          provisioning = { ...provisioning, spotNodes: 0 };
          spotUntil = attemptStartedAt;
        }
        pool = pool
          ? yield* replaceNodes(run, provisioning, pool, attempt.replace, { exclude: attempt.exclude, reallocate: attempt.reallocate })
          : yield* provision(run, provisioning, { reallocate: attempt.reallocate });
        attempt.nodes = pool.nodes;
        batchJobId ??= yield* run.call('batchJobCreate', {
          jobId: input.jobId,
          batchJobId: plan.batchJobId,
          poolId: pool.poolId,
          releaseCommandLine: releaseTaskCommand(input.jobId, input.spec),
        });
        run.report({ resources: { batchJobId } });

        yield* enter(
          'PullingImages',
          `${input.spec.container.images.length} image(s) on ${pool.nodes.length} nodes, at most ${input.spec.container.pullConcurrency} at once`,
        );
        yield* pullOn(unprepared(), attempt.tag);

        yield* enter('StagingData', `${input.spec.data.inputs.length} input source(s)`);
        yield* stageOn(unprepared(), attempt.tag);

        const urls = yield* workloadUrls(run, input.spec, input.settings);
        const checked = yield* preflight(run, {
          jobId: input.jobId,
          batchJobId,
          attempt: attempt.number,
          plan,
          spec: input.spec,
          pool,
          urls,
          fabricDefaults: input.settings.preflightFabricDefaults !== false,
          sshWaitMinMs: input.settings.preflightSshWaitMinMs,
          healthChecks: input.settings.preflightHealthChecks ?? [],
          replace: function* (bad, round) {
            pool = yield* replaceNodes(run, provisioning, pool!, bad, { exclude: [...attempt.exclude, ...bad], reallocate: false });
            attempt.nodes = pool.nodes;
            yield* pullOn(unprepared(), `${attempt.tag}-p${round}`);
            yield* stageOn(unprepared(), `${attempt.tag}-p${round}`);
            return pool;
          },
        });
        ({ pool } = checked);
        attempt.preflight = checked.result;

        yield* enter('Running', `multi-instance task on ${pool.nodes.length} nodes`);
        // Node uploads follow the MPI task when some output comes from every node (or their logs): no auto-complete
        // then; nor before the last attempt, whose tasks may still follow.
        nodeUploads = needsNodeUploads(outputs, pool.nodes.length);
        if (outputs) pendingOutputs = { batchJobId, taskId: attempt.mpiTaskId };
        mpiStarts.push({ at: run.now().toISOString(), nodes: pool.nodes.map((n) => n.id), attemptStartedAt });
        const ran = yield* runMpi(run, mpiTaskRequest(plan, input.spec, pool.nodes, staged!.destination, batchJobId, urls, attempt.mpiTaskId), {
          autoComplete: input.spec.cleanup.autoComplete && attempt.isLast && !nodeUploads,
          poolId: pool.poolId,
          nodes: pool.nodes.map((n) => n.id),
          ...waitInChild(),
        });
        pendingOutputs = undefined;
        outputsUrl = urls.outputsContainerUrl;
        return ran;
      },
    );
    const { mpi } = end;
    const result: JobResult = { ...(mpi.noExitCode ? {} : { exitCode: mpi.exitCode }), timings, logs: mpi.logs, mpi, ...checksOf(attempts) };
    outcome = end.failure === undefined ? { state: 'Succeeded', result } : { state: 'Failed', reason: end.failure, result };
    // The last attempt's outputs: an earlier attempt's uploads under the same prefix are overwritten or left beside them.
    if (outputs && outputsUrl) {
      const kept = yield* keepOutputs(run, {
        plan: outputs,
        batchJobId: batchJobId!,
        poolId: pool!.poolId,
        nodes: pool!.nodes,
        mpi,
        containerUrl: outputsUrl,
        nodeUploads,
        autoComplete: input.spec.cleanup.autoComplete,
        maxAttempts: input.settings.nodeTaskMaxAttempts,
        logsListed: input.settings.nodeLogsListed,
      });
      outcome = withOutputs(outcome, kept, outputs.onUploadFailure);
    }
  } catch (err) {
    const result: JobResult = { timings, ...(attempts.length ? checksOf(attempts) : {}) };
    outcome =
      err instanceof JobCancelled
        ? { state: 'Cancelled', reason: err.reason, result }
        : {
            state: 'Failed',
            reason: err instanceof StageFailed ? err.message : `unexpected: ${activityFailureMessage(err)}`,
            result,
            ...(err instanceof StageFailed && err.evidence ? { evidence: err.evidence } : {}),
          };
    run.report({ lastError: outcome.reason });
  }

  yield* enter('CleaningUp', outcome.reason ?? outcome.state, outcome.state);
  const cleaned = yield* cleanup(
    run,
    {
      batchJobId,
      pool: pool ? { poolId: pool.poolId, createdByUs: pool.createdByUs } : plan.reusePool ? undefined : { poolId: plan.poolId, createdByUs: true },
      deletePool: plan.deletePool,
      // The containers stageData reported, not only those of a finished stage: shards copied before a cancel or a
      // failed download are deleted too.
      staging: { containers: run.resources().stagingContainers ?? [], keep: plan.keepStagedData, settle: early && (() => early!.settle()) },
      awaitOutputs: pendingOutputs,
    },
    outcome.state,
  );
  if (cleaned.failed.length) outcome.reason = [outcome.reason, `cleanup incomplete: ${cleaned.failed.join('; ')}`].filter(Boolean).join('; ');
  // Billed from the pool's allocation to its release (cleanup requested its deletion, or kept it).
  const released = run.now().toISOString();
  const deletedPool = cleaned.done.includes('pool deleted') ? (pool?.poolId ?? plan.poolId) : undefined;
  // A cancel (or failure) while the MPI task ran: cleanup terminated it and let Batch upload its output files and logs
  // before the pool went; the result lists what arrived, as after a normal end.
  if (outputs && pendingOutputs && cleaned.done.includes('outputs uploaded')) outcome = withOutputs(outcome, yield* listOutputs(run, outputs), 'report');
  if (deletedPool) yield* waitForPoolGone(run, deletedPool);
  yield* release();

  // Every attempt ran on the same pool, so this sums them and the waits between them. A job cancelled while
  // provisioning is billed for the nodes allocated so far. Spot nodes (pool.spot) are billed apart.
  const { nodes, allocatedAt } = run.usage;
  if (allocatedAt !== undefined) {
    const cost = jobCost(
      { vmSize: input.spec.pool.vmSize, ...spotUsage(nodes, plan.spot?.nodes, spotUntil), allocatedAt, releasedAt: released },
      timings,
      price ?? { currency: 'USD', source: 'no price looked up' },
      mpiStarts.length ? idleNodeMinutesBeforeMpi(run.nodeReadyAt, mpiStarts) : undefined,
    );
    outcome.result = { ...outcome.result, cost, nodeMinutes: cost.nodeMinutes.total };
  }
  if (early) outcome.result = { ...outcome.result, staging: { overlapped: true, ...early.times } };
  return yield* finish(outcome, cleaned.done);
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
