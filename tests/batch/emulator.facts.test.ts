/**
 * The emulated account's facts (local/batch/model/catalog.ts) through Batch's own listings, read with the real SDKs
 * (@azure/batch account.listSupportedImages, @azure/arm-batch batchAccountOperations.get and
 * location.listSupportedVirtualMachineSkus), every exchange checked against the REST specs; and the pool adds Batch
 * refuses because of them (unknown size, unsupported image, an image with another agent SKU, too many task slots),
 * on both planes. Each of these pools was created (201) before the catalog existed.
 */
import type { AccessToken, TokenCredential } from '@azure/core-auth';
import type { BatchServiceClient } from '@azure/batch';
import type { SupportedSku } from '@azure/arm-batch';
import { startBatchEmulator, type BatchEmulatorHandle, type ExchangeRecord } from '../../local/batch';
import { createContractRecorder } from '../../local/batch/contract';
import { createManagementValidator, defaultManagementSpecDir, MANAGEMENT_API_VERSION } from '../../local/batch/contract/managementValidator';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';
import { sdkClient, signedFetch } from '../../local/batch/testing/sdkHelpers';
import { loadConfig } from '../../shared/adapters/config';
import * as batch from '../../shared/adapters/batch';

let identity: IdentityService;
let wiring: LocalIdentityWiring;
let emu: BatchEmulatorHandle;
let client: BatchServiceClient;
const recorder = createContractRecorder();
const armExchanges: ExchangeRecord[] = [];
// The official spec (tests may read ../shared): the emulator's own contract is derived from the SDK.
const validator = createManagementValidator(defaultManagementSpecDir());
let arm: batch.ArmBatchContext;

const VM = { imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' }, nodeAgentSKUId: 'batch.node.ubuntu 22.04' };
let seq = 0;
const uid = (p: string) => `${p}-${++seq}`;

beforeAll(async () => {
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
    identity: wiring.nodeIdentities,
    arm: wiring.arm,
    quota: { dedicatedCores: 480, perFamily: { standardHBv3Family: 240 }, pools: 20 },
    onExchange: (ex) => recorder.onExchange(ex),
    onArmExchange: (ex) => armExchanges.push(ex),
  });
  client = sdkClient(emu);
  const credential: TokenCredential = {
    getToken: async (): Promise<AccessToken> => ({
      token: await identity.resourceToken('https://management.azure.com/', { identity: wiring.app }),
      expiresOnTimestamp: Date.now() + 3_600_000,
    }),
  };
  const cfg = loadConfig({
    BATCH_ACCOUNT_URL: emu.url,
    BATCH_ACCOUNT_NAME: emu.accountName,
    BATCH_ACCOUNT_KEY: emu.accountKey,
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'devstoreaccount1',
    BATCH_SUBSCRIPTION_ID: wiring.arm.subscriptionId,
    BATCH_RESOURCE_GROUP: wiring.arm.resourceGroup,
    POOL_IDENTITY_RESOURCE_ID: wiring.pool.resourceId,
    POOL_IDENTITY_CLIENT_ID: wiring.pool.clientId,
    ARM_ENDPOINT: emu.armUrl as string,
  });
  arm = batch.createArmBatchContext(cfg, {
    credential,
    policy: { maxAttempts: 1, initialMs: 20, maxMs: 200, multiplier: 2, jitter: 0.5 },
  }) as batch.ArmBatchContext;
}, 60_000);

afterAll(async () => {
  await emu?.stop();
  await identity?.stop();
});

describe('data plane: Account_ListSupportedImages', () => {
  test('lists the HPC and Batch images with their node agent SKUs', async () => {
    const list = await client.account.listSupportedImages();
    const urns = list.map((i) => `${i.imageReference.publisher}:${i.imageReference.offer}:${i.imageReference.sku} ${i.nodeAgentSKUId}`);
    expect(urns).toEqual(
      expect.arrayContaining([
        'microsoft-dsvm:ubuntu-hpc:2204 batch.node.ubuntu 22.04',
        'almalinux:almalinux-hpc:8_7-hpc-gen2 batch.node.el 8',
        'canonical:0001-com-ubuntu-server-jammy:22_04-lts batch.node.ubuntu 22.04',
        'microsoft-azure-batch:ubuntu-server-container:20-04-lts batch.node.ubuntu 20.04',
      ]),
    );
    expect(list.find((i) => i.imageReference.offer === 'ubuntu-server-container')).toMatchObject({
      osType: 'linux',
      verificationType: 'verified',
      capabilities: expect.arrayContaining(['DockerCompatible']),
    });
  });

  test('filters on the documented properties (osType, verificationType, nodeAgentSKUId) and refuses others', async () => {
    const el8 = await client.account.listSupportedImages({ accountListSupportedImagesOptions: { filter: "nodeAgentSKUId eq 'batch.node.el 8'" } });
    expect(el8.length).toBeGreaterThan(0);
    expect(el8.every((i) => i.nodeAgentSKUId === 'batch.node.el 8')).toBe(true);
    const windows = await client.account.listSupportedImages({ accountListSupportedImagesOptions: { filter: "osType eq 'windows'" } });
    expect(windows.every((i) => i.osType === 'windows')).toBe(true);
    const res = await signedFetch(emu, 'GET', `/supportedimages?$filter=${encodeURIComponent("imageReference/offer eq 'x'")}`);
    expect(res.status).toBe(400);
    expect((res.json as { code: string }).code).toBe('InvalidQueryParameterValue');
  });
});

