/**
 * Updating a pool through the management plane: Pools_Update (PATCH, only the given properties change) and
 * Pools_Create on an existing pool with a changed definition (PUT, the body is the whole new definition).
 *
 * What Batch lets change on a live pool (api-version 2023-11-01) is what its data plane can change: the scale
 * (a resize), the start task, metadata, application packages, certificates and the node communication mode
 * (PoolPatchParameter / PoolUpdatePropertiesParameter). Any other property that differs from the pool's current
 * definition — vmSize, deploymentConfiguration, networkConfiguration, taskSlotsPerNode, userAccounts, mounts,
 * identity... — is refused as Batch's resource provider refuses it: 400 PropertyCannotBeUpdated, target
 * "BatchAccount", with the Reason / PropertyName / PropertyPath details (Azure/Batch#85, Azure/azure-sdk-for-net#40325).
 * A property given with its current value is not a change.
 */
import { BatchHttpError } from '../handlers/errors';
import { checkPoolPropertyChanges } from '../handlers/pools';
import { metadataOf } from '../handlers/validate';
import { touch } from '../model/etag';
import type { Json, PoolRecord } from '../model/types';
import { ArmHttpError } from './errors';
import { armPoolToPoolAdd, armPoolView, type ArmScope } from './poolModel';
import type { Services } from '../handlers/http';

/** What an update needs of the management plane's context (a subset of pools.ts' ArmContext). */
export interface UpdateContext {
  scope: ArmScope;
  services: Services;
  /** The body each pool was created or last updated with through this plane (pool id, lower case → JSON). */
  definitions: Map<string, string>;
}

/** The Pool properties a live pool takes; every other writable property is fixed at creation. */
export const UPDATABLE_POOL_PROPERTIES = [
  'scaleSettings',
  'startTask',
  'metadata',
  'applicationPackages',
  'certificates',
  'targetNodeCommunicationMode',
] as const;

/** Read-only properties: ignored in a body (Resource Manager drops them), never a change. */
const READ_ONLY = new Set([
  'lastModified',
  'creationTime',
  'provisioningState',
  'provisioningStateTransitionTime',
  'allocationState',
  'allocationStateTransitionTime',
  'currentDedicatedNodes',
  'currentLowPriorityNodes',
  'autoScaleRun',
  'resizeOperationStatus',
  'currentNodeCommunicationMode',
]);

const REASON = 'A property that cannot be updated was specified as part of the request.';

export function propertyCannotBeUpdated(name: string, path: string): ArmHttpError {
  return new ArmHttpError(400, 'PropertyCannotBeUpdated', REASON, {}, 'BatchAccount', [
    { code: 'Reason', message: REASON },
    { code: 'PropertyName', message: name },
    { code: 'PropertyPath', message: path },
  ]);
}

/** Key order and letter case do not make a change ("Enabled" vs "enabled", "STANDARD_D2S_V3" vs "standard_d2s_v3"). */
function canonical(v: unknown): unknown {
  if (typeof v === 'string') return v.toLowerCase();
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Json)[k])]),
    );
  return v;
}

const same = (a: unknown, b: unknown) => JSON.stringify(canonical(a)) === JSON.stringify(canonical(b));

/** The pool's current definition in the management shape: as created through this plane, else as it is shown. */
function currentDefinition(ctx: UpdateContext, pool: PoolRecord): { definition: Json; asCreated: boolean } {
  const stored = ctx.definitions.get(pool.id.toLowerCase());
  if (stored) return { definition: JSON.parse(stored) as Json, asCreated: true };
  const view = armPoolView(ctx.scope, pool);
  return { definition: { ...(view.identity ? { identity: view.identity } : {}), properties: view.properties }, asCreated: false };
}

/** The identities a definition names (resource ids, lower case, sorted): what a change of identity is judged on. */
function identityIds(body: Json): string[] {
  const identity = (body.identity ?? {}) as Json;
  if (String(identity.type ?? 'None') === 'None') return [];
  return Object.keys((identity.userAssignedIdentities as Json | undefined) ?? {})
    .map((id) => id.toLowerCase())
    .sort();
}

function batchToArm(e: unknown): never {
  if (e instanceof BatchHttpError) {
    const property = e.values.find((v) => v.key === 'PropertyName')?.value;
    throw new ArmHttpError(e.status, e.code, [e.message, property ? `Property: ${property}.` : ''].filter(Boolean).join(' '), {}, property);
  }
  throw e;
}

/**
 * Applies a management-plane update to `pool`. `replace` (a PUT) takes the body as the whole definition: an updatable
 * property it leaves out is cleared (scale: fixed 0, as the model says of an absent scaleSettings); a PATCH changes
 * only what it names. Returns the definition now in force (kept to tell a repeated PUT from an update).
 */
export function updatePool(ctx: UpdateContext, pool: PoolRecord, body: Json, replace: boolean): Json {
  const { definition: current, asCreated } = currentDefinition(ctx, pool);
  const before = (current.properties ?? {}) as Json;
  const given = (body.properties ?? {}) as Json;
  // A PUT that leaves out a fixed property changes it, judged against the definition the pool was created with; a
  // pool made through the data plane is only known by its view, full of defaults a body need not repeat.
  const fixedKeys = new Set([...(replace && asCreated ? Object.keys(before) : []), ...Object.keys(given)]);
  for (const k of [...fixedKeys].sort()) {
    if (READ_ONLY.has(k) || (UPDATABLE_POOL_PROPERTIES as readonly string[]).includes(k)) continue;
    if (!same(before[k], given[k])) throw propertyCannotBeUpdated(k, `properties.${k}`);
  }
  if ((replace || body.identity !== undefined) && !same(identityIds(current), identityIds(body))) throw propertyCannotBeUpdated('identity', 'identity');

  const properties: Json = { ...before };
  for (const k of UPDATABLE_POOL_PROPERTIES) {
    if (replace) properties[k] = given[k];
    else if (given[k] !== undefined) properties[k] = given[k];
  }
  // An empty start task in a PATCH removes it (the model's own words).
  const st = properties.startTask as Json | undefined;
  if (st && Object.keys(st).length === 0) delete properties.startTask;
  if (!replace && Object.keys(given).length === 0 && body.identity === undefined) return { ...current, properties };

  let next: Json;
  try {
    next = armPoolToPoolAdd(pool.id, properties);
    checkPoolPropertyChanges(next);
  } catch (e) {
    batchToArm(e);
  }
  const target = (next.targetDedicatedNodes as number) ?? 0;
  const targetLow = (next.targetLowPriorityNodes as number) ?? 0;
  const resizing = target !== pool.targetDedicatedNodes || targetLow !== pool.targetLowPriorityNodes;
  if (resizing && pool.allocationState !== 'steady') throw new ArmHttpError(409, 'PoolBeingResized', 'The specified pool is being resized.');

  pool.startTask = next.startTask ? { waitForSuccess: true, maxTaskRetryCount: 0, ...(next.startTask as Json) } : undefined;
  pool.metadata = metadataOf(next.metadata);
  pool.spec.certificateReferences = next.certificateReferences;
  pool.spec.applicationPackageReferences = next.applicationPackageReferences;
  pool.spec.targetNodeCommunicationMode = next.targetNodeCommunicationMode;
  if (next.resizeTimeout !== undefined) pool.resizeTimeout = next.resizeTimeout as string;
  touch(pool);
  if (resizing) ctx.services.engine.resize(pool, target, 'requeue', targetLow);
  return { ...current, properties };
}
