/**
 * Pools through the management plane (Microsoft.Batch/batchAccounts/pools, api-version 2023-11-01): create (PUT,
 * synchronous, 200 for a new pool and for an unchanged repeat; If-None-Match: * turns an existing pool into 412), get, delete (a
 * long-running operation: 202 with Location and Retry-After, the Location answering 202 until the pool is gone and
 * then 204, as `final-state-via: location` says), update (PATCH, and a PUT that changes an existing pool: poolUpdate.ts)
 * and list by account (nextLink paging, $filter, $select: poolList.ts). The pools are the data plane's pools: one
 * account, two doors.
 */
import { randomUUID } from 'node:crypto';
import { BatchHttpError } from '../handlers/errors';
import type { Services } from '../handlers/http';
import { createPoolRecord } from '../handlers/pools';
import type { NodeIdentityProvider } from '../model/identity';
import type { Json, PoolIdentity } from '../model/types';
import { authorizeArm, authorizeIdentityAssignment, type ArmAccessConfig } from './auth';
import type { VerifiedToken } from '../../identity/verify';
import { ArmHttpError, armErrors } from './errors';
import { armETag, armPoolId, armPoolToPoolAdd, armPoolView, type ArmScope } from './poolModel';
import { armPoolFilter, armPoolSelect } from './poolList';
import { updatePool } from './poolUpdate';

export interface ArmContext {
  scope: ArmScope;
  access: ArmAccessConfig;
  identity?: NodeIdentityProvider;
  services: Services;
  /** https?://host:port of this listener (Location headers, nextLink). */
  baseUrl: string;
  /** The account's region (the account GET's location; the only location virtualMachineSkus answers for). */
  location: string;
  /** The data plane's host[:port], as the account GET's accountEndpoint reports it. */
  accountEndpoint: string;
  /** Whether the account allows shared key authentication. */
  sharedKey: boolean;
  apiVersion: string;
  /** Pending deletions: operation id → pool id. */
  operations: Map<string, string>;
  /** The body each pool was created with through this plane (pool id, lower case → JSON), to tell a repeated PUT from an update. */
  definitions: Map<string, string>;
}

