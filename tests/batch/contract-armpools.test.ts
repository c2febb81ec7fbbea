/**
 * Management-plane pool update and filtered list (issue 29: both answered 501), raw REST with the app identity's
 * token as Resource Manager clients send it. What Batch lets a live pool change (scale, start task, metadata)
 * changes; a fixed property (vmSize, deploymentConfiguration, networkConfiguration, taskSlotsPerNode) is 400
 * PropertyCannotBeUpdated with Batch's details. $filter / $select / maxresults on the list, 400 for a malformed one.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';
import { waitFor } from '../../local/batch/testing/sdkHelpers';

let identity: IdentityService;
let wiring: LocalIdentityWiring;
let emu: BatchEmulatorHandle;

beforeAll(async () => {
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
    identity: wiring.nodeIdentities,
    arm: wiring.arm,
  });
}, 60_000);

afterAll(async () => {
  await emu?.stop();
  await identity?.stop();
});

interface ArmAnswer {
  status: number;
  body: {
    error?: { code?: string; message?: string; target?: string; details?: { code: string; message: string }[] };
    properties?: Record<string, unknown>;
    value?: { name: string; properties: Record<string, unknown> }[];
    nextLink?: string;
  };
}

async function call(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<ArmAnswer> {
  const token = await identity.resourceToken('https://management.azure.com/', { identity: identity.managedIdentities.byResourceId(wiring.app.resourceId)! });
  const res = await fetch(url, {
    method,
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...headers },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as ArmAnswer['body']) : {} };
}

const poolsUrl = () =>
  `${String(emu.armUrl)}/subscriptions/${wiring.arm.subscriptionId}/resourceGroups/${wiring.arm.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${emu.accountName}/pools`;
const arm = (method: string, pool: string, body?: unknown, headers?: Record<string, string>) =>
  call(method, `${poolsUrl()}/${pool}?api-version=2023-11-01`, body, headers);
const list = (query: string) => call('GET', `${poolsUrl()}?api-version=2023-11-01${query}`);

const properties = {
  vmSize: 'STANDARD_D2S_V3',
  deploymentConfiguration: {
    virtualMachineConfiguration: {
      imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
      nodeAgentSkuId: 'batch.node.ubuntu 22.04',
    },
  },
  scaleSettings: { fixedScale: { targetDedicatedNodes: 0 } },
};

describe('management pool update', () => {
  beforeAll(async () => {
    expect((await arm('PUT', 'upd', { properties })).status).toBe(200);
  });

  it('PATCH changes the scale, start task and metadata, and the pool resizes', async () => {
    const r = await arm('PATCH', 'upd', {
      properties: {
        scaleSettings: { fixedScale: { targetDedicatedNodes: 1 } },
        metadata: [{ name: 'owner', value: 'alice' }],
        startTask: { commandLine: '/bin/true' },
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.properties?.metadata).toEqual([{ name: 'owner', value: 'alice' }]);
    expect(r.body.properties?.startTask).toMatchObject({ commandLine: '/bin/true' });
    // The node counts before the resize ends: a second resize is refused until the pool is Steady (409 PoolBeingResized).
    await waitFor('the new node, the resize over', async () => {
      const p = (await arm('GET', 'upd')).body.properties;
      return p?.currentDedicatedNodes === 1 && p?.allocationState === 'Steady' ? true : undefined;
    });
    // Resizing back through the same door.
    expect((await arm('PATCH', 'upd', { properties: { scaleSettings: { fixedScale: { targetDedicatedNodes: 0 } } } })).status).toBe(200);
    await waitFor('the node to leave', async () => ((await arm('GET', 'upd')).body.properties?.currentDedicatedNodes === 0 ? true : undefined));
  });

  it('PATCH with an empty start task removes it', async () => {
    const r = await arm('PATCH', 'upd', { properties: { startTask: {} } });
    expect(r.status).toBe(200);
    expect(r.body.properties?.startTask).toBeUndefined();
  });

  it.each([
    ['vmSize', { vmSize: 'STANDARD_D4S_V3' }],
    [
      'deploymentConfiguration',
      {
        deploymentConfiguration: {
          virtualMachineConfiguration: {
            imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-focal', sku: '20_04-lts', version: 'latest' },
            nodeAgentSkuId: 'batch.node.ubuntu 20.04',
          },
        },
      },
    ],
    [
      'networkConfiguration',
      {
        networkConfiguration: {
          subnetId: '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/v/subnets/s',
        },
      },
    ],
    ['taskSlotsPerNode', { taskSlotsPerNode: 2 }],
  ])('PATCH of %s is 400 PropertyCannotBeUpdated with Batch details', async (name, change) => {
    const r = await arm('PATCH', 'upd', { properties: change });
    expect(r.status).toBe(400);
    expect(r.body.error?.code).toBe('PropertyCannotBeUpdated');
    expect(r.body.error?.details).toEqual(
      expect.arrayContaining([
        { code: 'PropertyName', message: name },
        { code: 'PropertyPath', message: `properties.${name}` },
      ]),
    );
  });

  it('PATCH repeating a fixed property with its current value is not a change', async () => {
    expect((await arm('PATCH', 'upd', { properties: { vmSize: 'standard_d2s_v3' } })).status).toBe(200);
  });

  it('PUT on the live pool updates what may change and refuses a changed vmSize', async () => {
    const ok = await arm('PUT', 'upd', { properties: { ...properties, metadata: [{ name: 'k', value: 'v' }] } });
    expect(ok.status).toBe(200);
    expect(ok.body.properties?.metadata).toEqual([{ name: 'k', value: 'v' }]);
    const bad = await arm('PUT', 'upd', { properties: { ...properties, vmSize: 'STANDARD_D4S_V3' } });
    expect(bad.status).toBe(400);
    expect(bad.body.error?.code).toBe('PropertyCannotBeUpdated');
  });

  it('PATCH honours If-Match and answers 404 for a missing pool', async () => {
    expect((await arm('PATCH', 'upd', { properties: { metadata: [] } }, { 'if-match': 'W/"0xNOPE"' })).status).toBe(412);
    const missing = await arm('PATCH', 'nope', { properties: { metadata: [] } });
    expect(missing.status).toBe(404);
    expect(missing.body.error?.code).toBe('PoolNotFound');
  });

  it('PATCH refuses a property the model does not define', async () => {
    expect((await arm('PATCH', 'upd', { properties: { bogus: 1 } })).status).toBe(400);
  });
});

describe('management pool list query', () => {
  beforeAll(async () => {
    for (const name of ['lst-a', 'lst-b', 'other-c']) expect((await arm('PUT', name, { properties })).status).toBe(200);
  });

  it('filters on name and properties/*', async () => {
    const byName = await list(`&$filter=${encodeURIComponent("startswith(name,'lst-')")}`);
    expect(byName.status).toBe(200);
    expect(byName.body.value?.map((p) => p.name).sort()).toEqual(['lst-a', 'lst-b']);
    const steady = await list(`&$filter=${encodeURIComponent("properties/allocationState eq 'Steady' and name eq 'other-c'")}`);
    expect(steady.body.value?.map((p) => p.name)).toEqual(['other-c']);
    const since = await list(
      `&$filter=${encodeURIComponent("properties/provisioningStateTransitionTime gt '2000-01-01T00:00:00Z' and properties/vmSize eq 'standard_d2s_v3'")}`,
    );
    expect(since.body.value?.length).toBeGreaterThanOrEqual(3);
  });

  it('selects top-level properties and pages with maxresults, the nextLink keeping the query', async () => {
    const first = await list(`&$select=properties/vmSize&maxresults=1&$filter=${encodeURIComponent("startswith(name,'lst-')")}`);
    expect(first.status).toBe(200);
    expect(first.body.value).toHaveLength(1);
    expect(Object.keys(first.body.value?.[0].properties ?? {})).toEqual(['vmSize']);
    const second = await call('GET', String(first.body.nextLink));
    expect(second.body.value?.map((p) => p.name)).toHaveLength(1);
    expect(second.body.nextLink).toBeUndefined();
  });

  it.each([
    ['an unknown property', `&$filter=${encodeURIComponent("properties/bogus eq 'x'")}`],
    ['a malformed filter', `&$filter=${encodeURIComponent('name eq')}`],
    ['a selection outside properties/', '&$select=name'],
    ['maxresults 0', '&maxresults=0'],
  ])('refuses %s with 400', async (_what, query) => {
    const r = await list(query);
    expect(r.status).toBe(400);
    expect(r.body.error?.code).toBe('InvalidQueryParameterValue');
  });
});

describe('management account', () => {
  it('GET of the Batch account answers 200 with its endpoint and quotas (was 501)', async () => {
    const url = poolsUrl().replace(/\/pools$/, '');
    const r = await call('GET', `${url}?api-version=2023-11-01`);
    expect(r.status).toBe(200);
    const p = r.body.properties ?? {};
    expect(p).toMatchObject({ provisioningState: 'Succeeded', poolAllocationMode: 'BatchService' });
    for (const k of ['dedicatedCoreQuota', 'lowPriorityCoreQuota', 'poolQuota', 'activeJobAndJobScheduleQuota']) expect(typeof p[k]).toBe('number');
    expect(Array.isArray(p.dedicatedCoreQuotaPerVMFamily)).toBe(true);
    expect((p.dedicatedCoreQuotaPerVMFamily as unknown[]).length).toBeGreaterThan(0);
  });
});
