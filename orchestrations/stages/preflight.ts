import type { NodesReplaced, PreflightResult } from '../../shared/core/contract';
import type { JobPlan } from '../../shared/core/planning/jobPlan';
import type { MpiTaskUrls } from '../../shared/core/planning/mpiTaskRequest';
import { healthChecksForPool } from '../../shared/core/planning/health';
import {
  evaluatePreflight,
  preflightTaskId,
  preflightTaskRequest,
  preflightThresholds,
  withSshWaitFloor,
  type PreflightVerdict,
} from '../../shared/core/planning/preflight';
import type { JobSpec } from '../../shared/core/spec/schema';
import { Orchestration, PipelineRun, StageFailed } from '../runtime/pipelineRun';
import { preflightEvidence, type FailureEvidence } from '../../shared/core/planning/failureExplain';
import type { ProvisionedPool } from './provision';

export interface PreflightRequest {
  jobId: string;
  batchJobId: string;
  /** The attempt this check belongs to (task ids are unique in the Batch job). */
  attempt: number;
  plan: JobPlan;
  spec: JobSpec;
  pool: ProvisionedPool;
  /** The deployment applies the RDMA ping-pong defaults (PipelineSettings.preflightFabricDefaults). */
  fabricDefaults: boolean;
  /** The least the check waits for a node's ssh answer (PipelineSettings.preflightSshWaitMinMs; none: the spec's). */
  sshWaitMinMs?: number;
  /** The node health checks the deployment runs (PipelineSettings.preflightHealthChecks; none in older runs). */
  healthChecks?: readonly string[];
  /** The files every node gets, as the MPI task gets them (the pre-execution command may source one). */
  urls: MpiTaskUrls;
  /** Replaces bad nodes through the provisioning path and readies the newcomers (images, shards); the pool after. */
  replace(bad: string[], round: number): Orchestration<ProvisionedPool>;
}

/** The check kept finding bad nodes (or failed in a way no node can be blamed for): a failure `retry` may retry. */
export class PreflightFailed extends StageFailed {
  constructor(
    readonly nodes: string[],
    reason: string,
    readonly result: PreflightResult,
    evidence?: FailureEvidence,
  ) {
    super('StagingData', `preflight: ${reason}`, evidence);
    this.name = 'PreflightFailed';
  }
}

/**
 * Preflight: after staging, before the MPI task, check the attempt's nodes as the launcher will use them
 * (shared/core/planning/preflight.ts); replace the bad ones and check again, up to `preflight.rounds` times. The figures
 * of every node go to the progress and the job result.
 */
export function* preflight(run: PipelineRun, req: PreflightRequest): Orchestration<{ pool: ProvisionedPool; result?: PreflightResult }> {
  if (!req.spec.preflight.enabled) return { pool: req.pool };
  const spec = withSshWaitFloor(req.spec, req.sshWaitMinMs);
  const healthChecks = healthChecksForPool(req.healthChecks ?? [], spec.pool.vmSize !== undefined || req.pool.createdByUs);
  const th = preflightThresholds(spec, spec.pool.vmSize ?? req.plan.poolCreate.vmSize, req.fabricDefaults, healthChecks);
  let pool = req.pool;
  const replaced: string[] = [];
  for (let round = 1; ; round++) {
    const taskId = preflightTaskId(req.attempt, round);
    const ref = { batchJobId: req.batchJobId, taskId };
    run.report({ progress: { preflight: { state: 'running', round } } });
    yield* run.call('preflightTaskAdd', preflightTaskRequest(req.plan, spec, pool.nodes, req.batchJobId, taskId, req.urls, healthChecks));
    for (let poll = 0; ; poll++) {
      const obs = yield* run.call('preflightObserve', ref);
      if (obs.state === 'completed' || obs.state === 'missing') break;
      yield* run.sleep('StagingData', run.lookDelayMs(poll, taskId, run.runningPollDelayMs(poll)));
    }
    const collected = yield* run.call('preflightCollect', ref);
    const verdict = evaluatePreflight(collected, pool.nodes, th);
    const result: PreflightResult = { rounds: round, passed: verdict.pass, pingPong: verdict.pingPong, nodes: verdict.nodes, replaced: [...replaced] };
    const last = verdict.pass || !!verdict.unattributed || round > spec.preflight.rounds;
    run.report({
      progress: { preflight: { state: verdict.pass ? 'passed' : last ? 'failed' : 'replacing', round, pingPong: verdict.pingPong, nodes: verdict.nodes } },
    });
    if (verdict.pass) return { pool, result };
    const why = describe(verdict);
    if (verdict.unattributed) throw new PreflightFailed([], why, result, preflightEvidence(collected, []));
    if (round > spec.preflight.rounds)
      throw new PreflightFailed(verdict.outliers, `${why} (still after ${round} checks)`, result, preflightEvidence(collected, verdict.outliers));
    yield* run.call('jobNote', {
      jobId: req.jobId,
      eventId: `preflight-${req.attempt}-${round}`,
      at: run.now().toISOString(),
      reason: `preflight check ${round} of attempt ${req.attempt}: replacing ${why}`,
      data: replacedData(verdict, req.attempt, round),
    });
    replaced.push(...verdict.outliers);
    pool = yield* req.replace(verdict.outliers, round);
  }
}

/** The note's data: each replaced node with its problems and the health checks it failed (measured vs threshold). */
function replacedData(v: PreflightVerdict, attempt: number, round: number): NodesReplaced & { outliers: string[] } {
  return {
    kind: 'nodesReplaced',
    stage: 'StagingData',
    attempt,
    round,
    outliers: v.outliers,
    // A timeline note holds at most 30,000 characters (shared/core/state/entityCodec.ts): the first nodes keep their failed
    // checks, every node its reasons cut to 300 characters, past 40 nodes only their ids (outliers).
    nodes: v.outliers.slice(0, 40).map((id, i) => {
      const failed = i < 10 ? (v.nodes[id].health ?? []).filter((r) => !r.ok).slice(0, 8) : [];
      return {
        node: id,
        cause: 'preflight' as const,
        reasons: v.nodes[id].problems.slice(0, 8).map((p) => p.slice(0, 300)),
        ...(failed.length ? { checks: failed } : {}),
      };
    }),
  };
}

function describe(v: PreflightVerdict): string {
  if (v.unattributed) return v.unattributed;
  return v.outliers.map((id) => `${id} (${v.nodes[id].problems.join('; ')})`).join(', ');
}
