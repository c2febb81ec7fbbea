/**
 * The sweep's rule for containers left on reused pools (our equivalent of Batch Shipyard's `jobs cmi --delete`),
 * pure: from what the sweep observed of one finished job that ran containers on a pool we do not own, decide
 * which nodes may still hold its containers and what to do about them.
 *
 * A node is suspect when the job's Batch job ran there (its preparation task did) and the release task did not
 * verifiably remove the containers on it (it failed, never ran, or the Batch job is gone so nobody knows). Each
 * suspect node still in the pool gets one cleanup task, pinned to it, in a housekeeping Batch job; the task's exit
 * code is the verdict (0 only when none of the containers is left, see buildContainerCleanupCommand). A node
 * that left the pool took its containers with it. When every suspect node is clean (or given up on), the
 * housekeeping job is deleted and the job row is marked, so the job is never looked at again.
 */
import { createHash } from 'node:crypto';
import { batchIdFor } from '../planning/jobPlan';

/** Metadata value (hpc-cp-purpose) of the housekeeping Batch jobs this rule makes. */
export const CONTAINER_CLEANUP_PURPOSE = 'container-cleanup';
/** Cleanup tasks per node before the sweep gives up on that node (and says so on the timeline). */
export const MAX_CLEANUP_ATTEMPTS = 3;
/** A suspect node that cannot run tasks (unusable, offline, rebooting) is waited for this long after the job ended. */
export const NODE_WAIT_LIMIT_MS = 24 * 3_600_000;

/** Node states in which a task added now gets scheduled onto the node. */
const CAN_RUN_NOW = new Set(['idle', 'running']);

export interface ObservedCleanupTask {
  taskId: string;
  state: string;
  exitCode?: number;
  /** Where it ran (affinity is a hint: it may have run on another node). */
  nodeId?: string;
}

export interface ObservedContainerJob {
  jobId: string;
  /** When the job row last changed (it is finished: about when the job ended). */
  endedAt: string;
  poolId: string;
  /** Names of the containers the job ran (its release task removes these). */
  containers: string[];
  /** The job's Batch job: absent when it never got one. */
  batchJobId?: string;
  /** The Batch job's state; undefined when it does not exist (deleted, or never created). */
  batchJobState?: string;
  /** Per node where the Batch job ran: its release task's outcome (absent = the release task did not run there). */
  release?: { nodeId: string; state?: string; exitCode?: number }[];
  /** Nodes the MPI task ran on, from the job's result (used when the Batch job is gone). */
  ranOn?: string[];
  /** The pool's nodes now; undefined when the pool no longer exists. */
  poolNodes?: { id: string; state: string; affinityId: string }[];
  /** The housekeeping Batch job, when it exists, and its tasks. */
  cleanup?: { batchJobId: string; tasks: ObservedCleanupTask[] };
}

export type ContainerAction =
  | {
      kind: 'cleanContainers';
      jobId: string;
      poolId: string;
      cleanupJobId: string;
      containers: string[];
      tasks: { taskId: string; nodeId: string; affinityId: string }[];
      reason: string;
    }
  | { kind: 'finishContainerCleanup'; jobId: string; cleanupJobId?: string; reason: string };

/** The housekeeping Batch job for one job's containers (Batch ids are at most 64 characters). */
export function cleanupJobIdFor(jobId: string): string {
  return batchIdFor('hpccmi', jobId);
}

/** One cleanup task per node and attempt; the node id goes through a hash (real node ids are up to 70 characters). */
export function cleanupTaskIdFor(nodeId: string, attempt: number): string {
  return `${cleanupTaskPrefix(nodeId)}${attempt}`;
}

function cleanupTaskPrefix(nodeId: string): string {
  return `rm-${shortHash(nodeId)}-`;
}

function shortHash(s: string): string {
  return createHash('sha256').update(s).digest('hex').slice(0, 10);
}

