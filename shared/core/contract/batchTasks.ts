/**
 * The multi-instance task the pipeline adds to a Batch job (the MPI run, the preflight check), declared once:
 * planning builds it (shared/core/planning/mpiTaskRequest.ts, preflight.ts), the activity map carries it
 * (`mpiTaskAdd`, `preflightTaskAdd`) and the Batch adapter turns it into Batch's TaskAddParameter in one function
 * (shared/adapters/batch/mpiTask.ts buildMpiTaskParameter), with nothing copied field by field in between.
 *
 * It is an activity input, so it is written to the orchestration history and replayed by running orchestrations: its
 * JSON is a compatibility surface. A field may be added (optional); a field renamed or removed needs the adapter to
 * keep reading the old form (tests/unit/taskShape.test.ts holds a history-form input).
 */

/** A Batch resource file, as a task request carries it (exactly one of httpUrl and storageContainerUrl). */
export interface NodeResourceFile {
  httpUrl?: string;
  storageContainerUrl?: string;
  blobPrefix?: string;
  filePath?: string;
  fileMode?: string;
}

/** A Batch output file, as a task request carries it. */
export interface TaskOutputFile {
  filePattern: string;
  containerUrl: string;
  path?: string;
  uploadCondition: 'taskSuccess' | 'taskFailure' | 'taskCompletion';
}

/** A multi-instance task on `numberOfInstances` nodes of the Batch job `batchJobId`. */
export interface MpiTaskRequest {
  /** The Batch job the task is added to (the request's path, not its body). */
  batchJobId: string;
  taskId: string;
  /** Nodes the task spans (primary + subtasks); the pool must have at least this many. */
  numberOfInstances: number;
  /** Runs on every node first (e.g. start sshd in the container) and must exit 0 on all of them. */
  coordinationCommandLine: string;
  /** Runs on the primary only once coordination succeeded everywhere (the mpirun line). */
  applicationCommandLine: string;
  environment: { name: string; value: string }[];
  /** Downloaded on every node into the task root directory. */
  commonResourceFiles: NodeResourceFile[];
  /** Uploaded by Batch from the master when the task ends, before it counts as completed. */
  outputFiles?: TaskOutputFile[];
  maxWallClockSeconds?: number;
  /** Default 0: an MPI run is not blindly repeated by Batch (the orchestrator decides on a new attempt). */
  maxTaskRetryCount?: number;
  /**
   * The task reads Key Vault secrets on the master (references only, in its command line): the activity adds the
   * pool identity's client id and the deployment's vault URL template to its environment (secretEnv.ts), when it
   * builds the request, and nowhere else.
   */
  keyVault?: true;
}
