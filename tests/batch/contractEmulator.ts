/**
 * The setup the SDK contract files share: one emulator with Batch-like fast timing for the describe block, an SDK
 * client for it, and one Linux pool of one node that is up before the first test. Registers its own hooks.
 */
import type { BatchServiceClient } from '@azure/batch';
import { FAST_TIMING } from './batchRefusal';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, sdkClient, waitForNodes } from '../../local/batch/testing/sdkHelpers';

export interface ContractEmulator {
  emu: BatchEmulatorHandle;
  client: BatchServiceClient;
}

/** Call inside a describe block: the returned object is filled by beforeAll and stopped by afterAll. */
export function emulatorWithPool(poolId: string): ContractEmulator {
  const env = {} as ContractEmulator;
  beforeAll(async () => {
    env.emu = await startBatchEmulator({ timing: FAST_TIMING });
    env.client = sdkClient(env.emu);
    await env.client.pool.add({ id: poolId, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: LINUX_VM_CONFIGURATION, targetDedicatedNodes: 1 });
    await waitForNodes(env.client, poolId, 1);
  });
  afterAll(async () => {
    await env.emu?.stop();
  });
  return env;
}
