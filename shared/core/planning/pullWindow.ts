/**
 * Pull-wave planner: a sliding window of per-node image pulls, as a pure, JSON-serializable state machine.
 *
 * The orchestrator loop is: `nextPulls` → schedule the returned work as activities → on each completion
 * `onPullResult` → repeat until `isDone`; when `nextPulls` returns no work but a `wakeAtMs`, wait on a durable timer
 * (raced against outstanding activities). Time comes in as `nowMs` (the orchestration's currentUtcDateTime) and jitter
 * as `rand01` (e.g. `deterministicRand01(\`${instanceId}:${nodeId}:${attempt}\`)`), so replays make identical decisions.
 *
 * Batch node affinity is only a hint: a pull task meant for node A can run on node B. Such a result covers B (if it
 * succeeded) and A is issued again. Results for work that is not in flight (duplicates, stale replays) are ignored.
 */
import { BackoffOptions, DEFAULT_PULL_BACKOFF, classifyError, delayMs } from './backoff';
import { PlanningError } from './errors';

export const DEFAULT_PULL_CONCURRENCY = 10;

export interface PullPlanOptions {
  nodes: string[];
  images: string[];
  /** Most nodes pulling at once. Default 10. */
  concurrency?: number;
  /** Failed (non-transient, not known-permanent) attempts per node before the plan fails. Default 3. */
  maxAttempts?: number;
  /** Throttled / transient attempts per node before the plan fails. Default 12 (minutes of capped backoff). */
  maxThrottledAttempts?: number;
  /** Times a node's pull may land on another node before we give up on affinity. Default 10. */
  maxRedirects?: number;
  backoff?: BackoffOptions;
}

export interface NodePullState {
  pulled: boolean;
  /** Attempt number of the pull currently running for this node, or null. */
  inFlightAttempt: number | null;
  /** Pulls issued for this node so far (the last issued attempt number). */
  attempts: number;
  failures: number;
  throttles: number;
  redirects: number;
  /** Earliest time (ms since epoch) the next pull may start: backoff after throttling or failure. */
  notBeforeMs: number;
  lastMessage?: string;
  /** Node whose pull task covered this one, when it was not this node's own task. */
  coveredBy?: string;
}

export type PullFailureReason = 'permanent' | 'maxAttempts' | 'throttled' | 'redirects';

export interface PullFailure {
  nodeId: string;
  ranOnNodeId: string;
  message: string;
  attempts: number;
  reason: PullFailureReason;
}

export interface PullPlanState {
  version: 1;
  images: string[];
  concurrency: number;
  maxAttempts: number;
  maxThrottledAttempts: number;
  maxRedirects: number;
  backoff: BackoffOptions;
  /** Node ids in issue order. */
  order: string[];
  nodes: Record<string, NodePullState>;
  failure?: PullFailure;
}

export interface PullWork {
  nodeId: string;
  images: string[];
  attempt: number;
  /** Unique per (node, attempt): use it in the Batch task id so a replayed schedule is idempotent. */
  workId: string;
}

export type PullOutcome = 'ok' | 'throttled' | 'failed';

export interface PullResult {
  nodeId: string;
  /** The node the pull really ran on (from the task's nodeInfo). */
  ranOnNodeId: string;
  outcome: PullOutcome;
  message?: string;
  attempt: number;
}

export interface PullProgress {
  pulled: number;
  total: number;
  inFlight: number;
  /** Nodes waiting out a backoff before their next attempt. */
  waiting: number;
  failed: number;
}

function positiveInt(name: string, value: number): number {
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new PlanningError(`${name} must be a positive whole number`, { [name]: value });
  }
  return value;
}

export function initPullPlan(options: PullPlanOptions): PullPlanState {
  const order = [...options.nodes];
  if (new Set(order).size !== order.length) {
    throw new PlanningError('node ids must be unique', { nodes: options.nodes });
  }
  if (order.some((n) => typeof n !== 'string' || n.length === 0)) {
    throw new PlanningError('node ids must be non-empty strings', { nodes: options.nodes });
  }
  const images = [...new Set(options.images)];
  const nodes: Record<string, NodePullState> = {};
  for (const id of order) {
    nodes[id] = {
      pulled: images.length === 0,
      inFlightAttempt: null,
      attempts: 0,
      failures: 0,
      throttles: 0,
      redirects: 0,
      notBeforeMs: 0,
    };
  }
  return {
    version: 1,
    images,
    concurrency: positiveInt('concurrency', options.concurrency ?? DEFAULT_PULL_CONCURRENCY),
    maxAttempts: positiveInt('maxAttempts', options.maxAttempts ?? 3),
    maxThrottledAttempts: positiveInt('maxThrottledAttempts', options.maxThrottledAttempts ?? 12),
    maxRedirects: positiveInt('maxRedirects', options.maxRedirects ?? 10),
    backoff: options.backoff ?? DEFAULT_PULL_BACKOFF,
    order,
    nodes,
  };
}

function inFlightCount(state: PullPlanState): number {
  let n = 0;
  for (const id of state.order) if (state.nodes[id].inFlightAttempt !== null) n++;
  return n;
}

export interface NextPulls {
  state: PullPlanState;
  /** Pulls to start now; they are already marked in flight in `state`. */
  work: PullWork[];
  /** When no more work could start now only because of backoff: the earliest time something becomes startable. */
  wakeAtMs?: number;
}

