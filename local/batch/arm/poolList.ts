/**
 * Pools_ListByBatchAccount's query: `$filter` on the properties the spec names (model/filterable.ts ARM_POOL_FILTERS,
 * the data plane's OData subset: eq/ne/ordering/startswith with and/or), `$select` of top-level properties under
 * `properties/` ("Only top level properties under properties/ are valid for selection"), `maxresults` and the
 * `$skiptoken` of the nextLink. A malformed or unsupported filter or selection is 400 InvalidQueryParameterValue;
 * the scale-settings filters, valid on Azure, are 501 here.
 */
import { BatchHttpError } from '../handlers/errors';
import { ARM_POOL_FILTERS } from '../model/filterable';
import { matches, parseFilter } from '../model/odata';
import type { Json } from '../model/types';
import { ArmHttpError } from './errors';

/** The Pool model's top-level properties under `properties/` (readable ones included: a selection reads). */
export const SELECTABLE_POOL_PROPERTIES = [
  'displayName',
  'lastModified',
  'creationTime',
  'provisioningState',
  'provisioningStateTransitionTime',
  'allocationState',
  'allocationStateTransitionTime',
  'vmSize',
  'deploymentConfiguration',
  'currentDedicatedNodes',
  'currentLowPriorityNodes',
  'scaleSettings',
  'autoScaleRun',
  'interNodeCommunication',
  'networkConfiguration',
  'taskSlotsPerNode',
  'taskSchedulingPolicy',
  'userAccounts',
  'metadata',
  'startTask',
  'certificates',
  'applicationPackages',
  'applicationLicenses',
  'resizeOperationStatus',
  'mountConfiguration',
  'targetNodeCommunicationMode',
  'currentNodeCommunicationMode',
  'resourceTags',
] as const;

const badQuery = (name: string, value: string, why: string) =>
  new ArmHttpError(400, 'InvalidQueryParameterValue', `The value '${value}' of the query parameter '${name}' is invalid: ${why}`, {}, name);

/** A predicate for `$filter` (undefined: no filter). */
export function armPoolFilter(filter: string | undefined): ((pool: Json) => boolean) | undefined {
  if (filter === undefined) return undefined;
  if (!filter.trim()) throw badQuery('$filter', filter, 'the filter is empty.');
  if (/properties\/scaleSettings/i.test(filter)) {
    throw new ArmHttpError(
      501,
      'NotImplemented',
      'The local Batch emulator does not filter pools on properties/scaleSettings (every emulated pool has a fixed scale).',
      {},
      '$filter',
    );
  }
  try {
    const expr = parseFilter(filter, ARM_POOL_FILTERS);
    return (pool) => matches(expr, pool);
  } catch (e) {
    if (e instanceof BatchHttpError) throw badQuery('$filter', filter, e.message.replace(/^.*invalid: /, ''));
    throw e;
  }
}

/** A projection for `$select` (undefined: whole pools). The resource's id, name and type are always kept. */
export function armPoolSelect(select: string | undefined): ((pool: Json) => Json) | undefined {
  if (select === undefined) return undefined;
  const names = select.split(',').map((s) => s.trim());
  const keep = names.map((n) => {
    const m = /^properties\/([A-Za-z]+)$/.exec(n);
    const prop = m && SELECTABLE_POOL_PROPERTIES.find((p) => p.toLowerCase() === m[1].toLowerCase());
    if (!prop) throw badQuery('$select', select, `'${n}' is not a top-level property under properties/ (e.g. properties/provisioningState).`);
    return prop;
  });
  return (pool) => {
    const properties = (pool.properties ?? {}) as Json;
    return {
      id: pool.id,
      name: pool.name,
      type: pool.type,
      properties: Object.fromEntries(keep.filter((k) => properties[k] !== undefined).map((k) => [k, properties[k]])),
    };
  };
}
