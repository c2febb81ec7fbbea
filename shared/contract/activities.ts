/**
 * The activities of the mpiJob orchestration: name → input → output, declared once. The orchestrator calls them
 * through a typed helper and each activity registers through one (orchestrations/runtime/activityCalls.ts), so a
 * wrong name, input or result type is a compile error. Every input and output is plain JSON: it is written to the
 * orchestration history and replayed.
 *
 * Each activity does one I/O thing and is idempotent (it looks before it creates), because Durable Functions
 * runs an activity again when the host dies between its effect and the history write.
 */
import type { JobState } from '../state/states';
import type { PoolInspection, NodeTaskSpec, TaskSnapshot } from '../batch';
import type { PoolCreateRequest } from '../planning/jobPlan';
import type { ImageBlobRef, MpiTaskRequestShape } from '../planning/mpiTaskRequest';
import type { PoolObservation } from '../planning/provisionPolicy';
import type { ShardToCopy, ShardCopyResult } from '../storage/shardCopy';
import type { ListedInputBlob } from '../storage/listing';
import type { PriceQuote } from '../ops/cost';
import type { PreflightRun } from '../planning/preflight';
import type { JsonValue } from '../state/record';
import type { JobOutcome, MpiResult } from './jobResult';
import type { StagingContainerRef } from './progress';

/** A node the job runs on, as provisioning found it. */
export interface NodeRef {
  id: string;
  ipAddress: string;
  affinityId: string;
}

export type TaskState = TaskSnapshot['state'];

export interface JobTransitionInput {
  jobId: string;
  to: JobState;
  reason: string;
  patch?: { batchPoolId?: string; batchJobId?: string };
}

export interface JobFinishInput {
  jobId: string;
  outcome: JobOutcome;
}

export interface BatchJobCreateInput {
  jobId: string;
  batchJobId: string;
  poolId: string;
  releaseCommandLine: string;
}

/** A task pinned (by affinity, which Batch treats as a hint) to one node; the activity runs it elevated. */
export type NodeTaskRequest = Pick<NodeTaskSpec, 'id' | 'affinityId' | 'commandLine' | 'resourceFiles' | 'environment' | 'maxWallClockSeconds'>;

export interface NodeTaskObservation {
  id: string;
  state: TaskState;
  exitCode?: number;
  /** Where it really ran (Batch affinity is only a hint). */
  nodeId?: string;
  failure?: string;
  /** The end of stderr for failed tasks: the registry or download message. */
  outputTail?: string;
}

export interface MpiTaskObservation {
  state: TaskState;
  startTime?: string;
  endTime?: string;
  /** How often Batch put the task back to active after it started (a node it ran on went away or rebooted). */
  requeueCount?: number;
}

/** A note on the job's timeline (not a state change); `eventId` and `at` (the orchestration's time) make a repeated call write it once. */
export interface JobNoteInput {
  jobId: string;
  eventId: string;
  at: string;
  reason: string;
  data?: JsonValue;
}

export interface InputSource {
  account: string;
  container: string;
  prefix: string;
}

export interface ShardUrlRequest {
  shards: { id: string; account: string; container: string; blobName: string }[];
  /** ISO time the read-only SAS URLs expire. */
  expiresAt: string;
}

export interface BatchTaskRef {
  batchJobId: string;
  taskId: string;
}

export interface ActivityContract {
  /** Records a stage change on the job row (a repeated call for the same state changes nothing). */
  jobTransition(input: JobTransitionInput): void;
  /** Records the final state, the result and the error, if any (a repeat for a finished job changes nothing). */
  jobFinish(input: JobFinishInput): void;
  /** Appends a note to the job's timeline, e.g. an attempt that failed and the retry that follows. */
  jobNote(input: JobNoteInput): void;
  costPrice(input: { vmSize: string }): PriceQuote;
  poolCreate(input: PoolCreateRequest): { created: boolean };
  poolInspect(input: { poolId: string }): PoolInspection;
  poolObserve(input: { poolId: string }): PoolObservation;
  poolRemoveNodes(input: { poolId: string; nodeIds: string[] }): void;
  poolResize(input: { poolId: string; target: number }): void;
  poolDelete(input: { poolId: string }): { deleted: boolean };
  /** Returns the Batch job id. */
  batchJobCreate(input: BatchJobCreateInput): string;
  batchJobAutoComplete(input: { batchJobId: string }): void;
  /** Returns what happened ("terminated", "already completed", "gone"). */
  batchJobTerminate(input: { batchJobId: string; reason?: string }): string;
  nodeTasksAdd(input: { batchJobId: string; tasks: NodeTaskRequest[] }): void;
  nodeTasksObserve(input: { batchJobId: string; taskIds: string[] }): NodeTaskObservation[];
  inputsList(input: { inputs: InputSource[] }): ListedInputBlob[];
  shardCopy(input: { jobId: string; shard: ShardToCopy & { account: string } }): ShardCopyResult;
  /** Shard id → read-only SAS URL. */
  shardUrls(input: ShardUrlRequest): Record<string, string>;
  /** Read-only SAS URLs of SIF files in blob storage, in order (the data-access policy applies). */
  imageBlobUrls(input: { blobs: ImageBlobRef[]; expiresAt: string }): string[];
  /** Returns how many containers were deleted (already gone is fine). */
  stagedDataDelete(input: { containers: StagingContainerRef[] }): number;
  mpiTaskAdd(input: MpiTaskRequestShape): void;
  mpiTaskObserve(input: BatchTaskRef): MpiTaskObservation;
  mpiResultCollect(input: BatchTaskRef): MpiResult;
  /** Ends the MPI task of an attempt that is given up (Batch requeued it after a node failure). Completed or gone is fine. */
  mpiTaskTerminate(input: BatchTaskRef): void;
  /** Adds the preflight check, a multi-instance task over the attempt's nodes (shared/planning/preflight.ts). */
  preflightTaskAdd(input: MpiTaskRequestShape): void;
  /** The check's state (mpiTaskObserve for the preflight task: the MPI task's observers never see the check). */
  preflightObserve(input: BatchTaskRef): MpiTaskObservation;
  /** The check's exit code and what its master printed, parsed. */
  preflightCollect(input: BatchTaskRef): PreflightRun;
}

export type ActivityName = keyof ActivityContract;
export type ActivityInput<N extends ActivityName> = Parameters<ActivityContract[N]>[0];
export type ActivityOutput<N extends ActivityName> = ReturnType<ActivityContract[N]>;
export type ActivityHandler<N extends ActivityName> = (input: ActivityInput<N>) => Promise<ActivityOutput<N>>;

/** Every activity name, checked by the compiler against the contract (a missing or extra name does not compile). */
const NAMES: Record<ActivityName, true> = {
  jobTransition: true, jobFinish: true, jobNote: true, costPrice: true,
  poolCreate: true, poolInspect: true, poolObserve: true, poolRemoveNodes: true, poolResize: true, poolDelete: true,
  batchJobCreate: true, batchJobAutoComplete: true, batchJobTerminate: true,
  nodeTasksAdd: true, nodeTasksObserve: true,
  inputsList: true, shardCopy: true, shardUrls: true, imageBlobUrls: true, stagedDataDelete: true,
  mpiTaskAdd: true, mpiTaskObserve: true, mpiResultCollect: true,
  mpiTaskTerminate: true, preflightTaskAdd: true, preflightObserve: true, preflightCollect: true,
};
export const ACTIVITY_NAMES: readonly ActivityName[] = Object.keys(NAMES).filter((n): n is ActivityName => n in NAMES);