/** Nodes that may still hold the job's containers, or undefined while that cannot be known yet. */
export function suspectNodes(o: ObservedContainerJob): { nodes: string[]; why: string } | undefined {
  if (!o.batchJobId) return { nodes: [], why: 'the job never got a Batch job, so no container ran' };
  if (o.batchJobState !== undefined) {
    // Release tasks run when the Batch job ends: until it has, nothing can be said.
    if (o.batchJobState !== 'completed') return undefined;
    const failed = (o.release ?? []).filter((r) => !(r.state === 'completed' && r.exitCode === 0)).map((r) => r.nodeId);
    return {
      nodes: [...new Set(failed)].sort(),
      why: failed.length ? 'the job release task did not remove its containers there' : 'the job release task removed its containers on every node',
    };
  }
  // The Batch job is gone with its release records: every node the job ran on is suspect.
  if (o.ranOn && o.ranOn.length) return { nodes: [...new Set(o.ranOn)].sort(), why: 'its Batch job is gone, so nothing shows the release task removed them' };
  return { nodes: (o.poolNodes ?? []).map((n) => n.id).sort(), why: 'its Batch job is gone and the nodes it ran on are unknown' };
}

export function planContainerCleanup(o: ObservedContainerJob, nowMs: number): ContainerAction | undefined {
  const cleanupJobId = o.cleanup?.batchJobId;
  const finish = (reason: string): ContainerAction => ({ kind: 'finishContainerCleanup', jobId: o.jobId, cleanupJobId, reason });
  if (!o.poolNodes) return finish(`pool ${o.poolId} is gone, and its nodes with it`);
  const suspects = suspectNodes(o);
  if (!suspects) return undefined;
  const inPool = new Map(o.poolNodes.map((n) => [n.id, n]));
  const present = suspects.nodes.filter((id) => inPool.has(id));
  const gone = suspects.nodes.filter((id) => !inPool.has(id));
  if (present.length === 0) {
    return finish(suspects.nodes.length ? `${suspects.why}; those nodes (${suspects.nodes.join(', ')}) have left the pool` : suspects.why);
  }

  const tasks = o.cleanup?.tasks ?? [];
  // A cleanup task cleans the node it ran on, whichever node it was pinned to (the command is the same).
  const cleaned = new Set(tasks.filter((t) => t.state === 'completed' && t.exitCode === 0 && t.nodeId).map((t) => t.nodeId as string));
  const toAdd: { taskId: string; nodeId: string; affinityId: string }[] = [];
  const waiting: string[] = [];
  const givenUp: string[] = [];
  const sinceEnd = nowMs - Date.parse(o.endedAt);
  for (const id of present) {
    if (cleaned.has(id)) continue;
    const mine = tasks.filter((t) => t.taskId.startsWith(cleanupTaskPrefix(id)));
    const node = inPool.get(id)!;
    if (mine.some((t) => t.state !== 'completed')) waiting.push(id);
    else if (mine.length >= MAX_CLEANUP_ATTEMPTS) givenUp.push(`${id} (${mine.length} cleanup tasks failed)`);
    else if (CAN_RUN_NOW.has(node.state)) toAdd.push({ taskId: cleanupTaskIdFor(id, mine.length + 1), nodeId: id, affinityId: node.affinityId });
    else if (sinceEnd <= NODE_WAIT_LIMIT_MS) waiting.push(id);
    else givenUp.push(`${id} (${node.state} for longer than ${NODE_WAIT_LIMIT_MS / 3_600_000} h)`);
  }

  if (toAdd.length) {
    return {
      kind: 'cleanContainers',
      jobId: o.jobId,
      poolId: o.poolId,
      cleanupJobId: cleanupJobId ?? cleanupJobIdFor(o.jobId),
      containers: o.containers,
      tasks: toAdd,
      reason: `${suspects.why}: cleanup task on ${toAdd.map((t) => t.nodeId).join(', ')}`,
    };
  }
  if (waiting.length) return undefined;
  const clean = present.filter((id) => cleaned.has(id));
  const parts = [
    clean.length ? `containers removed by cleanup tasks on ${clean.join(', ')}` : '',
    gone.length ? `nodes ${gone.join(', ')} left the pool` : '',
    givenUp.length ? `gave up on ${givenUp.join(', ')}` : '',
  ].filter(Boolean);
  return finish(`${suspects.why}; ${parts.join('; ')}`);
}