export interface ArmResponse {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

const POOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const WRITE = 'Microsoft.Batch/batchAccounts/pools/write';
const READ = 'Microsoft.Batch/batchAccounts/pools/read';
const DELETE = 'Microsoft.Batch/batchAccounts/pools/delete';

function checkPoolName(name: string): void {
  if (!POOL_NAME.test(name))
    throw new ArmHttpError(
      400,
      'InvalidParameter',
      `The pool name '${name}' is invalid: it must be 1-64 letters, digits, hyphens and underscores.`,
      {},
      'poolName',
    );
}

/** Batch's own 4xx (from the shared pool checks) in Resource Manager's envelope; 501s stay 501. */
function fromBatchError(e: BatchHttpError): ArmHttpError {
  const property = e.values.find((v) => v.key === 'PropertyName')?.value;
  const reason = e.values.find((v) => v.key === 'Reason')?.value;
  return new ArmHttpError(
    e.status,
    e.code,
    [e.message, property ? `Property: ${property}.` : '', reason ? `Reason: ${reason}.` : ''].filter(Boolean).join(' '),
    {},
    property,
  );
}

function identitiesOf(ctx: ArmContext, body: Json): PoolIdentity | undefined {
  const identity = body.identity as Json | undefined;
  if (!identity) return undefined;
  const type = String(identity.type ?? '');
  if (type === 'None') {
    // Resource Manager's identity service refuses this before Batch sees it (Azure/azure-rest-api-specs#17650):
    // 400 BadRequest "The request format was unexpected, a non-UserAssigned identity type should not contain: userAssignedIdentities".
    if (Object.keys((identity.userAssignedIdentities as Json | undefined) ?? {}).length > 0) {
      throw new ArmHttpError(
        400,
        'BadRequest',
        'The request format was unexpected, a non-UserAssigned identity type should not contain: userAssignedIdentities',
        {},
        'identity.userAssignedIdentities',
      );
    }
    return undefined;
  }
  if (type !== 'UserAssigned') {
    throw armErrors.invalidContent(`Batch pools support only user-assigned identities; identity.type '${type}' is not supported.`, 'identity.type');
  }
  const ids = Object.keys((identity.userAssignedIdentities as Json | undefined) ?? {});
  if (ids.length === 0)
    throw armErrors.invalidContent(
      'identity.userAssignedIdentities must name at least one identity when identity.type is UserAssigned.',
      'identity.userAssignedIdentities',
    );
  return {
    type: 'UserAssigned',
    userAssignedIdentities: ids.map((id) => {
      const found = ctx.identity?.lookup(id);
      if (!found) {
        throw new ArmHttpError(
          400,
          'FailedIdentityOperation',
          `Identity operation for resource '${id}' failed: the user-assigned identity was not found (Resource Manager answered ResourceNotFound).`,
          {},
          'identity.userAssignedIdentities',
        );
      }
      return { resourceId: id, clientId: found.clientId, principalId: found.principalId };
    }),
  };
}

export function createPool(ctx: ArmContext, caller: VerifiedToken, poolName: string, body: Json, headers: Record<string, string>): ArmResponse {
  checkPoolName(poolName);
  const scopeId = armPoolId(ctx.scope, poolName);
  authorizeArm(ctx.access, caller, WRITE, scopeId);
  const identity = identitiesOf(ctx, body);
  if (identity)
    authorizeIdentityAssignment(
      ctx.access,
      caller,
      WRITE,
      scopeId,
      identity.userAssignedIdentities.map((i) => i.resourceId),
    );
  const properties = (body.properties ?? {}) as Json;
  const existing = ctx.services.engine.pools.get(poolName.toLowerCase());
  if (existing) {
    if (headers['if-none-match'] === '*') {
      throw new ArmHttpError(412, 'PreconditionFailed', `The pool '${poolName}' already exists and If-None-Match: * forbids updating it.`);
    }
    const ifMatch = headers['if-match'];
    if (ifMatch && ifMatch !== '*' && ifMatch.replace(/^W\//, '').replace(/"/g, '') !== existing.eTag) {
      throw new ArmHttpError(412, 'PreconditionFailed', 'The condition specified using HTTP conditional header(s) is not met.');
    }
    if (existing.state === 'deleting')
      throw new ArmHttpError(409, 'PoolBeingDeleted', 'The specified pool has been marked for deletion and is being reclaimed.');
    // A repeated PUT of the same definition is a no-op; anything else is an update of what Batch lets change.
    if (ctx.definitions.get(poolName.toLowerCase()) !== JSON.stringify(body)) {
      ctx.definitions.set(poolName.toLowerCase(), JSON.stringify(updatePool(ctx, existing, body, true)));
    }
    return { status: 200, body: armPoolView(ctx.scope, existing), headers: { ETag: armETag(existing) } };
  }
  if (headers['if-match']) throw new ArmHttpError(412, 'PreconditionFailed', `The pool '${poolName}' does not exist (If-Match was given).`);
  let record;
  try {
    record = createPoolRecord(ctx.services, armPoolToPoolAdd(poolName, properties), identity);
  } catch (e) {
    if (e instanceof BatchHttpError) throw fromBatchError(e);
    throw e;
  }
  ctx.definitions.set(poolName.toLowerCase(), JSON.stringify(body));
  const view = armPoolView(ctx.scope, record);
  // 200, not 201: the spec lists both, Batch answers 200, and @azure/arm-batch (generated from the service's own
  // earlier description) takes only 200 as success.
  return { status: 200, body: view, headers: { ETag: armETag(record) } };
}

/** Pools_Update: PATCH of the properties a live pool takes (If-Match honoured); 200 with the pool. */
export function patchPool(ctx: ArmContext, caller: VerifiedToken, poolName: string, body: Json, headers: Record<string, string>): ArmResponse {
  checkPoolName(poolName);
  authorizeArm(ctx.access, caller, WRITE, armPoolId(ctx.scope, poolName));
  const pool = ctx.services.engine.pools.get(poolName.toLowerCase());
  if (!pool) throw armErrors.poolNotFound(poolName);
  const ifMatch = headers['if-match'];
  if (ifMatch && ifMatch !== '*' && ifMatch.replace(/^W\//, '').replace(/"/g, '') !== pool.eTag) {
    throw new ArmHttpError(412, 'PreconditionFailed', 'The condition specified using HTTP conditional header(s) is not met.');
  }
  if (pool.state === 'deleting') throw new ArmHttpError(409, 'PoolBeingDeleted', 'The specified pool has been marked for deletion and is being reclaimed.');
  if (body.identity !== undefined) identitiesOf(ctx, body);
  ctx.definitions.set(pool.id.toLowerCase(), JSON.stringify(updatePool(ctx, pool, body, false)));
  return { status: 200, body: armPoolView(ctx.scope, pool), headers: { ETag: armETag(pool) } };
}

export function getPool(ctx: ArmContext, caller: VerifiedToken, poolName: string): ArmResponse {
  checkPoolName(poolName);
  authorizeArm(ctx.access, caller, READ, armPoolId(ctx.scope, poolName));
  const pool = ctx.services.engine.pools.get(poolName.toLowerCase());
  if (!pool) throw armErrors.poolNotFound(poolName);
  return { status: 200, body: armPoolView(ctx.scope, pool), headers: { ETag: armETag(pool) } };
}

export function deletePool(ctx: ArmContext, caller: VerifiedToken, poolName: string): ArmResponse {
  checkPoolName(poolName);
  authorizeArm(ctx.access, caller, DELETE, armPoolId(ctx.scope, poolName));
  const pool = ctx.services.engine.pools.get(poolName.toLowerCase());
  // Deleting what is not there is done already (Resource Manager's delete is idempotent).
  if (!pool) return { status: 204 };
  if (pool.state !== 'deleting') ctx.services.engine.deletePool(pool);
  const op = randomUUID();
  ctx.operations.set(op, pool.id.toLowerCase());
  return {
    status: 202,
    headers: { Location: `${ctx.baseUrl}${armPoolId(ctx.scope, pool.id)}/operationResults/${op}?api-version=${ctx.apiVersion}`, 'Retry-After': '1' },
  };
}

/** The Location of a deletion: 202 while the pool is still being reclaimed, then 204. Not a spec operation (an LRO monitor). */
export function deleteOperation(ctx: ArmContext, caller: VerifiedToken, poolName: string, op: string): ArmResponse {
  authorizeArm(ctx.access, caller, DELETE, armPoolId(ctx.scope, poolName));
  const poolKey = ctx.operations.get(op);
  if (!poolKey || poolKey !== poolName.toLowerCase()) throw new ArmHttpError(404, 'OperationNotFound', `The operation '${op}' was not found.`);
  if (ctx.services.engine.pools.has(poolKey)) {
    return {
      status: 202,
      headers: { Location: `${ctx.baseUrl}${armPoolId(ctx.scope, poolName)}/operationResults/${op}?api-version=${ctx.apiVersion}`, 'Retry-After': '1' },
    };
  }
  return { status: 204 };
}

export function listPools(ctx: ArmContext, caller: VerifiedToken, query: Record<string, string>): ArmResponse {
  const accountPath = `/subscriptions/${ctx.scope.subscriptionId}/resourceGroups/${ctx.scope.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${ctx.scope.accountName}`;
  authorizeArm(ctx.access, caller, READ, accountPath);
  const keep = armPoolFilter(query.$filter);
  const project = armPoolSelect(query.$select);
  const max = query.maxresults === undefined ? 1000 : Number(query.maxresults);
  if (!Number.isInteger(max) || max < 1 || max > 1000)
    throw new ArmHttpError(400, 'InvalidQueryParameterValue', `maxresults must be a whole number from 1 to 1000, got '${query.maxresults}'.`);
  const skip = query.$skiptoken === undefined ? 0 : Number(query.$skiptoken);
  if (!Number.isInteger(skip) || skip < 0) throw new ArmHttpError(400, 'InvalidQueryParameterValue', `invalid $skiptoken '${query.$skiptoken}'.`);
  const all = [...ctx.services.engine.pools.values()].sort((a, b) => a.creationTime.getTime() - b.creationTime.getTime() || a.id.localeCompare(b.id));
  const views = all.map((p) => armPoolView(ctx.scope, p)).filter((v) => keep?.(v) ?? true);
  const page = views.slice(skip, skip + max).map((v) => project?.(v) ?? v);
  const more = skip + max < views.length;
  return {
    status: 200,
    body: { value: page, ...(more ? { nextLink: nextLink(`${ctx.baseUrl}${accountPath}/pools`, ctx.apiVersion, query, max, skip + max) } : {}) },
  };
}

/** The next page's link repeats the filter and selection, so the SDK's listNext needs nothing else. */
function nextLink(base: string, apiVersion: string, query: Record<string, string>, max: number, skip: number): string {
  const q = new URLSearchParams({ 'api-version': apiVersion, maxresults: String(max) });
  for (const k of ['$filter', '$select']) if (query[k] !== undefined) q.set(k, query[k]);
  q.set('$skiptoken', String(skip));
  return `${base}?${q.toString()}`;
}
