/**
 * Pool add: what Batch refuses, through the real @azure/batch SDK (issue 29). Each case was accepted (201) before.
 */
import type { BatchServiceClient, BatchServiceModels } from '@azure/batch';
import { FAST_TIMING, refusal } from './batchRefusal';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, sdkClient } from '../../local/batch/testing/sdkHelpers';

let seq = 0;
const pool = (extra: Partial<BatchServiceModels.PoolAddParameter> = {}): BatchServiceModels.PoolAddParameter => ({
  id: `pool-${++seq}`,
  vmSize: 'standard_d2s_v3',
  virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
  targetDedicatedNodes: 0,
  ...extra,
});

describe('pool add contract', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;
  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: FAST_TIMING });
    client = sdkClient(emu);
  });
  afterAll(async () => {
    await emu?.stop();
  });

  it("refuses taskSlotsPerNode above 256, above 4 × the size's vCPUs and below 1 (400 InvalidPropertyValue); accepts the limit", async () => {
    for (const taskSlotsPerNode of [257, 0]) {
      expect(await refusal(client.pool.add(pool({ taskSlotsPerNode })))).toEqual({ status: 400, code: 'InvalidPropertyValue', property: 'taskSlotsPerNode' });
    }
    // Standard_D2s_v3 has 2 vCPUs: at most 8 slots; an HB120rs_v3 (120 vCPUs) reaches Batch's own cap of 256.
    expect(await refusal(client.pool.add(pool({ taskSlotsPerNode: 9 })))).toEqual({ status: 400, code: 'InvalidPropertyValue', property: 'taskSlotsPerNode' });
    await client.pool.add(pool({ taskSlotsPerNode: 8 }));
    await client.pool.add(pool({ taskSlotsPerNode: 256, vmSize: 'Standard_HB120rs_v3' }));
  });

  it('refuses a start task maxTaskRetryCount below -1 and accepts -1', async () => {
    const startTask = (maxTaskRetryCount: number) => ({ commandLine: '/bin/true', maxTaskRetryCount });
    expect(await refusal(client.pool.add(pool({ startTask: startTask(-2) })))).toEqual({
      status: 400,
      code: 'InvalidPropertyValue',
      property: 'startTask.maxTaskRetryCount',
    });
    await client.pool.add(pool({ startTask: startTask(-1) }));
  });

  it('refuses a start task userIdentity with both username and autoUser', async () => {
    const userIdentity = { userName: 'batchuser', autoUser: { scope: 'pool' as const } };
    const userAccounts = [{ name: 'batchuser', password: 'p@ssw0rd-Local1' }];
    expect(await refusal(client.pool.add(pool({ userAccounts, startTask: { commandLine: '/bin/true', userIdentity } })))).toEqual({
      status: 400,
      code: 'InvalidPropertyValue',
      property: 'startTask.userIdentity.autoUser',
    });
  });

  it('refuses a start task username the pool defines no user account for, and accepts one it defines', async () => {
    const startTask = { commandLine: '/bin/true', userIdentity: { userName: 'ghost' } };
    expect(await refusal(client.pool.add(pool({ startTask })))).toEqual({
      status: 400,
      code: 'InvalidPropertyValue',
      property: 'startTask.userIdentity.username',
    });
    await client.pool.add(pool({ startTask, userAccounts: [{ name: 'ghost', password: 'p@ssw0rd-Local1' }] }));
  });

  it.each([
    ['an unknown VM size', { vmSize: 'Standard_Bogus9' }, 'vmSize'],
    [
      'an unknown node agent SKU',
      { virtualMachineConfiguration: { ...LINUX_VM_CONFIGURATION, nodeAgentSKUId: 'batch.node.nonexistent 1.0' } },
      'virtualMachineConfiguration.nodeAgentSKUId',
    ],
    [
      'an image Batch does not offer',
      { virtualMachineConfiguration: { ...LINUX_VM_CONFIGURATION, imageReference: { publisher: 'nobody', offer: 'nothing', sku: 'none' } } },
      'virtualMachineConfiguration.imageReference',
    ],
    [
      'a Linux image with the Windows agent',
      { virtualMachineConfiguration: { ...LINUX_VM_CONFIGURATION, nodeAgentSKUId: 'batch.node.windows amd64' } },
      'virtualMachineConfiguration.nodeAgentSKUId',
    ],
    ['a malformed subnetId', { networkConfiguration: { subnetId: 'my-subnet' } }, 'networkConfiguration.subnetId'],
  ] as [string, Partial<BatchServiceModels.PoolAddParameter>, string][])(
    'refuses %s with 400 InvalidPropertyValue naming it',
    async (_what, extra, property) => {
      expect(await refusal(client.pool.add(pool(extra)))).toEqual({ status: 400, code: 'InvalidPropertyValue', property });
    },
  );

  it('still refuses what it refused before: no VM configuration, a stray property', async () => {
    expect((await refusal(client.pool.add({ id: `pool-${++seq}`, vmSize: 'standard_d2s_v3', targetDedicatedNodes: 0 }))).status).toBe(400);
    expect((await refusal(client.pool.add(pool({ taskSlotsPerNode: 1.5 })))).status).toBe(400);
  });
});
