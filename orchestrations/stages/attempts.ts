import type { Attempt, MpiResult, NodeRef, PreflightResult } from '../../shared/core/contract';
import { classifyAttempt, type AttemptEnd, type AttemptVerdict, type NodeHealth } from '../../shared/core/planning/failureClass';
import { MPI_TASK_ID } from '../../shared/core/planning/jobPlan';
import { decideRetry, retryDelayMs, type RetryDecision, type RetryPolicy } from '../../shared/core/planning/retryPolicy';
import { decideAfterPreemption, type PreemptionDecision, type SpotPolicy } from '../../shared/core/planning/spotPolicy';
import { JobCancelled, JobTimedOut, Orchestration, PipelineRun, StageFailed } from '../runtime/pipelineRun';
import { PreflightFailed } from './preflight';
import { AllocationFailed } from './provision';
import type { MpiRun } from './runMpi';

/** What one attempt knows about itself while it runs; the attempt's body fills in `nodes` and `preflight`. */
export interface AttemptContext {
  number: number;
  /** No attempt can follow this one (the Batch job may terminate itself after its MPI task). */
  isLast: boolean;
  /** The MPI task's id: `mpi`, then `mpi-a2`, … (ids are unique in the Batch job). */
  mpiTaskId: string;
  /** Suffix for the ids of the attempt's node tasks: '' for the first attempt, `-a2`, … */
  tag: string;
  /** The previous attempt's nodes to replace before this one runs. */
  replace: string[];
  /** Every node left out so far (failed in an earlier attempt, or by the preflight). */
  exclude: string[];
  /** The previous attempt could not get its nodes: ask Batch again. */
  reallocate: boolean;
  /** pool.spot fell back to dedicated nodes (too many preemptions): this attempt's pool has no Spot nodes. */
  dedicatedFallback: boolean;
  nodes: NodeRef[];
  preflight?: PreflightResult;
}

export interface AttemptsRequest {
  jobId: string;
  poolId: string;
  policy: RetryPolicy;
  /** pool.spot: preemptions are retried by its rules, apart from retry.maxAttempts (shared/core/planning/spotPolicy.ts). */
  spot?: SpotPolicy;
  /** Filled with one record per attempt, also when the job fails or is cancelled half-way (for the job result). */
  records: Attempt[];
}

/** The run's end: the last MPI result, and the reason it failed (undefined when it succeeded). */
export interface AttemptsOutcome {
  mpi: MpiResult;
  failure?: string;
}

/**
 * Runs `body` (provision or replace nodes → pulls → staging → preflight → MPI) until an attempt succeeds or the
 * retry policy says stop. After a failed attempt: the pool is looked at (a node Batch gave up on explains the
 * failure), the failure is classified (shared/core/planning/failureClass.ts) and the policy decides
 * (shared/core/planning/retryPolicy.ts); every attempt and the decision go on the job's timeline, the next attempt waits
 * its backoff on a durable timer (cancel and the budget guard still apply) and runs with the failed nodes replaced.
 * A stage failure that is not retried is thrown on as it came (cancel and timeouts are never caught here).
 */