describe('pool add refuses what the account does not offer (400 InvalidPropertyValue)', () => {
  const refused = async (body: Record<string, unknown>) => {
    const res = await signedFetch(emu, 'POST', '/pools', { id: uid('p'), targetDedicatedNodes: 0, ...body });
    const json = res.json as { code: string; values: { key: string; value: string }[] };
    return { status: res.status, code: json.code, property: json.values?.find((v) => v.key === 'PropertyName')?.value };
  };

  test.each([
    ['an unknown VM size', { vmSize: 'Standard_Bogus9', virtualMachineConfiguration: VM }, 'vmSize'],
    ['a retired size', { vmSize: 'Standard_NC6', virtualMachineConfiguration: VM }, 'vmSize'],
    [
      'an unknown node agent SKU',
      { vmSize: 'Standard_D2s_v5', virtualMachineConfiguration: { ...VM, nodeAgentSKUId: 'batch.node.nonexistent 1.0' } },
      'virtualMachineConfiguration.nodeAgentSKUId',
    ],
    [
      'an image Batch does not support',
      { vmSize: 'Standard_D2s_v5', virtualMachineConfiguration: { ...VM, imageReference: { publisher: 'p', offer: 'o', sku: 's' } } },
      'virtualMachineConfiguration.imageReference',
    ],
    [
      'an Ubuntu image with the Windows agent',
      { vmSize: 'Standard_D2s_v5', virtualMachineConfiguration: { ...VM, nodeAgentSKUId: 'batch.node.windows amd64' } },
      'virtualMachineConfiguration.nodeAgentSKUId',
    ],
    [
      'an Ubuntu 22.04 image with the 20.04 agent',
      { vmSize: 'Standard_D2s_v5', virtualMachineConfiguration: { ...VM, nodeAgentSKUId: 'batch.node.ubuntu 20.04' } },
      'virtualMachineConfiguration.nodeAgentSKUId',
    ],
    ['more task slots than 4 × vCPUs', { vmSize: 'Standard_D2s_v5', taskSlotsPerNode: 9, virtualMachineConfiguration: VM }, 'taskSlotsPerNode'],
  ])('%s', async (_what, body, property) => {
    expect(await refused(body)).toEqual({ status: 400, code: 'InvalidPropertyValue', property });
  });

  test('real names are accepted, case-insensitively, as Batch compares them', async () => {
    for (const [vmSize, vm] of [
      ['standard_hb120rs_v3', VM],
      ['Standard_HB176rs_v4', { imageReference: { publisher: 'AlmaLinux', offer: 'almalinux-hpc', sku: '8_7-hpc-gen2' }, nodeAgentSKUId: 'batch.node.el 8' }],
      ['Standard_ND96isr_H100_v5', VM],
      [
        'Standard_F8s_v2',
        {
          imageReference: { publisher: 'microsoft-azure-batch', offer: 'ubuntu-server-container', sku: '20-04-lts' },
          nodeAgentSKUId: 'batch.node.ubuntu 20.04',
        },
      ],
    ] as const) {
      const res = await signedFetch(emu, 'POST', '/pools', {
        id: uid('ok'),
        vmSize,
        targetDedicatedNodes: 0,
        taskSlotsPerNode: 8,
        virtualMachineConfiguration: vm,
      });
      expect(`${vmSize} ${res.status}`).toBe(`${vmSize} 201`);
    }
  });

  test('the management plane refuses the same with the same code, naming the property', async () => {
    const base = `${emu.armUrl}/subscriptions/${wiring.arm.subscriptionId}/resourceGroups/${wiring.arm.resourceGroup}/providers/Microsoft.Batch/batchAccounts/${emu.accountName}`;
    const token = await identity.resourceToken('https://management.azure.com/', { identity: wiring.app });
    const res = await fetch(`${base}/pools/armbogus?api-version=${MANAGEMENT_API_VERSION}`, {
      method: 'PUT',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        properties: {
          vmSize: 'Standard_Bogus9',
          deploymentConfiguration: {
            virtualMachineConfiguration: {
              imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
              nodeAgentSkuId: 'batch.node.ubuntu 22.04',
            },
          },
        },
      }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: 'InvalidPropertyValue', target: 'vmSize' } });
  });
});

