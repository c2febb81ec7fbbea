/**
 * The account itself through the management plane: BatchAccount_Get (`GET …/batchAccounts/{name}`) with the quotas
 * Batch reports in Batch-service allocation mode, and LocationOperations_ListSupportedVirtualMachineSkus
 * (`GET /subscriptions/{id}/providers/Microsoft.Batch/locations/{location}/virtualMachineSkus`) with the capabilities
 * the Compute SKU API gives (vCPUs, MemoryGB, GPUs, RdmaEnabled…), both from the emulator's catalog
 * (model/catalog.ts). The virtualMachineSkus $filter accepts what the spec names ("Valid properties for filtering are
 * familyName"): `familyName eq '…'`; any other filter answers 501 rather than an unfiltered list.
 */
import { CATALOG_SIZES, DEFAULT_QUOTAS, familyQuotas, skuCapabilities, type AccountQuotas } from '../model/catalog';
import type { AccountQuota } from '../model/quota';
import { authorizeArm } from './auth';
import type { VerifiedToken } from '../../identity/verify';
import { ArmHttpError } from './errors';
import type { ArmContext, ArmResponse } from './pools';

/** The quotas the account reports: the emulator's configured ones over Batch's defaults for a new account. */
export function reportedQuotas(q: AccountQuota): AccountQuotas {
  return {
    ...DEFAULT_QUOTAS,
    dedicatedCoreQuota: q.dedicatedCores ?? DEFAULT_QUOTAS.dedicatedCoreQuota,
    lowPriorityCoreQuota: q.lowPriorityCores ?? DEFAULT_QUOTAS.lowPriorityCoreQuota,
    dedicatedCoreQuotaPerVMFamily: { ...(q.perFamily ?? {}) },
    poolQuota: q.pools ?? DEFAULT_QUOTAS.poolQuota,
    activeJobAndJobScheduleQuota: q.activeJobs ?? DEFAULT_QUOTAS.activeJobAndJobScheduleQuota,
  };
}

export function getAccount(ctx: ArmContext, caller: VerifiedToken): ArmResponse {
  const { scope } = ctx;
  const id = `/subscriptions/${scope.subscriptionId}/resourceGroups/${scope.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${scope.accountName}`;
  authorizeArm(ctx.access, caller, 'Microsoft.Batch/batchAccounts/read', id);
  const q = reportedQuotas(ctx.services.engine.quota);
  return {
    status: 200,
    body: {
      id,
      name: scope.accountName,
      type: 'Microsoft.Batch/batchAccounts',
      // No location: BatchManagement 2023-11-01 models the account as a ProxyResource (the region is a setting of
      // the control plane, BATCH_LOCATION, where it asks for virtualMachineSkus).
      identity: { type: 'None' },
      properties: {
        accountEndpoint: ctx.accountEndpoint,
        provisioningState: 'Succeeded',
        poolAllocationMode: 'BatchService',
        publicNetworkAccess: 'Enabled',
        dedicatedCoreQuota: q.dedicatedCoreQuota,
        lowPriorityCoreQuota: q.lowPriorityCoreQuota,
        dedicatedCoreQuotaPerVMFamily: familyQuotas(q),
        dedicatedCoreQuotaPerVMFamilyEnforced: q.dedicatedCoreQuotaPerVMFamilyEnforced,
        poolQuota: q.poolQuota,
        activeJobAndJobScheduleQuota: q.activeJobAndJobScheduleQuota,
        allowedAuthenticationModes: ctx.sharedKey ? ['SharedKey', 'AAD', 'TaskAuthenticationToken'] : ['AAD', 'TaskAuthenticationToken'],
      },
    },
  };
}

const FAMILY_FILTER = /^\s*familyName\s+eq\s+'((?:[^']|'')*)'\s*$/i;

export function listVirtualMachineSkus(ctx: ArmContext, caller: VerifiedToken, location: string, query: Record<string, string>): ArmResponse {
  const scope = `/subscriptions/${ctx.scope.subscriptionId}/providers/Microsoft.Batch/locations/${location}`;
  authorizeArm(ctx.access, caller, 'Microsoft.Batch/locations/virtualMachineSkus/read', scope);
  if (location.toLowerCase().replace(/\s+/g, '') !== ctx.location.toLowerCase()) {
    throw new ArmHttpError(
      404,
      'LocationNotFound',
      `The location '${location}' is not a location of this emulated Batch service (it serves '${ctx.location}').`,
    );
  }
  let sizes = CATALOG_SIZES;
  const filter = query['$filter'];
  if (filter !== undefined) {
    const m = FAMILY_FILTER.exec(filter);
    if (!m)
      throw new ArmHttpError(
        501,
        'NotImplemented',
        `The local Batch emulator filters virtualMachineSkus only by "familyName eq '<family>'"; '${filter}' is not emulated.`,
      );
    const family = m[1].replace(/''/g, "'");
    sizes = sizes.filter((s) => s.family.toLowerCase() === family.toLowerCase());
  }
  const max = query.maxresults === undefined ? sizes.length : Number(query.maxresults);
  if (!Number.isSafeInteger(max) || max < 1)
    throw new ArmHttpError(400, 'InvalidParameter', `maxresults must be a positive integer, not '${query.maxresults}'.`, {}, 'maxresults');
  const start = Number(query.$skiptoken ?? 0) || 0;
  const page = sizes.slice(start, start + max);
  const body: { value: unknown[]; nextLink?: string } = {
    value: page.map((s) => ({ name: s.name, familyName: s.family, capabilities: skuCapabilities(s) })),
  };
  if (start + max < sizes.length) {
    const q = new URLSearchParams({ ...query, $skiptoken: String(start + max) });
    body.nextLink = `${ctx.baseUrl}${scope}/virtualMachineSkus?${q.toString()}`;
  }
  return { status: 200, body };
}