export function* runAttempts(run: PipelineRun, req: AttemptsRequest, body: (attempt: AttemptContext) => Orchestration<MpiRun>): Orchestration<AttemptsOutcome> {
  const { policy } = req;
  const state: RetryState = { replace: [], reallocate: false, exclude: [], preemptions: 0, dedicatedFallback: false };
  for (let n = 1; ; n++) {
    const counted = n - state.preemptions;
    // While Spot nodes may be preempted another attempt may follow: the Batch job must not end itself.
    const onSpot = req.spot !== undefined && !state.dedicatedFallback;
    const a = attemptContext(n, counted >= policy.maxAttempts && !onSpot, state);
    const startedAt = run.now().toISOString();
    run.report({ progress: { attempt: { current: n, max: policy.maxAttempts } } });
    const { end, mpi, stageError } = yield* runAttempt(run, req, a, startedAt, body);
    const ok = end.kind === 'mpi' && end.exitCode === 0 && !end.requeued;
    let health: NodeHealth[] | undefined;
    if (!ok && a.nodes.length) health = (yield* run.call('poolObserve', { poolId: req.poolId })).nodes.map((h) => ({ id: h.id, state: h.state }));
    const verdict = classifyAttempt(
      end,
      a.nodes.map((x) => x.id),
      health,
      policy.exitCodes,
    );
    if (verdict.outcome === 'succeeded') {
      req.records.push(record(run, a, startedAt, verdict, mpi));
      return { mpi: mpi as MpiResult };
    }

    const spotDecision = verdict.failureClass === 'preemption' && onSpot ? decideAfterPreemption(req.spot!, state.preemptions + 1) : undefined;
    const decision = retryDecision(policy, counted, verdict, state.preemptions, spotDecision);
    const rec = record(run, a, startedAt, verdict, mpi);
    Object.assign(rec, {
      retried: decision.retry,
      retryReason: decision.reason,
      ...(decision.retry ? { retryAfterMs: decision.delayMs, replacedNodes: verdict.nodes } : {}),
    });
    req.records.push(rec);
    const noted = policy.maxAttempts > 1 || spotDecision !== undefined;
    if (noted) yield* noteAttempt(run, req, n, rec, verdict, decision, spotDecision);
    if (!decision.retry) {
      const note = noted ? `; not retried: ${decision.reason}` : '';
      if (stageError) throw withNote(stageError, note);
      return { mpi: mpi as MpiResult, failure: `${verdict.reason}${note}` };
    }
    run.report({
      lastError: `attempt ${n} failed (${verdict.failureClass}): ${verdict.reason}`,
      progress: { attempt: { current: n, max: policy.maxAttempts, lastFailure: verdict.reason } },
    });
    yield* run.sleep(stageError?.stage ?? 'Running', decision.delayMs);
    // The wait billed the pool too: another attempt starts only within the budget.
    run.checkpoint(stageError?.stage ?? 'Running');
    nextRetryState(state, verdict, spotDecision);
  }
}

/** A verdict on an attempt that failed. */
type FailedVerdict = Extract<AttemptVerdict, { outcome: 'failed' }>;

/** What carries from one attempt to the next. */
interface RetryState {
  /** The previous attempt's nodes to replace. */
  replace: string[];
  reallocate: boolean;
  /** Every node left out so far. */
  exclude: string[];
  /** Preemptions so far, and the attempts they added (not counted against retry.maxAttempts). */
  preemptions: number;
  dedicatedFallback: boolean;
}

/** Attempt `n`'s context, from what the earlier attempts left. */
function attemptContext(n: number, isLast: boolean, state: RetryState): AttemptContext {
  return {
    number: n,
    isLast,
    mpiTaskId: n === 1 ? MPI_TASK_ID : `${MPI_TASK_ID}-a${n}`,
    tag: n === 1 ? '' : `-a${n}`,
    replace: state.replace,
    exclude: [...state.exclude],
    reallocate: state.reallocate,
    dedicatedFallback: state.dedicatedFallback,
    nodes: [],
  };
}

/**
 * Runs one attempt's body and says how it ended: the MPI task's result, or the stage that failed. Cancel, timeouts
 * and bugs end the job: recorded, then thrown on.
 */
function* runAttempt(
  run: PipelineRun,
  req: AttemptsRequest,
  a: AttemptContext,
  startedAt: string,
  body: (attempt: AttemptContext) => Orchestration<MpiRun>,
): Orchestration<{ end: AttemptEnd; mpi?: MpiResult; stageError?: StageFailed }> {
  try {
    const out = yield* body(a);
    return {
      mpi: out.mpi,
      end: {
        kind: 'mpi',
        exitCode: out.mpi.exitCode,
        noExitCode: out.mpi.noExitCode,
        failure: out.mpi.failure,
        requeued: out.requeued,
        subtasks: out.mpi.subtasks.filter((s) => s.id !== 0),
      },
    };
  } catch (err) {
    if (!(err instanceof StageFailed) || err instanceof JobTimedOut) {
      // Cancelled, timed out, or a bug: the job ends here; the record says how far the attempt got.
      const reason = err instanceof JobCancelled ? err.reason : err instanceof Error ? err.message.split('\n')[0] : String(err);
      req.records.push(record(run, a, startedAt, { outcome: err instanceof JobCancelled ? 'cancelled' : 'failed', reason }));
      throw err;
    }
    if (err instanceof PreflightFailed) a.preflight = err.result;
    return {
      stageError: err,
      end: {
        kind: 'stage',
        stage: err.stage,
        reason: err.reason,
        allocation: err instanceof AllocationFailed,
        preflightNodes: err instanceof PreflightFailed ? err.nodes : undefined,
      },
    };
  }
}