export function nextPulls(state: PullPlanState, nowMs: number): NextPulls {
  if (state.failure) return { state, work: [] };
  let free = state.concurrency - inFlightCount(state);
  const nodes = { ...state.nodes };
  const work: PullWork[] = [];
  let wakeAtMs: number | undefined;
  for (const id of state.order) {
    const n = nodes[id];
    if (n.pulled || n.inFlightAttempt !== null) continue;
    if (n.notBeforeMs > nowMs) {
      wakeAtMs = wakeAtMs === undefined ? n.notBeforeMs : Math.min(wakeAtMs, n.notBeforeMs);
      continue;
    }
    if (free <= 0) continue;
    const attempt = n.attempts + 1;
    nodes[id] = { ...n, attempts: attempt, inFlightAttempt: attempt };
    work.push({ nodeId: id, images: [...state.images], attempt, workId: `${id}#${attempt}` });
    free--;
  }
  const next = work.length > 0 ? { ...state, nodes } : state;
  // A wake-up only helps if a slot will be free for the node that becomes ready.
  return wakeAtMs !== undefined && free > 0 ? { state: next, work, wakeAtMs } : { state: next, work };
}

export interface PullResultContext {
  nowMs: number;
  /** In [0, 1): the jitter for a backoff this result may cause. */
  rand01: number;
}

export function onPullResult(state: PullPlanState, result: PullResult, ctx: PullResultContext): PullPlanState {
  const node = state.nodes[result.nodeId];
  if (!node || node.inFlightAttempt === null || node.inFlightAttempt !== result.attempt) return state;

  const nodes = { ...state.nodes };
  const updated: NodePullState = { ...node, inFlightAttempt: null };
  if (result.message !== undefined) updated.lastMessage = result.message;
  nodes[result.nodeId] = updated;
  let failure: PullFailure | undefined = state.failure;
  const fail = (reason: PullFailureReason, attempts: number, message: string): void => {
    failure ??= { nodeId: result.nodeId, ranOnNodeId: result.ranOnNodeId, message, attempts, reason };
  };
  const message = result.message ?? '';

  let outcome = result.outcome;
  if (outcome === 'failed' && classifyError(message) === 'transient') outcome = 'throttled';

  if (node.pulled) {
    // Another node's misplaced pull already covered this node while its own task was running: nothing is owed here,
    // but a success on some third node still covers that node.
    const other = nodes[result.ranOnNodeId];
    if (outcome === 'ok' && other && !other.pulled) nodes[result.ranOnNodeId] = { ...other, pulled: true, coveredBy: result.nodeId };
  } else if (outcome === 'ok') {
    if (result.ranOnNodeId === result.nodeId) {
      updated.pulled = true;
    } else {
      const other = nodes[result.ranOnNodeId];
      if (other && !other.pulled) nodes[result.ranOnNodeId] = { ...other, pulled: true, coveredBy: result.nodeId };
      updated.redirects++;
      updated.notBeforeMs = ctx.nowMs;
      if (updated.redirects > state.maxRedirects) {
        fail(
          'redirects',
          updated.attempts,
          `pull for node ${result.nodeId} ran on other nodes ${updated.redirects} times (last: ${result.ranOnNodeId}); node affinity is not being honoured`,
        );
      }
    }
  } else if (outcome === 'throttled') {
    updated.throttles++;
    if (updated.throttles >= state.maxThrottledAttempts) {
      fail('throttled', updated.attempts, `registry still throttling after ${updated.throttles} attempts: ${message}`);
    } else {
      updated.notBeforeMs = ctx.nowMs + delayMs(updated.throttles, state.backoff, ctx.rand01);
    }
  } else {
    updated.failures++;
    if (classifyError(message) === 'permanent') {
      fail('permanent', updated.attempts, message);
    } else if (updated.failures >= state.maxAttempts) {
      fail('maxAttempts', updated.attempts, message);
    } else {
      updated.notBeforeMs = ctx.nowMs + delayMs(updated.failures, state.backoff, ctx.rand01);
    }
  }
  return failure ? { ...state, nodes, failure } : { ...state, nodes };
}

export function isComplete(state: PullPlanState): boolean {
  return state.order.every((id) => state.nodes[id].pulled);
}

/** True when there is nothing more to start: every node holds every image, or the plan failed. */
export function isDone(state: PullPlanState): boolean {
  return state.failure !== undefined || isComplete(state);
}

export function progress(state: PullPlanState, nowMs?: number): PullProgress {
  let pulled = 0;
  let inFlight = 0;
  let waiting = 0;
  for (const id of state.order) {
    const n = state.nodes[id];
    if (n.pulled) pulled++;
    if (n.inFlightAttempt !== null) inFlight++;
    else if (!n.pulled && nowMs !== undefined && n.notBeforeMs > nowMs) waiting++;
  }
  return { pulled, total: state.order.length, inFlight, waiting, failed: state.failure ? 1 : 0 };
}

/** Nodes that do not yet hold every image (for messages such as "waiting for 3 nodes: …"). */
export function nodesNotPulled(state: PullPlanState): string[] {
  return state.order.filter((id) => !state.nodes[id].pulled);
}
