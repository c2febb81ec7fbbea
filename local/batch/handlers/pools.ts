import { nextETag, touch } from '../model/etag';
import { NODE_COUNT_FILTERS, NODE_FILTERS, POOL_FILTERS } from '../model/filterable';
import { pageOf, applySelect } from '../model/odata';
import type { Json, PoolIdentity, PoolRecord } from '../model/types';
import { nodeView, poolView } from '../model/views';
import { isDedicatedNode } from '../model/quota';
import { checkPoolCatalog } from './catalogChecks';
import { BatchHttpError, errors } from './errors';
import { checkConditions, jsonBody, versionHeaders, writeHeaders, type Handler, type Services } from './http';
import { checkMetadata, checkMinimumDuration, checkNodeTask, checkPoolAdd, noApplications, notEmulated } from './rules';
import { metadataOf, optionalDuration, optionalInt, optionalEnum, requireId, requireString } from './validate';

export function poolOr404(s: Services, poolId: string): PoolRecord {
  const p = s.engine.pools.get(poolId.toLowerCase());
  if (!p) throw errors.notFound('PoolNotFound', 'pool');
  return p;
}

function refuseWhilePoolDeleting(p: PoolRecord): void {
  if (p.state === 'deleting') throw errors.conflict('PoolBeingDeleted', 'The specified pool has been marked for deletion and is being reclaimed.');
}

const addPool: Handler = (ctx, _p, s) => {
  const pool = createPoolRecord(s, jsonBody(ctx));
  const url = `${ctx.baseUrl}/pools/${pool.id}`;
  return { status: 201, headers: { ...writeHeaders(pool, url), Location: url } };
};

/**
 * Checks a PoolAddParameter as Batch does and creates the pool (the data plane's Pool_Add, and the management
 * plane's Pools_Create after translating its body, which may add the pool's identities).
 */
export function createPoolRecord(s: Services, b: Json, identity?: PoolIdentity): PoolRecord {
  const id = requireId(b);
  requireString(b, 'vmSize');
  checkPoolAdd(b);
  const target = optionalInt(b, 'targetDedicatedNodes', 0, 2000) ?? 0;
  const targetLow = optionalInt(b, 'targetLowPriorityNodes', 0, 1000) ?? 0;
  optionalInt(b, 'taskSlotsPerNode', 1, 256);
  const resizeTimeout = optionalDuration(b, 'resizeTimeout') ?? 'PT15M';
  if (b.enableInterNodeCommunication === true && target > 100)
    throw errors.invalid('targetDedicatedNodes', target, 'pools with inter-node communication are limited to 100 nodes');
  const startTask = b.startTask as Json | undefined;
  if (startTask && !startTask.commandLine) throw errors.missing('startTask.commandLine');
  const existing = s.engine.pools.get(id.toLowerCase());
  if (existing) {
    refuseWhilePoolDeleting(existing);
    throw errors.exists('PoolExists', 'pool');
  }
  checkPoolCatalog(b);
  const now = new Date();
  const spec: Json = { ...b };
  delete spec.metadata;
  delete spec.startTask;
  const pool: PoolRecord = {
    id,
    spec,
    eTag: nextETag(),
    lastModified: now,
    creationTime: now,
    state: 'active',
    stateTransitionTime: now,
    allocationState: 'steady',
    allocationStateTransitionTime: now,
    targetDedicatedNodes: target,
    targetLowPriorityNodes: targetLow,
    resizeTimeout,
    resizeErrors: [],
    metadata: metadataOf(b.metadata),
    startTask: startTask ? { waitForSuccess: true, maxTaskRetryCount: 0, ...startTask } : undefined,
    ...(identity ? { identity } : {}),
    nodes: new Map(),
    nodeCounter: 0,
  };
  s.engine.pools.set(id.toLowerCase(), pool);
  if (target > 0 || targetLow > 0) s.engine.resize(pool, target, 'requeue', targetLow);
  return pool;
}

const listPools: Handler = (ctx, _p, s) => {
  const all = [...s.engine.pools.values()].map((p) => poolView(p, ctx.baseUrl));
  return { status: 200, body: pageOf(all, ctx.query, ctx.baseUrl, '/pools', POOL_FILTERS) };
};

const getPool: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  checkConditions(ctx, pool);
  return { status: 200, body: applySelect(poolView(pool, ctx.baseUrl), ctx.query['$select']), headers: versionHeaders(pool) };
};

