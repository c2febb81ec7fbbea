/**
 * The properties each list operation can filter on, and with which operators, as the Batch REST reference
 * lists them ("OData filters in Azure Batch", learn.microsoft.com/rest/api/batchservice/odata-filters-in-batch).
 * A $filter naming anything else is refused with 400 InvalidQueryParameterValue, as Batch refuses it.
 */

export type FilterOp = 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le' | 'startswith';

export interface FilterableProperty {
  ops: FilterOp[];
  /** The property in the response when the filter name differs (the reference says lastModifiedTime for tasks). */
  path?: string;
}

export type Filterable = Record<string, FilterableProperty>;

const EQ: FilterableProperty = { ops: ['eq', 'ne'] };
const EQ_ONLY: FilterableProperty = { ops: ['eq'] };
const ORDERED: FilterableProperty = { ops: ['eq', 'ne', 'ge', 'gt', 'le', 'lt'] };
const ID: FilterableProperty = { ops: ['startswith', 'eq', 'ne', 'ge', 'gt', 'le', 'lt'] };
const STARTSWITH: FilterableProperty = { ops: ['startswith'] };

/** Account_ListPoolNodeCounts: "$filter ... only poolId is supported" (eq and startswith as for ids). */
export const NODE_COUNT_FILTERS: Filterable = { poolId: ID };

export const POOL_FILTERS: Filterable = {
  id: ID,
  state: EQ,
  stateTransitionTime: ORDERED,
  allocationState: EQ_ONLY,
  allocationStateTransitionTime: ORDERED,
  creationTime: ORDERED,
  enableAutoScale: EQ,
  lastModified: ORDERED,
  vmSize: EQ,
  enableInterNodeCommunication: EQ,
};

export const NODE_FILTERS: Filterable = {
  state: EQ,
  stateTransitionTime: ORDERED,
  lastBootTime: ORDERED,
  allocationTime: ORDERED,
  'startTaskInfo/state': EQ_ONLY,
  'startTaskInfo/result': EQ,
  'startTaskInfo/exitCode': ORDERED,
  'startTaskInfo/startTime': ORDERED,
  'startTaskInfo/endTime': ORDERED,
};

export const JOB_FILTERS: Filterable = {
  id: ID,
  state: EQ,
  stateTransitionTime: ORDERED,
  creationTime: ORDERED,
  lastModified: ORDERED,
  'executionInfo/startTime': ORDERED,
  'executionInfo/endTime': ORDERED,
  'executionInfo/poolId': ID,
};

export const TASK_FILTERS: Filterable = {
  id: ID,
  state: EQ,
  stateTransitionTime: ORDERED,
  creationTime: ORDERED,
  lastModifiedTime: { ...ORDERED, path: 'lastModified' },
  'executionInfo/startTime': ORDERED,
  'executionInfo/endTime': ORDERED,
  'executionInfo/exitCode': ORDERED,
  'executionInfo/result': EQ,
};

const prepRelease = (kind: string): Filterable => ({
  [`${kind}/state`]: EQ,
  [`${kind}/startTime`]: ORDERED,
  [`${kind}/endTime`]: ORDERED,
  [`${kind}/exitCode`]: ORDERED,
  [`${kind}/result`]: EQ,
});

export const PREP_RELEASE_FILTERS: Filterable = {
  poolId: EQ,
  nodeId: EQ,
  ...prepRelease('jobPreparationTaskExecutionInfo'),
  ...prepRelease('jobReleaseTaskExecutionInfo'),
};

export const FILE_FILTERS: Filterable = { name: STARTSWITH };

/**
 * Pools_ListByBatchAccount (management plane, 2023-11-01): "Valid properties for filtering are: name,
 * properties/allocationState, …/allocationStateTransitionTime, …/creationTime, …/provisioningState,
 * …/provisioningStateTransitionTime, …/lastModified, …/vmSize, …/interNodeCommunication, …/scaleSettings/autoScale,
 * …/scaleSettings/fixedScale". The two scale settings are objects (a `ne null` test), which the emulator's filter
 * does not parse: they are answered 501 by the list (arm/poolList.ts), not listed here.
 */
export const ARM_POOL_FILTERS: Filterable = {
  name: ID,
  'properties/allocationState': EQ,
  'properties/allocationStateTransitionTime': ORDERED,
  'properties/creationTime': ORDERED,
  'properties/provisioningState': EQ,
  'properties/provisioningStateTransitionTime': ORDERED,
  'properties/lastModified': ORDERED,
  'properties/vmSize': EQ,
  'properties/interNodeCommunication': EQ,
};
