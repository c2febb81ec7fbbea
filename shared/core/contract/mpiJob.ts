/**
 * How the mpiJob orchestration is started: its name, its input and the settings resolved at intake. The
 * intake (functions/) and the orchestrator (orchestrations/) both depend on this, never on each other.
 */
import type { JobSpec } from '../spec/schema';
import type { HealthCheck } from '../spec/sections/preflight';

export const MPI_JOB_ORCHESTRATION = 'mpiJob';

/** The raised event that cancels a running job; its data is `{ reason }`. */
export const CANCEL_EVENT = 'cancel';
export interface CancelEventData {
  reason: string;
}

/**
 * Raised on a waiting job by whichever admission pass admitted or refused it, and on a dependent job by the end of a
 * job it waits for. Only a wake-up: the job then asks (an activity) where it stands, so a forged or repeated event
 * changes nothing and a lost one only delays until the next poll.
 */
export const ADMISSION_EVENT = 'admission';
export const DEPENDENCY_EVENT = 'dependency';

export interface PollSettings {
  initialMs: number;
  maxMs: number;
  factor: number;
  /**
   * The cap of the looks at node tasks and checks in flight (POLL_LOOK_MAX_MS): they back off from initialMs to this,
   * so a wait of T seconds costs O(log T) looks up to the cap (PipelineRun.lookDelayMs). Absent in runs started before:
   * they replay their looks at the base interval.
   */
  lookMaxMs?: number;
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
  /** Longest lifetime of a SAS URL handed to a node (the deployment's cap, at most 7 days). */
  sasMaxLifetimeMinutes: number;
  /** Client id of the pool identity, when the deployment has one (nodes sign in to registries with it). */
  poolIdentityClientId?: string;
  /** How often a waiting job asks again where it stands (its fallback for a lost event). Absent in runs started before queues: 60 s. */
  queuePollMs?: number;
  /** Judge RDMA ping-pongs by the built-in thresholds when the spec sets none (absent, as in older inputs: yes). */
  preflightFabricDefaults?: boolean;
  /** The least the preflight check waits for a node's ssh answer (PREFLIGHT_SSH_WAIT_MIN_MS; absent or 0: the spec's maxSshMs). */
  preflightSshWaitMinMs?: number;
  /**
   * The node health checks preflight runs (PREFLIGHT_HEALTH_CHECKS: cpu, memory, ib, ibbw, stream, gpu, linkflap, site).
   * Absent in runs started before the health checks: they replay without them.
   */
  preflightHealthChecks?: HealthCheck[];
  /**
   * Stage shards beside provisioning and the pulls (PIPELINE_OVERLAP). Absent in runs started before the overlap: they
   * replay the sequential pipeline they started with.
   */
  overlapStaging?: boolean;
  /**
   * Look up every blob and prefix the job reads before its pool is created (orchestrations/stages/sourcesCheck.ts).
   * Absent in runs started before the check: they replay without it.
   */
  checkSources?: boolean;
  /**
   * Read the MPI generation of a container job without mpi.version from its image's registry before its pool is
   * created (orchestrations/stages/imageEvidence.ts). Absent in runs started before the read: they replay without it.
   */
  readImageEvidence?: boolean;
  /**
   * Read failed start tasks' stderr before their nodes go, note node replacements on the timeline, and explain the
   * failure in the job's error (shared/core/planning/failureExplain.ts). Absent in runs started before: they replay without.
   */
  explainFailures?: boolean;
  /**
   * Wait for the MPI task in the mpiWait sub-orchestration, which continues as new after this many polls, so a job's
   * history rows do not grow with its run time (orchestrations/stages/mpiWait.ts). Absent in runs started before: they
   * replay the inline wait.
   */
  mpiWaitPollsPerGeneration?: number;
  /**
   * A job without any shard starts every node's download task at once (they download nothing: the window's bound is
   * for storage egress), in one task collection, so its staging requests do not grow with the nodes
   * (docs/call-budgets.md, "Node tasks"). Absent in runs started before: they replay the bounded window.
   */
  emptyDownloadsAtOnce?: boolean;
  /**
   * Check the nodes' default logs after their uploads by one listing of the job's logs prefix (nodeLogsMissing), not by
   * listing each node's files (nodeTaskUploads). Absent in runs started before: they replay the per-node check.
   */
  nodeLogsListed?: boolean;
}

/** Polls per execution of the MPI wait before it continues as new: its history holds at most this many polls. */
export const MPI_WAIT_POLLS_PER_GENERATION = 8;

export interface MpiJobInput {
  jobId: string;
  spec: JobSpec;
  settings: PipelineSettings;
}