const poolExists: Handler = (ctx, p, s) => {
  const pool = s.engine.pools.get(p.poolId.toLowerCase());
  if (!pool) return { status: 404 };
  checkConditions(ctx, pool);
  return { status: 200, headers: versionHeaders(pool) };
};

const deletePool: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  checkConditions(ctx, pool);
  refuseWhilePoolDeleting(pool);
  s.engine.deletePool(pool);
  return { status: 202 };
};

/** "The minimum value is 5 minutes" for resizeTimeout on add, resize and removenodes. */
const RESIZE_TIMEOUT_MIN_MS = 5 * 60_000;

/** The rules patch and updateproperties share: start task files, metadata names, no certificates or packages. */
export function checkPoolPropertyChanges(b: Json): void {
  checkMetadata(b.metadata);
  checkNodeTask(b.startTask, 'startTask');
  if (Array.isArray(b.certificateReferences) && b.certificateReferences.length) throw notEmulated('certificateReferences', 'certificates');
  if (Array.isArray(b.applicationPackageReferences) && b.applicationPackageReferences.length) throw noApplications('applicationPackageReferences');
}

/** PATCH: only the given properties change. */
const patchPool: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  checkConditions(ctx, pool);
  refuseWhilePoolDeleting(pool);
  const b = jsonBody(ctx);
  checkPoolPropertyChanges(b);
  if (b.startTask !== undefined) pool.startTask = b.startTask ? { waitForSuccess: true, maxTaskRetryCount: 0, ...(b.startTask as Json) } : undefined;
  if (b.metadata !== undefined) pool.metadata = metadataOf(b.metadata);
  for (const k of ['certificateReferences', 'applicationPackageReferences', 'targetNodeCommunicationMode']) if (b[k] !== undefined) pool.spec[k] = b[k];
  touch(pool);
  return { status: 200, headers: writeHeaders(pool, `${ctx.baseUrl}/pools/${pool.id}`) };
};

/** updateproperties: replaces startTask, metadata and references (absent = cleared). */
const updatePoolProperties: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  refuseWhilePoolDeleting(pool);
  const b = jsonBody(ctx);
  if (b.certificateReferences === undefined) throw errors.missing('certificateReferences');
  if (b.applicationPackageReferences === undefined) throw errors.missing('applicationPackageReferences');
  if (b.metadata === undefined) throw errors.missing('metadata');
  checkPoolPropertyChanges(b);
  pool.startTask = b.startTask ? { waitForSuccess: true, maxTaskRetryCount: 0, ...(b.startTask as Json) } : undefined;
  pool.metadata = metadataOf(b.metadata);
  pool.spec.certificateReferences = b.certificateReferences;
  pool.spec.applicationPackageReferences = b.applicationPackageReferences;
  if (b.targetNodeCommunicationMode !== undefined) pool.spec.targetNodeCommunicationMode = b.targetNodeCommunicationMode;
  touch(pool);
  return { status: 204, headers: writeHeaders(pool, `${ctx.baseUrl}/pools/${pool.id}`) };
};

const resizePool: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  checkConditions(ctx, pool);
  refuseWhilePoolDeleting(pool);
  if (pool.spec.enableAutoScale === true) throw errors.conflict('AutoScalingEnabled', 'The specified pool has auto scaling enabled.');
  if (pool.allocationState !== 'steady') throw errors.conflict('PoolBeingResized', 'The specified pool is being resized.');
  const b = jsonBody(ctx);
  const target = optionalInt(b, 'targetDedicatedNodes', 0, 2000) ?? pool.targetDedicatedNodes;
  const targetLow = optionalInt(b, 'targetLowPriorityNodes', 0, 1000) ?? pool.targetLowPriorityNodes;
  const option = optionalEnum(b, 'nodeDeallocationOption', ['requeue', 'terminate', 'taskcompletion', 'retaineddata']) ?? 'requeue';
  checkMinimumDuration(b, 'resizeTimeout', RESIZE_TIMEOUT_MIN_MS);
  const timeout = optionalDuration(b, 'resizeTimeout');
  if (timeout) pool.resizeTimeout = timeout;
  s.engine.resize(pool, target, option, targetLow);
  return { status: 202, headers: writeHeaders(pool, `${ctx.baseUrl}/pools/${pool.id}`) };
};

const stopResize: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  checkConditions(ctx, pool);
  refuseWhilePoolDeleting(pool);
  if (pool.allocationState === 'resizing') s.engine.stopResize(pool);
  return { status: 202, headers: writeHeaders(pool, `${ctx.baseUrl}/pools/${pool.id}`) };
};

