/**
 * What the mpiJob orchestration and its activities exchange. Everything here is plain JSON: it is written
 * to the orchestration history and replayed, so no classes, Dates or functions.
 */
import type { JobCost } from '../shared/ops/cost';

export type StageName =
  | 'Submitted'
  | 'Provisioning'
  | 'PullingImages'
  | 'StagingData'
  | 'Running'
  | 'CleaningUp'
  | 'Succeeded'
  | 'Failed'
  | 'Cancelled';

export interface PollSettings {
  initialMs: number;
  maxMs: number;
  factor: number;
}

/** Settings resolved from app configuration at intake time, so the orchestrator never reads the environment. */
export interface PipelineSettings {
  poll: PollSettings;
  /** Staging storage account names shards are spread over. */
  stagingAccounts: string[];
  /** How many shard copies run at once. */
  copyConcurrency: number;
  /** Extra validity of node SAS URLs beyond the job's wall-clock limit (minutes). */
  sasMarginMinutes: number;
  /** Attempts for a per-node task (pull, download) before the job fails. */
  nodeTaskMaxAttempts: number;
}

export interface Counter {
  done: number;
  total: number;
}

/** The orchestration's custom status: what `GET /api/jobs/{id}` shows as live progress. */
export interface PipelineStatus {
  stage: StageName;
  progress: {
    nodesReady?: Counter;
    imagesPulled?: Counter;
    shardsStaged?: Counter;
    shardsDownloaded?: Counter;
    mpi?: { state: string; startedAt?: string };
    cleanup?: { done: string[] };
  };
  /** Per-node detail for the dashboard: node id -> state in the pipeline. */
  nodes?: Record<string, NodeProgress>;
  resources: {
    poolId?: string;
    batchJobId?: string;
    stagingContainers?: { account: string; container: string }[];
  };
  lastError?: string;
  updatedAt?: string;
}

export type NodeProgress = 'allocating' | 'idle' | 'pulling' | 'pulled' | 'downloading' | 'ready' | 'running' | 'done' | 'failed';

export interface NodeRef {
  id: string;
  ipAddress: string;
  affinityId: string;
}

export interface ProvisionedPool {
  poolId: string;
  createdByUs: boolean;
  nodes: NodeRef[];
}

export interface JobOutcome {
  state: 'Succeeded' | 'Failed' | 'Cancelled';
  reason?: string;
  exitCode?: number;
  result?: unknown;
  logs?: { node: string; stdout: string; stderr: string }[];
  timings: Record<string, { startedAt: string; endedAt?: string }>;
  nodeMinutes?: number;
  /** Node-minutes per stage and the estimated cost (shared/ops/cost.ts), when a pool was allocated. */
  cost?: JobCost;
}

/** Activity names: one I/O thing each, all idempotent (they look before they create). */
export const Activities = {
  jobTransition: 'jobTransition',
  jobFinish: 'jobFinish',
  poolCreate: 'poolCreate',
  poolInspect: 'poolInspect',
  poolObserve: 'poolObserve',
  poolRemoveNodes: 'poolRemoveNodes',
  poolResize: 'poolResize',
  poolDelete: 'poolDelete',
  batchJobCreate: 'batchJobCreate',
  batchJobAutoComplete: 'batchJobAutoComplete',
  batchJobTerminate: 'batchJobTerminate',
  nodeTasksAdd: 'nodeTasksAdd',
  nodeTasksObserve: 'nodeTasksObserve',
  inputsList: 'inputsList',
  shardCopy: 'shardCopy',
  shardUrls: 'shardUrls',
  stagedDataDelete: 'stagedDataDelete',
  costPrice: 'costPrice',
  mpiTaskAdd: 'mpiTaskAdd',
  mpiTaskObserve: 'mpiTaskObserve',
  mpiResultCollect: 'mpiResultCollect',
} as const;

export interface JobTransitionInput {
  jobId: string;
  to: StageName;
  reason: string;
  patch?: { batchPoolId?: string; batchJobId?: string; stage?: string };
}

export interface JobFinishInput {
  jobId: string;
  outcome: JobOutcome;
}

export interface PoolInspection {
  exists: boolean;
  state?: string;
  vmSize?: string;
  enableInterNodeCommunication?: boolean;
  taskSlotsPerNode?: number;
  ownedByJob?: string;
}

export interface ResourceFileRef {
  httpUrl: string;
  filePath: string;
}

/** A task pinned (by affinity, which Batch treats as a hint) to one node. */
export interface NodeTaskSpec {
  id: string;
  affinityId: string;
  commandLine: string;
  resourceFiles?: ResourceFileRef[];
  environment?: { name: string; value: string }[];
  maxWallClockSeconds?: number;
}

export interface NodeTaskObservation {
  id: string;
  state: 'active' | 'preparing' | 'running' | 'completed' | 'missing';
  exitCode?: number;
  /** Where it really ran (Batch affinity is only a hint). */
  nodeId?: string;
  failure?: string;
  /** The end of stderr (and stdout) for failed tasks: the registry or download message. */
  outputTail?: string;
}

export interface MpiTaskObservation {
  state: 'active' | 'preparing' | 'running' | 'completed' | 'missing';
  startTime?: string;
  endTime?: string;
}

export interface MpiResult {
  exitCode: number;
  failure?: string;
  /** Per node: exit code of the subtask (coordination command; the master's includes the application). */
  subtasks: { id: number; nodeId?: string; exitCode?: number; state: string }[];
  logs: { node: string; stdout: string; stderr: string }[];
  /** The last lines of the master's stdout and stderr (kept: the files go away with the pool). */
  stdoutTail: string;
  stderrTail?: string;
  startTime?: string;
  endTime?: string;
}
