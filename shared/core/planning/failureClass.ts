/**
 * What kind of failure ended an attempt, from what the pipeline observed. Pure, so every rule is unit-tested and
 * replays identically. The classes follow what peers retry on: a node Batch gave up on (Slurm's NODE_FAIL requeue,
 * Google Batch's lifecycle policies), capacity (AWS Batch's evaluateOnExit on host errors), a failed check before the
 * run (the MPI Operator's "wait for workers ready"), and exit codes the user lists (the MPI Operator's exit-code
 * policy). Anything else is the application's own failure (or a configuration error) and is not retried.
 */

export const FAILURE_CLASSES = ['nodeFailure', 'preemption', 'allocationFailure', 'preflightFailure', 'exitCode', 'application', 'stage'] as const;
export type FailureClass = (typeof FAILURE_CLASSES)[number];

/** Node states in which Batch has given up on a node (it runs nothing until removed or rebooted). */
export const UNUSABLE_NODE_STATES: ReadonlySet<string> = new Set(['unusable', 'starttaskfailed', 'unknown', 'offline', 'leavingpool', 'preempted']);

/** How an attempt ended, as the orchestrator saw it. */
export type AttemptEnd =
  | {
      kind: 'mpi';
      exitCode: number;
      /** Batch reported no exit code: `exitCode` is a placeholder, never a success, and no verdict repeats it. */
      noExitCode?: boolean;
      /** Batch's failure info of the task ("code: message"). */
      failure?: string;
      /** Batch put the task back to active after it had started: a node it ran on went away or rebooted. */
      requeued: boolean;
      /** Non-master nodes and their coordination commands' exit codes. */
      subtasks: { nodeId?: string; exitCode?: number }[];
    }
  | {
      kind: 'stage';
      /** The stage that gave up (Provisioning, PullingImages, StagingData, Running for the preflight). */
      stage: string;
      reason: string;
      /** The pool could not get its nodes (resize error, timeout, too many broken nodes). */
      allocation?: boolean;
      /** The preflight kept finding bad nodes: these. */
      preflightNodes?: string[];
    };

/** Each node of the attempt as the pool shows it after the failure (a node the pool no longer lists is absent). */
export interface NodeHealth {
  id: string;
  state: string;
}

export type AttemptVerdict =
  | { outcome: 'succeeded' }
  | {
      outcome: 'failed';
      failureClass: FailureClass;
      reason: string;
      /** Nodes to leave out of the next attempt (replaced in a pool we own, avoided in a reused one). */
      nodes: string[];
      exitCode?: number;
    };

/**
 * The verdict on one attempt. `attemptNodes` are the nodes it ran on (empty before provisioning found any), `health`
 * the pool's view of them after the failure (undefined when it could not be looked at), `retryExitCodes` the spec's
 * retry.exitCodes. Order matters: a node Batch gave up on explains whatever symptom it caused (a failed pull, a dead
 * rank), so node health is looked at before the symptom.
 */
export function classifyAttempt(
  end: AttemptEnd,
  attemptNodes: readonly string[],
  health: readonly NodeHealth[] | undefined,
  retryExitCodes: readonly number[],
): AttemptVerdict {
  if (end.kind === 'mpi' && end.exitCode === 0 && !end.requeued && !end.noExitCode) return { outcome: 'succeeded' };

  const lost = lostNodes(attemptNodes, health);
  // Azure took a Spot node back: not the node's fault, and pool.spot says what follows (spotPolicy.ts).
  const preempted = lost.filter((n) => n.state === 'preempted');
  if (preempted.length) {
    return {
      outcome: 'failed',
      failureClass: 'preemption',
      reason: `preemption: Azure took back Spot node(s) ${preempted.map((n) => n.id).join(', ')}`,
      nodes: lost.map((n) => n.id),
      ...exitOf(end),
    };
  }
  if (lost.length) {
    return {
      outcome: 'failed',
      failureClass: 'nodeFailure',
      reason: `node failure: ${lost.map((n) => `${n.id} ${n.state}`).join(', ')}`,
      nodes: lost.map((n) => n.id),
      ...exitOf(end),
    };
  }

  if (end.kind === 'stage') {
    if (end.allocation) return { outcome: 'failed', failureClass: 'allocationFailure', reason: `allocation failure: ${end.reason}`, nodes: [] };
    if (end.preflightNodes)
      return { outcome: 'failed', failureClass: 'preflightFailure', reason: `preflight failure: ${end.reason}`, nodes: [...end.preflightNodes] };
    return { outcome: 'failed', failureClass: 'stage', reason: `${end.stage}: ${end.reason}`, nodes: [] };
  }

  if (end.requeued) {
    // The node came back (rebooted) or cannot be told: the attempt's nodes are kept and the preflight checks them.
    return {
      outcome: 'failed',
      failureClass: 'nodeFailure',
      reason: 'node failure: Batch requeued the MPI task (a node it ran on went away or rebooted)',
      nodes: [],
      ...exitOf(end),
    };
  }

  // A coordination command that failed on some nodes but not all is those nodes' problem (the container runtime, a
  // mount); failing everywhere is the configuration's.
  const failedSubtasks = end.subtasks.filter((s) => s.nodeId && s.exitCode !== undefined && s.exitCode !== 0).map((s) => s.nodeId as string);
  const withNode = end.subtasks.filter((s) => s.nodeId && s.exitCode !== undefined);
  if (failedSubtasks.length && failedSubtasks.length < withNode.length) {
    return {
      outcome: 'failed',
      failureClass: 'nodeFailure',
      reason: `node failure: the coordination command failed on ${failedSubtasks.join(', ')} only`,
      nodes: failedSubtasks,
      exitCode: end.exitCode,
    };
  }

  const detail = end.failure ? `: ${end.failure}` : '';
  if (end.noExitCode) return { outcome: 'failed', failureClass: 'application', reason: `MPI task ended without an exit code${detail}`, nodes: [] };
  if (retryExitCodes.includes(end.exitCode)) {
    return {
      outcome: 'failed',
      failureClass: 'exitCode',
      reason: `exit code ${end.exitCode} (listed in retry.exitCodes)${detail}`,
      nodes: [],
      exitCode: end.exitCode,
    };
  }
  return { outcome: 'failed', failureClass: 'application', reason: `MPI task exited with code ${end.exitCode}${detail}`, nodes: [], exitCode: end.exitCode };
}

/** The attempt's nodes that Batch gave up on, or that left the pool. */
export function lostNodes(attemptNodes: readonly string[], health: readonly NodeHealth[] | undefined): NodeHealth[] {
  if (!health) return [];
  const byId = new Map(health.map((h) => [h.id, h]));
  return attemptNodes.map((id) => byId.get(id) ?? { id, state: 'gone' }).filter((h) => h.state === 'gone' || UNUSABLE_NODE_STATES.has(h.state));
}

function exitOf(end: AttemptEnd): { exitCode?: number } {
  return end.kind === 'mpi' && !end.noExitCode ? { exitCode: end.exitCode } : {};
}