const removeNodes: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  checkConditions(ctx, pool);
  refuseWhilePoolDeleting(pool);
  if (pool.allocationState !== 'steady') throw errors.conflict('PoolBeingResized', 'The specified pool is being resized.');
  const b = jsonBody(ctx);
  const list = b.nodeList;
  if (!Array.isArray(list) || list.length === 0) throw errors.missing('nodeList');
  if (list.length > 100) throw errors.invalid('nodeList', list.length, 'at most 100 nodes per request');
  checkMinimumDuration(b, 'resizeTimeout', RESIZE_TIMEOUT_MIN_MS);
  const option = optionalEnum(b, 'nodeDeallocationOption', ['requeue', 'terminate', 'taskcompletion', 'retaineddata']) ?? 'requeue';
  const nodes = list.map((id) => {
    const n = typeof id === 'string' ? pool.nodes.get(id) : undefined;
    if (!n) throw new BatchHttpError(404, 'NodeNotFound', `The node ${String(id)} does not exist in pool ${pool.id}.`);
    return n;
  });
  s.engine.setAllocationState(pool, 'resizing');
  for (const n of nodes) s.engine.removeNode(pool, n, option);
  // Removing nodes lowers the target of their kind (dedicated or low-priority) by as many.
  const staying = s.engine.liveNodes(pool).filter((n) => n.state !== 'leavingpool');
  pool.targetDedicatedNodes = staying.filter(isDedicatedNode).length;
  pool.targetLowPriorityNodes = staying.length - pool.targetDedicatedNodes;
  s.engine.later(s.engine.cfg.timing.leaveMs, () => s.engine.setAllocationState(pool, 'steady'));
  return { status: 202, headers: writeHeaders(pool, `${ctx.baseUrl}/pools/${pool.id}`) };
};

// ---- nodes ----

const listNodes: Handler = (ctx, p, s) => {
  const pool = poolOr404(s, p.poolId);
  const all = s.engine.liveNodes(pool).map((n) => nodeView(n, pool, ctx.baseUrl, s.engine.jobs));
  return { status: 200, body: pageOf(all, ctx.query, ctx.baseUrl, `/pools/${pool.id}/nodes`, NODE_FILTERS) };
};

export function nodeOr404(s: Services, poolId: string, nodeId: string) {
  const pool = poolOr404(s, poolId);
  const node = pool.nodes.get(nodeId);
  if (!node || node.removed) throw errors.notFound('NodeNotFound', 'node');
  return { pool, node };
}

const getNode: Handler = (ctx, p, s) => {
  const { pool, node } = nodeOr404(s, p.poolId, p.nodeId);
  return { status: 200, body: applySelect(nodeView(node, pool, ctx.baseUrl, s.engine.jobs), ctx.query['$select']) };
};

/** The 409 Batch answers for an operation on a node that is not up. */
function nodeBusy(node: { state: string }, operation: string): BatchHttpError | undefined {
  const codes: Record<string, string> = {
    creating: 'NodeBeingCreated',
    starting: 'NodeBeingStarted',
    waitingforstarttask: 'NodeBeingStarted',
    rebooting: 'NodeBeingRebooted',
    reimaging: 'NodeBeingReimaged',
    leavingpool: 'OperationNotValidOnNode',
  };
  const code = codes[node.state];
  return code ? errors.conflict(code, `The node is ${node.state}; it cannot be ${operation} now.`) : undefined;
}

const rebootNode: Handler = (ctx, p, s) => {
  const { pool, node } = nodeOr404(s, p.poolId, p.nodeId);
  const b = jsonBody(ctx);
  const option = optionalEnum(b, 'nodeRebootOption', ['requeue', 'terminate', 'taskcompletion', 'retaineddata']) ?? 'requeue';
  const busy = nodeBusy(node, 'rebooted');
  if (busy) throw busy;
  s.engine.reboot(pool, node, option);
  return { status: 202, headers: { DataServiceId: `${ctx.baseUrl}/pools/${pool.id}/nodes/${node.id}/reboot` } };
};

/** ComputeNode_Reimage: as reboot, with nodeReimageOption, and the node's disk wiped (engine.reimage). */
const reimageNode: Handler = (ctx, p, s) => {
  const { pool, node } = nodeOr404(s, p.poolId, p.nodeId);
  const option = optionalEnum(jsonBody(ctx), 'nodeReimageOption', ['requeue', 'terminate', 'taskcompletion', 'retaineddata']) ?? 'requeue';
  const busy = nodeBusy(node, 'reimaged');
  if (busy) throw busy;
  s.engine.reimage(pool, node, option);
  return { status: 202, headers: { DataServiceId: `${ctx.baseUrl}/pools/${pool.id}/nodes/${node.id}/reimage` } };
};

