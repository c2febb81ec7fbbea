import { isDedicatedNode } from './quota';
import type { ExecInfo, Json, JobRecord, NodeRecord, PoolRecord, SubtaskRecord, TaskRecord } from './types';

/** Turns records into the wire shapes of the 2022-10-01.16.0 spec (ISO dates, no undefined). */
export function iso(d: Date | undefined): string | undefined {
  return d ? d.toISOString() : undefined;
}

/** Drops undefined values so responses never carry properties with no value. */
export function clean<T extends Json>(o: T): T {
  for (const k of Object.keys(o)) if (o[k] === undefined) delete o[k];
  return o;
}

export function execInfoView(e: ExecInfo): Json {
  return clean({
    startTime: iso(e.startTime),
    endTime: iso(e.endTime),
    exitCode: e.exitCode,
    failureInfo: e.failureInfo,
    retryCount: e.retryCount,
    lastRetryTime: iso(e.lastRetryTime),
    requeueCount: e.requeueCount,
    lastRequeueTime: iso(e.lastRequeueTime),
    result: e.result,
  });
}

// PoolAddParameter properties echoed on CloudPool unchanged.
const POOL_PASSTHROUGH = [
  'displayName',
  'vmSize',
  'cloudServiceConfiguration',
  'virtualMachineConfiguration',
  'enableAutoScale',
  'autoScaleFormula',
  'autoScaleEvaluationInterval',
  'enableInterNodeCommunication',
  'networkConfiguration',
  'certificateReferences',
  'applicationPackageReferences',
  'applicationLicenses',
  'taskSlotsPerNode',
  'taskSchedulingPolicy',
  'userAccounts',
  'mountConfiguration',
  'targetNodeCommunicationMode',
];

export function poolView(p: PoolRecord, baseUrl: string): Json {
  const out: Json = {
    id: p.id,
    url: `${baseUrl}/pools/${encodeURIComponent(p.id)}`,
    eTag: p.eTag,
    lastModified: iso(p.lastModified),
    creationTime: iso(p.creationTime),
    state: p.state,
    stateTransitionTime: iso(p.stateTransitionTime),
    allocationState: p.allocationState,
    allocationStateTransitionTime: iso(p.allocationStateTransitionTime),
    resizeTimeout: p.resizeTimeout,
    currentDedicatedNodes: [...p.nodes.values()].filter((n) => !n.removed && isDedicatedNode(n)).length,
    // Preempted nodes are counted here (CloudPool.currentLowPriorityNodes: "…which have been preempted are included").
    currentLowPriorityNodes: [...p.nodes.values()].filter((n) => !n.removed && !isDedicatedNode(n)).length,
    targetDedicatedNodes: p.targetDedicatedNodes,
    targetLowPriorityNodes: p.targetLowPriorityNodes,
  };
  for (const k of POOL_PASSTHROUGH) if (p.spec[k] !== undefined) out[k] = p.spec[k];
  out.enableAutoScale = p.spec.enableAutoScale ?? false;
  out.enableInterNodeCommunication = p.spec.enableInterNodeCommunication ?? false;
  out.taskSlotsPerNode = p.spec.taskSlotsPerNode ?? 1;
  out.taskSchedulingPolicy = p.spec.taskSchedulingPolicy ?? { nodeFillType: 'spread' };
  out.currentNodeCommunicationMode = 'classic';
  if (p.resizeErrors.length && p.allocationState === 'steady') out.resizeErrors = p.resizeErrors;
  if (p.startTask) out.startTask = p.startTask;
  if (p.metadata.length) out.metadata = p.metadata;
  // The data plane shows a pool's identities (BatchPoolIdentity) but cannot set them.
  if (p.identity) out.identity = { type: 'UserAssigned', userAssignedIdentities: p.identity.userAssignedIdentities.map((i) => ({ ...i })) };
  return clean(out);
}

export function nodeView(n: NodeRecord, pool: PoolRecord, baseUrl: string, jobs: Map<string, JobRecord>): Json {
  const recent: Json[] = [];
  for (const r of n.running.values()) {
    const task = jobs.get(r.jobId.toLowerCase())?.tasks.get(r.taskId.toLowerCase());
    if (!task) continue;
    recent.push(
      clean({
        taskUrl: `${baseUrl}/jobs/${encodeURIComponent(task.jobId)}/tasks/${encodeURIComponent(task.id)}`,
        jobId: task.jobId,
        taskId: task.id,
        subtaskId: r.subtaskId,
        taskState: task.state,
      }),
    );
  }
  const slots = [...n.running.values()].reduce((s, r) => s + r.slots, 0);
  return clean({
    id: n.id,
    url: `${baseUrl}/pools/${encodeURIComponent(pool.id)}/nodes/${n.id}`,
    state: n.state,
    schedulingState: n.schedulingState,
    stateTransitionTime: iso(n.stateTransitionTime),
    lastBootTime: iso(n.lastBootTime),
    allocationTime: iso(n.allocationTime),
    ipAddress: n.ipAddress,
    affinityId: affinityIdOf(n),
    vmSize: pool.spec.vmSize,
    totalTasksRun: n.totalTasksRun,
    runningTasksCount: n.running.size,
    runningTaskSlotsCount: slots,
    totalTasksSucceeded: n.totalTasksSucceeded,
    recentTasks: recent.length ? recent : undefined,
    startTask: pool.startTask,
    startTaskInfo: n.startTaskInfo,
    errors: n.errors.length ? n.errors : undefined,
    isDedicated: isDedicatedNode(n),
    endpointConfiguration: { inboundEndpoints: [] },
    nodeAgentInfo: { version: '1.9.0-emulator', lastUpdateTime: iso(n.allocationTime) },
  });
}

