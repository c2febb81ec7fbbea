/**
 * The pipeline's live progress: what the mpiJob orchestration writes as its custom status and what
 * `GET /api/jobs/{id}`, the CLI and the dashboard read. Plain JSON (it is replayed and stored by Durable).
 */
import type { JobState } from '../state/states';
import type { NodePreflight } from './preflight';

/** Per-node state in the pipeline, in the order a node normally goes through them. */
export const NODE_PROGRESS_STATES = ['allocating', 'idle', 'pulling', 'pulled', 'downloading', 'ready', 'running', 'done', 'failed'] as const;
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
  /** Per-node detail for the dashboard: node id -> state in the pipeline. */
  nodes?: Record<string, NodeProgress>;
  /** While the job is Queued. */
  queue?: QueueProgress;
  resources: {
    poolId?: string;
    batchJobId?: string;
    stagingContainers?: StagingContainerRef[];
  };
  lastError?: string;
  updatedAt?: string;
}