/** The NodeCounts states (spec 2022-10-01: no upgradingOS count): every node state the emulator has, the rest zero. */
const COUNTED_STATES: Record<string, string> = {
  creating: 'creating',
  idle: 'idle',
  offline: 'offline',
  preempted: 'preempted',
  rebooting: 'rebooting',
  reimaging: 'reimaging',
  running: 'running',
  starting: 'starting',
  starttaskfailed: 'startTaskFailed',
  leavingpool: 'leavingPool',
  unknown: 'unknown',
  unusable: 'unusable',
  waitingforstarttask: 'waitingForStartTask',
};

function nodeCounts(states: string[]): Json {
  const counts: Record<string, number> = Object.fromEntries(Object.values(COUNTED_STATES).map((k) => [k, 0]));
  for (const st of states) counts[COUNTED_STATES[st] ?? 'unknown'] += 1;
  return { ...counts, total: states.length };
}

/** Account_ListPoolNodeCounts: per pool, dedicated and low-priority (Spot) nodes by state. */
const listPoolNodeCounts: Handler = (ctx, _p, s) => {
  const states = (pool: PoolRecord, dedicated: boolean) =>
    [...pool.nodes.values()].filter((n) => !n.removed && isDedicatedNode(n) === dedicated).map((n) => n.state);
  const all = [...s.engine.pools.values()].map((pool) => ({
    poolId: pool.id,
    dedicated: nodeCounts(states(pool, true)),
    lowPriority: nodeCounts(states(pool, false)),
  }));
  return { status: 200, body: pageOf(all, ctx.query, ctx.baseUrl, '/nodecounts', NODE_COUNT_FILTERS) };
};

/**
 * Disabling scheduling requeues (default) or ends the node's running tasks, or lets them finish
 * (taskcompletion); the node is then offline. Asking for the state the node is already in is a 409.
 */
const setNodeScheduling =
  (enabled: boolean): Handler =>
  (ctx, p, s) => {
    const { node } = nodeOr404(s, p.poolId, p.nodeId);
    const target = enabled ? 'enabled' : 'disabled';
    if (node.schedulingState === target) {
      throw errors.conflict('NodeAlreadyInTargetSchedulingState', `Task scheduling on the node is already ${target}.`);
    }
    const option = enabled ? undefined : (optionalEnum(jsonBody(ctx), 'nodeDisableSchedulingOption', ['requeue', 'terminate', 'taskcompletion']) ?? 'requeue');
    node.schedulingState = target;
    if (option === 'requeue' || option === 'terminate')
      s.engine.onNodeLeaving(node, option === 'requeue', 'Task was ended because task scheduling on its compute node was disabled');
    s.engine.settleNode(node);
    if (enabled) s.scheduler.kick();
    return { status: 200, headers: { DataServiceId: `${ctx.baseUrl}/pools/${p.poolId}/nodes/${node.id}` } };
  };

export const poolRoutes: [string, string, Handler][] = [
  ['POST', 'pools', addPool],
  ['GET', 'pools', listPools],
  ['GET', 'pools/{poolId}', getPool],
  ['HEAD', 'pools/{poolId}', poolExists],
  ['DELETE', 'pools/{poolId}', deletePool],
  ['PATCH', 'pools/{poolId}', patchPool],
  ['POST', 'pools/{poolId}/updateproperties', updatePoolProperties],
  ['POST', 'pools/{poolId}/resize', resizePool],
  ['POST', 'pools/{poolId}/stopresize', stopResize],
  ['POST', 'pools/{poolId}/removenodes', removeNodes],
  ['GET', 'pools/{poolId}/nodes', listNodes],
  ['GET', 'pools/{poolId}/nodes/{nodeId}', getNode],
  ['POST', 'pools/{poolId}/nodes/{nodeId}/reboot', rebootNode],
  ['POST', 'pools/{poolId}/nodes/{nodeId}/reimage', reimageNode],
  ['GET', 'nodecounts', listPoolNodeCounts],
  ['POST', 'pools/{poolId}/nodes/{nodeId}/disablescheduling', setNodeScheduling(false)],
  ['POST', 'pools/{poolId}/nodes/{nodeId}/enablescheduling', setNodeScheduling(true)],
];
