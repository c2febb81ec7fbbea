/**
 * The activities of the mpiJob orchestration: name → input → output, declared once. The orchestrator calls them
 * through a typed helper and each activity registers through one (orchestrations/runtime/activityCalls.ts), so a
 * wrong name, input or result type is a compile error. Every input and output is plain JSON: it is written to the
 * orchestration history and replayed.
 *
 * Each activity does one I/O thing and is idempotent (it looks before it creates), because Durable Functions
 * runs an activity again when the host dies between its effect and the history write.
 */
import type { JobState, TerminalState } from '../state/states';
import type { PoolInspection, NodeTaskSpec, TaskSnapshot } from '../../adapters/batch';

/** The admission-time verdict on a reused pool: allowed, or refused with the door's "not yours" sentence. */
export type PoolAccessVerdict = { allowed: true } | { allowed: false; reason: string };
import type { PoolCreateRequest } from '../planning/jobPlan';
import type { ImageBlobRef } from '../planning/mpiTaskRequest';
import type { MpiTaskRequest } from './batchTasks';
import type { SecretEnvironmentRef } from './secretEnvironment';
import type { SourceCheck, SourceMiss } from '../planning/sourcesCheck';
import type { ImageEvidenceAnswer, ImageEvidenceRequest } from '../planning/imageEvidence';
import type { NodeFileSource, NodeResourceFile, OutputsPlan } from '../planning/workloadData';
import type { ExpectedUploads } from '../planning/outputsCheck';
import type { PoolObservation } from '../planning/provisionPolicy';
import type { ShardToCopy, ShardCopyResult } from '../../adapters/storage/shardCopy';
import type { ListedInputBlob } from '../../adapters/storage/listing';
import type { PriceQuote } from '../ops/cost';
import type { AdmissionStatus } from '../scheduling/ledger';
import type { DependencyStatus } from '../scheduling/dependencies';
import type { PreflightRun } from '../planning/preflight';
import type { JsonValue } from '../state/record';
import type { JobOutcome, MpiResult, OutputsResult } from './jobResult';
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
  patch?: { batchPoolId?: string; batchJobId?: string; endingAs?: TerminalState };
}