describe('management plane: the account and the region', () => {
  test("BatchAccount_Get reports the configured quotas over Batch's defaults", async () => {
    const account = await arm.client.batchAccountOperations.get(wiring.arm.resourceGroup, emu.accountName);
    expect(account).toMatchObject({
      name: emu.accountName,
      poolAllocationMode: 'BatchService',
      dedicatedCoreQuota: 480,
      lowPriorityCoreQuota: 100,
      poolQuota: 20,
      activeJobAndJobScheduleQuota: 300,
      dedicatedCoreQuotaPerVMFamilyEnforced: true,
    });
    expect(account.dedicatedCoreQuotaPerVMFamily).toEqual(
      expect.arrayContaining([
        { name: 'standardHBv3Family', coreQuota: 240 },
        { name: 'standardHBv4Family', coreQuota: 480 },
      ]),
    );
    emu.setQuota({ dedicatedCores: 96, perFamily: { standardHBv3Family: 0 } });
    const lowered = await arm.client.batchAccountOperations.get(wiring.arm.resourceGroup, emu.accountName);
    expect(lowered.dedicatedCoreQuota).toBe(96);
    expect(lowered.dedicatedCoreQuotaPerVMFamily).toEqual(expect.arrayContaining([{ name: 'standardHBv3Family', coreQuota: 0 }]));
    emu.setQuota({});
  });

  test('Location_ListSupportedVirtualMachineSkus gives the sizes with their capabilities, and filters by family', async () => {
    const skus: SupportedSku[] = [];
    for await (const s of arm.client.location.listSupportedVirtualMachineSkus('westeurope')) skus.push(s);
    const cap = (name: string) => Object.fromEntries((skus.find((s) => s.name === name)?.capabilities ?? []).map((c) => [c.name, c.value]));
    expect(cap('Standard_HB120rs_v3')).toMatchObject({ vCPUs: '120', MemoryGB: '448', RdmaEnabled: 'True', GPUs: '0' });
    expect(cap('Standard_HB120-32rs_v3')).toMatchObject({ vCPUs: '120', vCPUsAvailable: '32' });
    expect(cap('Standard_ND96asr_v4')).toMatchObject({ vCPUs: '96', GPUs: '8', RdmaEnabled: 'True' });
    expect(cap('Standard_NC24ads_A100_v4')).toMatchObject({ GPUs: '1', RdmaEnabled: 'False' });
    expect(skus.find((s) => s.name === 'Standard_HX176rs')?.familyName).toBe('standardHXFamily');
    expect(skus.map((s) => s.name)).toEqual(
      expect.arrayContaining(['Standard_HB176rs_v4', 'Standard_HC44rs', 'Standard_ND96isr_H100_v5', 'Standard_D8s_v5', 'Standard_E16s_v5', 'Standard_F16s_v2']),
    );
    const hbv4 = [];
    for await (const s of arm.client.location.listSupportedVirtualMachineSkus('westeurope', { filter: "familyName eq 'standardHBv4Family'" }))
      hbv4.push(s.name);
    expect(hbv4.length).toBe(5);
    expect(hbv4.every((n) => n?.startsWith('Standard_HB176'))).toBe(true);
    // Paging follows nextLink.
    const paged = [];
    for await (const s of arm.client.location.listSupportedVirtualMachineSkus('westeurope', { maxresults: 7 })) paged.push(s.name);
    expect(paged).toEqual(skus.map((s) => s.name));
  });

  test('another region is 404; a filter the emulator does not implement is 501', async () => {
    const token = await identity.resourceToken('https://management.azure.com/', { identity: wiring.app });
    const base = `${emu.armUrl}/subscriptions/${wiring.arm.subscriptionId}/providers/Microsoft.Batch/locations`;
    const get = (url: string) => fetch(url, { headers: { Authorization: `Bearer ${token}` } });
    expect((await get(`${base}/eastus/virtualMachineSkus?api-version=${MANAGEMENT_API_VERSION}`)).status).toBe(404);
    expect((await get(`${base}/westeurope/virtualMachineSkus?api-version=${MANAGEMENT_API_VERSION}&$filter=${encodeURIComponent("name eq 'x'")}`)).status).toBe(
      501,
    );
  });

  test('every exchange fits the REST specs', () => {
    expect(recorder.violations()).toEqual([]);
    const problems: string[] = [];
    for (const ex of armExchanges) {
      if (!validator.matchOperation(ex.method, ex.path)) continue;
      problems.push(
        ...validator
          .validateRequest({ ...ex, query: Object.fromEntries(Object.entries(ex.query).filter(([k]) => k !== '$skiptoken')) })
          .map((p) => `${ex.method} ${ex.path}: ${p}`),
      );
      problems.push(...validator.validateResponse(ex).map((p) => `${ex.method} ${ex.path} → ${p}`));
    }
    expect(problems).toEqual([]);
  });
});
