/** Plain JSON as received from / sent to the REST API. */
export type Json = Record<string, unknown>;

export type NodeState =
  | 'creating'
  | 'starting'
  | 'waitingforstarttask'
  | 'starttaskfailed'
  | 'idle'
  | 'running'
  | 'rebooting'
  | 'reimaging'
  | 'unusable'
  | 'leavingpool'
  | 'offline'
  | 'preempted';

export type TaskState = 'active' | 'preparing' | 'running' | 'completed';

export interface ExecInfo {
  startTime?: Date;
  endTime?: Date;
  exitCode?: number;
  failureInfo?: Json;
  retryCount: number;
  lastRetryTime?: Date;
  requeueCount: number;
  lastRequeueTime?: Date;
  result?: 'success' | 'failure';
}

export interface Versioned {
  eTag: string;
  lastModified: Date;
}

export interface PoolRecord extends Versioned {
  id: string;
  /** The PoolAddParameter as given, minus the fields tracked separately below. */
  spec: Json;
  creationTime: Date;
  state: 'active' | 'deleting';
  stateTransitionTime: Date;
  allocationState: 'steady' | 'resizing' | 'stopping';
  allocationStateTransitionTime: Date;
  targetDedicatedNodes: number;
  targetLowPriorityNodes: number;
  resizeTimeout: string;
  resizeErrors: Json[];
  metadata: Json[];
  startTask?: Json;
  /** User-assigned identities (only pools created through the management plane have any). */
  identity?: PoolIdentity;
  nodes: Map<string, NodeRecord>;
  /** Counts nodes ever created, for node ordinals and ids. */
  nodeCounter: number;
}

export interface PoolIdentity {
  type: 'UserAssigned';
  userAssignedIdentities: { resourceId: string; clientId: string; principalId: string }[];
}

export interface NodeRecord {
  id: string;
  poolId: string;
  ordinal: number;
  state: NodeState;
  schedulingState: 'enabled' | 'disabled';
  stateTransitionTime: Date;
  allocationTime: Date;
  lastBootTime?: Date;
  ipAddress: string;
  rootDir: string;
  totalTasksRun: number;
  totalTasksSucceeded: number;
  /** Keys `${jobId}/${taskId}` of tasks (incl. MI subtasks) currently on this node. */
  running: Map<string, { jobId: string; taskId: string; subtaskId?: number; slots: number }>;
  startTaskInfo?: Json & { state: 'running' | 'completed' };
  errors: Json[];
  /** Job prep/release state per job id (lower-case). */
  jobTasks: Map<string, NodeJobTasks>;
  removed: boolean;
  /** False for a Spot/low-priority node (absent in records saved before they existed: dedicated). */
  isDedicated?: boolean;
  /** Accounts added with ComputeNode_AddUser, by lower-case name (absent: none yet). A reimage drops them. */
  users?: Map<string, NodeUser>;
  /** The node error of pool mounts that failed on it (MountConfigurationError): it boots into unusable. */
  mountError?: Json;
}

/** A node user account (ComputeNodeUser); the password and key are kept to tell an update, never shown back. */
export interface NodeUser {
  name: string;
  isAdmin: boolean;
  expiryTime: Date;
  password?: string;
  sshPublicKey?: string;
}

export interface NodeJobTasks {
  prep?: ExecInfo & { state: 'running' | 'completed'; taskRootDirectory: string };
  release?: ExecInfo & { state: 'running' | 'completed'; taskRootDirectory: string };
}

export interface JobRecord extends Versioned {
  id: string;
  spec: Json;
  creationTime: Date;
  state: 'active' | 'disabling' | 'disabled' | 'terminating' | 'completed' | 'deleting';
  stateTransitionTime: Date;
  previousState?: string;
  previousStateTransitionTime?: Date;
  priority: number;
  maxParallelTasks: number;
  allowTaskPreemption: boolean;
  onAllTasksComplete: string;
  onTaskFailure: string;
  constraints?: Json;
  metadata?: Json[];
  poolId: string;
  executionInfo: { startTime: Date; endTime?: Date; poolId: string; terminateReason?: string };
  tasks: Map<string, TaskRecord>;
  /** Nodes (pool/node) that ran the prep task, in order. */
  prepNodes: string[];
  wallClockTimer?: NodeJS.Timeout;
}

export interface SubtaskRecord {
  id: number;
  poolId: string;
  nodeId: string;
  taskRootDirectory: string;
  state: 'preparing' | 'running' | 'completed';
  stateTransitionTime: Date;
  previousState?: string;
  previousStateTransitionTime?: Date;
  startTime?: Date;
  endTime?: Date;
  exitCode?: number;
  failureInfo?: Json;
  result?: 'success' | 'failure';
}

export interface TaskRecord extends Versioned {
  id: string;
  jobId: string;
  spec: Json;
  creationTime: Date;
  state: TaskState;
  stateTransitionTime: Date;
  previousState?: TaskState;
  previousStateTransitionTime?: Date;
  constraints: { maxWallClockTime?: string; retentionTime?: string; maxTaskRetryCount: number };
  requiredSlots: number;
  executionInfo?: ExecInfo;
  nodeInfo?: { poolId: string; nodeId: string; taskRootDirectory: string };
  subtasks: SubtaskRecord[];
  /** Bumped on every run attempt so stale process exits are ignored. */
  attempt: number;
  /** Process groups of the current attempt (application, coordination, ...). */
  pgids: Set<number>;
  wallClockTimer?: NodeJS.Timeout;
  /** Sequence number, to schedule in submission order. */
  seq: number;
}