export function affinityIdOf(n: NodeRecord): string {
  return `TVM:${n.id}`;
}

const JOB_PASSTHROUGH = [
  'displayName',
  'usesTaskDependencies',
  'jobManagerTask',
  'jobPreparationTask',
  'jobReleaseTask',
  'commonEnvironmentSettings',
  'poolInfo',
  'networkConfiguration',
];

export function jobView(j: JobRecord, baseUrl: string): Json {
  const out: Json = {
    id: j.id,
    url: `${baseUrl}/jobs/${encodeURIComponent(j.id)}`,
    eTag: j.eTag,
    lastModified: iso(j.lastModified),
    creationTime: iso(j.creationTime),
    state: j.state,
    stateTransitionTime: iso(j.stateTransitionTime),
    previousState: j.previousState,
    previousStateTransitionTime: iso(j.previousStateTransitionTime),
    priority: j.priority,
    allowTaskPreemption: j.allowTaskPreemption,
    maxParallelTasks: j.maxParallelTasks,
    // Batch reports an unset limit as P10675199DT2H48M5.4775807S; it is left out here because common
    // duration validators (e.g. ajv-formats) reject fractional seconds.
    constraints: j.constraints ?? { maxTaskRetryCount: 0 },
    onAllTasksComplete: j.onAllTasksComplete,
    onTaskFailure: j.onTaskFailure,
    metadata: j.metadata && j.metadata.length ? j.metadata : undefined,
    executionInfo: clean({
      startTime: iso(j.executionInfo.startTime),
      endTime: iso(j.executionInfo.endTime),
      poolId: j.executionInfo.poolId,
      terminateReason: j.executionInfo.terminateReason,
    }),
  };
  for (const k of JOB_PASSTHROUGH) if (j.spec[k] !== undefined) out[k] = j.spec[k];
  out.poolInfo = j.spec.poolInfo;
  return clean(out);
}

const TASK_PASSTHROUGH = [
  'displayName',
  'exitConditions',
  'commandLine',
  'containerSettings',
  'resourceFiles',
  'outputFiles',
  'environmentSettings',
  'affinityInfo',
  'userIdentity',
  'multiInstanceSettings',
  'dependsOn',
  'applicationPackageReferences',
  'authenticationTokenSettings',
];

export function nodeUrl(baseUrl: string, poolId: string, nodeId: string): string {
  return `${baseUrl}/pools/${encodeURIComponent(poolId)}/nodes/${nodeId}`;
}

function nodeInfoView(baseUrl: string, info: { poolId: string; nodeId: string; taskRootDirectory: string }, node: NodeRecord | undefined): Json {
  const url = nodeUrl(baseUrl, info.poolId, info.nodeId);
  return clean({
    affinityId: node ? affinityIdOf(node) : `TVM:${info.nodeId}`,
    nodeUrl: url,
    poolId: info.poolId,
    nodeId: info.nodeId,
    taskRootDirectory: info.taskRootDirectory,
    taskRootDirectoryUrl: `${url}/files/${info.taskRootDirectory}`,
  });
}

export function taskView(t: TaskRecord, baseUrl: string, findNode: (poolId: string, nodeId: string) => NodeRecord | undefined): Json {
  const out: Json = {
    id: t.id,
    url: `${baseUrl}/jobs/${encodeURIComponent(t.jobId)}/tasks/${encodeURIComponent(t.id)}`,
    eTag: t.eTag,
    lastModified: iso(t.lastModified),
    creationTime: iso(t.creationTime),
    state: t.state,
    stateTransitionTime: iso(t.stateTransitionTime),
    previousState: t.previousState,
    previousStateTransitionTime: iso(t.previousStateTransitionTime),
    constraints: clean({
      maxWallClockTime: t.constraints.maxWallClockTime,
      retentionTime: t.constraints.retentionTime ?? 'P7D',
      maxTaskRetryCount: t.constraints.maxTaskRetryCount,
    }),
    requiredSlots: t.requiredSlots,
    executionInfo: t.executionInfo ? execInfoView(t.executionInfo) : undefined,
    nodeInfo: t.nodeInfo ? nodeInfoView(baseUrl, t.nodeInfo, findNode(t.nodeInfo.poolId, t.nodeInfo.nodeId)) : undefined,
  };
  for (const k of TASK_PASSTHROUGH) if (t.spec[k] !== undefined) out[k] = t.spec[k];
  return clean(out);
}

export function subtaskView(s: SubtaskRecord, baseUrl: string, node: NodeRecord | undefined): Json {
  return clean({
    id: s.id,
    nodeInfo: nodeInfoView(baseUrl, s, node),
    startTime: iso(s.startTime),
    endTime: iso(s.endTime),
    exitCode: s.exitCode,
    failureInfo: s.failureInfo,
    state: s.state,
    stateTransitionTime: iso(s.stateTransitionTime),
    previousState: s.previousState,
    previousStateTransitionTime: iso(s.previousStateTransitionTime),
    result: s.result,
  });
}