/** Retry or not: a preemption on Spot nodes by pool.spot's rules, anything else by the retry policy. */
function retryDecision(
  policy: RetryPolicy,
  counted: number,
  verdict: FailedVerdict,
  preemptions: number,
  spotDecision: PreemptionDecision | undefined,
): RetryDecision {
  if (!spotDecision) return decideRetry(policy, counted, verdict);
  return spotDecision.action === 'fail'
    ? { retry: false, reason: spotDecision.reason }
    : { retry: true, delayMs: retryDelayMs(policy, preemptions + 2), reason: spotDecision.reason };
}

/** The failed attempt and the decision, on the job's timeline. */
function* noteAttempt(
  run: PipelineRun,
  req: AttemptsRequest,
  n: number,
  rec: Attempt,
  verdict: FailedVerdict,
  decision: RetryDecision,
  spotDecision: PreemptionDecision | undefined,
): Orchestration<void> {
  yield* run.call('jobNote', {
    jobId: req.jobId,
    eventId: `attempt-${n}`,
    at: rec.endedAt,
    reason: `attempt ${n} of ${req.policy.maxAttempts} failed (${verdict.failureClass}): ${verdict.reason}; ${decision.retry ? `retry in ${Math.round(decision.delayMs / 1000)} s${verdict.nodes.length ? `, replacing ${verdict.nodes.join(', ')}` : ''}${spotDecision ? `: ${spotDecision.reason}` : ''}` : `not retried: ${decision.reason}`}`,
    data: {
      attempt: n,
      failureClass: verdict.failureClass,
      retried: decision.retry,
      nodes: verdict.nodes,
      ...(spotDecision ? { spot: spotDecision.action } : {}),
    },
  });
}

/** After a failed attempt that is retried: its nodes are replaced and left out, Spot preemptions counted. */
function nextRetryState(state: RetryState, verdict: FailedVerdict, spotDecision: PreemptionDecision | undefined): void {
  state.replace = verdict.nodes;
  state.exclude.push(...verdict.nodes.filter((id) => !state.exclude.includes(id)));
  state.reallocate = verdict.failureClass === 'allocationFailure';
  if (spotDecision) {
    state.preemptions += 1;
    if (spotDecision.action === 'dedicated') state.dedicatedFallback = true;
  }
}

/** The failure as it came, its reason extended by the retry note (the class of error stays, for the job's reason). */
function withNote(err: StageFailed, note: string): StageFailed {
  if (!note) return err;
  return new StageFailed(err.stage, `${err.reason}${note}`, err.evidence);
}

/** An attempt's record: its verdict, or how it was cut short (cancelled, timed out: no failure class). */
function record(
  run: PipelineRun,
  a: AttemptContext,
  startedAt: string,
  verdict: AttemptVerdict | { outcome: 'cancelled' | 'failed'; reason: string },
  mpi?: MpiResult,
): Attempt {
  const endedAt = run.now().toISOString();
  const minutes = Math.max(0, Date.parse(endedAt) - Date.parse(startedAt)) / 60_000;
  const failed = 'failureClass' in verdict ? verdict : undefined;
  return {
    attempt: a.number,
    startedAt,
    endedAt,
    nodes: a.nodes.map((x) => x.id),
    outcome: verdict.outcome,
    ...(failed ? { failureClass: failed.failureClass, reason: failed.reason } : 'reason' in verdict ? { reason: verdict.reason } : {}),
    ...(mpi
      ? { mpiTaskId: mpi.taskId ?? a.mpiTaskId, ...(mpi.noExitCode ? {} : { exitCode: mpi.exitCode }) }
      : failed?.exitCode !== undefined
        ? { exitCode: failed.exitCode }
        : {}),
    nodeMinutes: Math.round(a.nodes.length * minutes * 100) / 100,
    ...(a.preflight ? { preflight: a.preflight } : {}),
  };
}