/** A node's failed start task, as Batch's node file API shows it (startup/stderr.txt). */
export interface StartTaskFailure {
  nodeId: string;
  exitCode?: number;
  failure?: string;
  /** The end of the start task's stderr. */
  stderr?: string;
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

export type { SecretEnvironmentRef } from './secretEnvironment';

/** A task pinned (by affinity, which Batch treats as a hint) to one node; the activity runs it elevated. */
export type NodeTaskRequest = Pick<
  NodeTaskSpec,
  'id' | 'affinityId' | 'commandLine' | 'resourceFiles' | 'outputFiles' | 'environment' | 'maxWallClockSeconds'
> & {
  secretEnvironment?: SecretEnvironmentRef[];
};

export interface NodeTaskObservation {
  id: string;
  state: TaskState;
  exitCode?: number;
  /** Where it really ran (Batch affinity is only a hint). */
  nodeId?: string;
  failure?: string;
  /** The end of stderr for failed tasks: the registry or download message. */
  outputTail?: string;
  /** Image digests the task printed (shared/core/mpi/imageTransfer.ts DIGEST_LINE), when asked for and it succeeded. */
  digests?: string[];
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

export interface WorkloadUrlsRequest {
  /** Files for every node; blob sources get a read-only SAS. */
  files: NodeFileSource[];
  /**
   * The outputs' container and the job's outputs prefix: a create/write SAS for Batch's output file uploads, on the
   * prefix alone where the account has a hierarchical namespace (a directory SAS), else on the container. Runs
   * started before the prefix was sent have none: they keep the container SAS.
   */
  outputs?: { account: string; container: string; prefix?: string };
  /** ISO time every SAS expires. */
  expiresAt: string;
}

export interface WorkloadUrls {
  /** The MPI task's commonResourceFiles, in the order of `files` (a prefix: one per blob under it, in name order). */
  files: NodeResourceFile[];
  outputsContainerUrl?: string;
}

export interface OutputsListRequest {
  account: string;
  container: string;
  prefix: string;
  /** Upload failures seen by the orchestrator, recorded with the listing. */
  errors: string[];
}

export interface BatchTaskRef {
  batchJobId: string;
  taskId: string;
}

export interface MpiTaskUploadsRequest extends BatchTaskRef {
  /** The MPI task's own output files (without the container URL), as the plan made them. */
  master: OutputsPlan['master'];
  /** The exit code the upload conditions are judged by (the MPI task's). */
  exitCode: number;
}

export interface NodeTaskUploadsRequest {
  poolId: string;
  nodeId: string;
  /** The MPI task's directory on that node (its subtask's), relative to the node root: the upload task's source. */
  taskRootDirectory: string;
  /** The node upload task's output files (without the container URL), as the plan made them. */
  outputFiles: Pick<OutputsPlan['master'][number], 'filePattern' | 'path'>[];
}

/** The default logs of the nodes' upload tasks, checked by one listing (orchestrations/stages/workloadData.ts). */
export interface NodeLogsMissingRequest {
  account: string;
  container: string;
  /** The prefix every node's logs are under (`<job prefix>/logs/nodes/`); the node's id and a file name follow. */
  prefix: string;
  nodes: string[];
  /** The files each node's logs hold whatever its task did (Batch writes a task's stdout.txt and stderr.txt). */
  files: string[];
}

export interface OutputsMissingRequest {
  account: string;
  container: string;
  /** Blob names (container-relative) that must exist. */
  names: string[];
}

export type { AdmissionStatus, DependencyStatus };

export interface ActivityContract {
  /**
   * Asks admission for the job (its claim comes from its row): enqueues it unless it holds a grant or a refusal,
   * runs a pass, and tells the jobs the pass admitted or refused (the admission event). Answers where the job stands.
   */
  admissionRequest(input: { jobId: string }): AdmissionStatus;
  /** Gives back what the job held, or its place in the queue, and runs a pass that lets others in. */
  admissionRelease(input: { jobId: string }): void;
  /** Where the job's dependencies (spec.dependsOn) stand, from its parents' rows. */
  dependenciesCheck(input: { jobId: string }): DependencyStatus;
  /** After the job's end is recorded: tells the jobs that depend on it (and on its array), and updates its array's row. */
  jobEnded(input: { jobId: string }): void;
  /** Records a stage change on the job row (a repeated call for the same state changes nothing). */
  jobTransition(input: JobTransitionInput): void;
  /** Records the final state, the result and the error, if any (a repeat for a finished job changes nothing). */
  jobFinish(input: JobFinishInput): void;
  /** Appends a note to the job's timeline, e.g. an attempt that failed and the retry that follows. */
  jobNote(input: JobNoteInput): void;
  costPrice(input: { vmSize: string }): PriceQuote;
  poolCreate(input: PoolCreateRequest): { created: boolean };
  /**
   * Reads a pool the job names (pool.poolId). With `jobId`, also judges again whether that job's owner may use it, as
   * the pool's metadata says now (shared/core/intake/poolAccess.ts): `access`. Histories from before the check have none.
   */
  poolInspect(input: { poolId: string; jobId?: string }): PoolInspection & { access?: PoolAccessVerdict };
  poolObserve(input: { poolId: string }): PoolObservation;
  /** Each node's start task exit code, failure and stderr (its end), read before the node is removed. */
  startTaskFailures(input: { poolId: string; nodeIds: string[] }): StartTaskFailure[];
  poolRemoveNodes(input: { poolId: string; nodeIds: string[] }): void;
  poolResize(input: { poolId: string; target: number; lowPriority?: number }): void;
  poolDelete(input: { poolId: string }): { deleted: boolean };
  /** Returns the Batch job id. */
  batchJobCreate(input: BatchJobCreateInput): string;
  batchJobAutoComplete(input: { batchJobId: string }): void;
  /** Returns what happened ("terminated", "already completed", "gone"). */
  batchJobTerminate(input: { batchJobId: string; reason?: string }): string;
  nodeTasksAdd(input: { batchJobId: string; tasks: NodeTaskRequest[] }): void;
  /**
   * `digests`: how many image digests each successful task printed on stdout (image transfers), read back; `digestsOf`:
   * only these tasks' (the others' digests are known: they checked them against the pinned or their source's), so a
   * look reads at most the registry seeds' stdout, not one per node. Absent: every successful task's.
   */
  nodeTasksObserve(input: { batchJobId: string; taskIds: string[]; digests?: number; digestsOf?: string[] }): NodeTaskObservation[];
  inputsList(input: { inputs: InputSource[] }): ListedInputBlob[];
  /** Which of the job's sources (shared/core/planning/sourcesCheck.ts) are missing, looked up before any pool exists. */
  sourcesMissing(input: { checks: SourceCheck[] }): SourceMiss[];
  /** The MPI evidence of the job's image, read from its registry before any pool exists (shared/core/planning/imageEvidence.ts). */
  imageEvidence(input: ImageEvidenceRequest): ImageEvidenceAnswer;
  shardCopy(input: { jobId: string; shard: ShardToCopy & { account: string } }): ShardCopyResult;
  /** Shard id → read-only SAS URL. */
  shardUrls(input: ShardUrlRequest): Record<string, string>;
  /** Read-only SAS URLs of SIF files in blob storage, in order (the data-access policy applies). */
  imageBlobUrls(input: { blobs: ImageBlobRef[]; expiresAt: string }): string[];
  /** Returns how many containers were deleted (already gone is fine). */
  stagedDataDelete(input: { containers: StagingContainerRef[] }): number;
  mpiTaskAdd(input: MpiTaskRequest): void;
  mpiTaskObserve(input: BatchTaskRef): MpiTaskObservation;
  mpiResultCollect(input: BatchTaskRef): MpiResult;
  /** SAS URLs for the files every node downloads and for the outputs' container (data-access policy checked). */
  workloadUrls(input: WorkloadUrlsRequest): WorkloadUrls;
  /** What landed under the job's outputs prefix, with sizes and plain URLs. */
  outputsList(input: OutputsListRequest): OutputsResult;
  /** The blobs the MPI task's own output files must have produced, from the files in its directory on the master. */
  mpiTaskUploads(input: MpiTaskUploadsRequest): ExpectedUploads;
  /** The blobs a node's upload task must have produced, from the files below the MPI task's directory on that node. */
  nodeTaskUploads(input: NodeTaskUploadsRequest): ExpectedUploads;
  /** Which of these blobs are not in the container (looked up one by one). */
  outputsMissing(input: OutputsMissingRequest): string[];
  /** Which of the nodes' log blobs are not in the container: one listing under the prefix (a request per 5,000 blobs), not a request per node. */
  nodeLogsMissing(input: NodeLogsMissingRequest): string[];
  /** Ends the MPI task of an attempt that is given up (Batch requeued it after a node failure). Completed or gone is fine. */
  mpiTaskTerminate(input: BatchTaskRef): void;
  /** Adds the preflight check, a multi-instance task over the attempt's nodes (shared/core/planning/preflight.ts). */
  preflightTaskAdd(input: MpiTaskRequest): void;
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
  admissionRequest: true,
  admissionRelease: true,
  dependenciesCheck: true,
  jobEnded: true,
  jobTransition: true,
  jobFinish: true,
  jobNote: true,
  costPrice: true,
  poolCreate: true,
  poolInspect: true,
  poolObserve: true,
  startTaskFailures: true,
  poolRemoveNodes: true,
  poolResize: true,
  poolDelete: true,
  batchJobCreate: true,
  batchJobAutoComplete: true,
  batchJobTerminate: true,
  nodeTasksAdd: true,
  nodeTasksObserve: true,
  inputsList: true,
  sourcesMissing: true,
  imageEvidence: true,
  shardCopy: true,
  shardUrls: true,
  imageBlobUrls: true,
  stagedDataDelete: true,
  mpiTaskAdd: true,
  mpiTaskObserve: true,
  mpiResultCollect: true,
  workloadUrls: true,
  outputsList: true,
  mpiTaskUploads: true,
  nodeTaskUploads: true,
  outputsMissing: true,
  nodeLogsMissing: true,
  mpiTaskTerminate: true,
  preflightTaskAdd: true,
  preflightObserve: true,
  preflightCollect: true,
};
export const ACTIVITY_NAMES: readonly ActivityName[] = Object.keys(NAMES).filter((n): n is ActivityName => n in NAMES);
