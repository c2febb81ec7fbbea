/**
 * The pipeline's live progress: what the mpiJob orchestration writes as its custom status and what
 * `GET /api/jobs/{id}`, the CLI and the dashboard read. Plain JSON (it is replayed and stored by Durable).
 */
import type { JobState } from '../state/states';
import type { NodePreflight } from './preflight';

/**
 * Per-node state in the pipeline, in the order a node normally goes through them. `ended` and `deleted` are only
 * written when the job ended (shared/core/contract/endedProgress.ts): the node's part stopped before done/failed (a cancel,
 * a failure elsewhere), and its pool was kept (`ended`) or deleted (`deleted`).
 */
export const NODE_PROGRESS_STATES = [
  'allocating',
  'idle',
  'pulling',
  'pulled',
  'downloading',
  'ready',
  'running',
  'done',
  'failed',
  'ended',
  'deleted',
] as const;
export type NodeProgress = (typeof NODE_PROGRESS_STATES)[number];

export interface Counter {
  done: number;
  total: number;
}

export interface StagingContainerRef {
  account: string;
  container: string;
}

/** A queued job's place, as its run last learned it. */
export interface QueueProgress {
  waitingFor: 'dependencies' | 'admission';
  /** Dependencies not yet at their condition. */
  pending?: string[];
  /** 1-based place in its queue and among all waiting jobs. */
  position?: number;
  positionOverall?: number;
  /** Why it waits (the limit that keeps it out). */
  reason?: string;
}

export interface PipelineStatus {
  /** The job state the pipeline is in (the same names as the job row's state). */
  stage: JobState;
  progress: {
    nodesReady?: Counter;
    imagesPulled?: Counter;
    shardsStaged?: Counter;
    shardsDownloaded?: Counter;
    mpi?: { state: string; startedAt?: string };
    /** Nodes whose outputs (every-node files, task logs) were uploaded after the MPI task. */
    outputsUploaded?: Counter;
    /** The attempt running now (retry by failure class) and the attempts allowed. */
    attempt?: { current: number; max: number; lastFailure?: string };
    /** The preflight check: its state, the round, and per node the figures of the last check. */
    preflight?: { state: 'running' | 'passed' | 'replacing' | 'failed'; round: number; pingPong?: string; nodes?: Record<string, NodePreflight> };
    cleanup?: { done: string[] };
  };
  /** Per-node detail for the dashboard: node id -> state in the pipeline. Left out when it does not fit (fitStatus). */
  nodes?: Record<string, NodeProgress>;
  /** Instead of `nodes` when the per-node detail does not fit the status: how many nodes are in each state. */
  nodeCounts?: Partial<Record<NodeProgress, number>>;
  /** While the job is Queued. */
  queue?: QueueProgress;
  resources: {
    poolId?: string;
    batchJobId?: string;
    stagingContainers?: StagingContainerRef[];
  };
  /** What the job is billed for now and at what price, so a reader can show the running cost (nodes × price × time since). */
  billing?: { nodes: number; since?: string; pricePerNodeHour?: number; currency: string; priceSource: string };
  lastError?: string;
  updatedAt?: string;
}

/**
 * Azure fails an orchestration whose custom status is over 16 KB of UTF-16 text (the extension's
 * MessagePayloadDataConverter: 8,703 characters of JSON at most). The published status keeps under this budget.
 */
export const STATUS_BUDGET_CHARS = 8_000;
const MAX_TEXT_CHARS = 600;
const MAX_LISTED = 20;

/**
 * The status as published: whole when it fits the budget. Otherwise the parts that grow with the job give way, in
 * this order: the per-node states become counts per state (100 Azure node ids alone take about 8,000 characters),
 * the preflight figures keep only the failing nodes and then none, long texts and lists are cut. Pure, so the
 * orchestrator can call it on every report.
 */
export function fitStatus(status: PipelineStatus): PipelineStatus {
  if (size(status) <= STATUS_BUDGET_CHARS) return status;
  const { nodes, ...rest } = status;
  const cut: PipelineStatus = {
    ...rest,
    ...(nodes ? { nodeCounts: countStates(nodes) } : {}),
    ...(status.lastError ? { lastError: clip(status.lastError) } : {}),
    ...(status.queue?.pending ? { queue: { ...status.queue, pending: status.queue.pending.slice(0, MAX_LISTED) } } : {}),
    progress: {
      ...status.progress,
      ...(status.progress.attempt?.lastFailure ? { attempt: { ...status.progress.attempt, lastFailure: clip(status.progress.attempt.lastFailure) } } : {}),
      ...(status.progress.cleanup ? { cleanup: { done: status.progress.cleanup.done.slice(0, MAX_LISTED) } } : {}),
    },
  };
  const preflight = cut.progress.preflight;
  if (preflight?.nodes) {
    const failing = Object.fromEntries(
      Object.entries(preflight.nodes)
        .filter(([, n]) => !n.ok)
        .slice(0, MAX_LISTED),
    );
    cut.progress.preflight = { ...preflight, nodes: failing };
    if (size(cut) > STATUS_BUDGET_CHARS) cut.progress.preflight = { ...preflight, nodes: undefined };
  }
  return cut;
}

function countStates(nodes: Record<string, NodeProgress>): Partial<Record<NodeProgress, number>> {
  const counts: Partial<Record<NodeProgress, number>> = {};
  for (const state of Object.values(nodes)) counts[state] = (counts[state] ?? 0) + 1;
  return counts;
}

const size = (s: PipelineStatus): number => JSON.stringify(s).length;
const clip = (text: string): string => (text.length <= MAX_TEXT_CHARS ? text : `${text.slice(0, MAX_TEXT_CHARS - 1)}…`);
