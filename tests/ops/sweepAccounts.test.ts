/**
 * The orphan sweep over every Batch account of the deployment (BATCH_ACCOUNTS): a job placed on a second account
 * leaves its pool there, and the sweep finds and deletes it there; an account that cannot be listed is reported and
 * does not stop the sweep of the others, and the jobs placed on it are left alone until it answers again. Real parts:
 * two Batch emulators, Azurite for the job store and the sweep's lease; Durable is an in-memory stand-in (no run).
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { createBatchContext, type BatchContext } from '../../shared/adapters/batch';
import { poolOwnershipMetadata } from '../../shared/adapters/batch/common';
import { loadConfig } from '../../shared/adapters/config';
import { runSweep, type OrchestrationControl, type SweepDeps } from '../../shared/adapters/ops/sweep';
import { JobStore } from '../../shared/adapters/state';
import { emulatorBatchContext } from '../batch/emulatorContext';

let azurite: AzuriteHandle;
let home: BatchEmulatorHandle;
let second: BatchEmulatorHandle;
let homeCtx: BatchContext;
let secondCtx: BatchContext;
let store: JobStore;
let hostBlobs: BlobServiceClient;

const noOrchestrations: OrchestrationControl = {
  status: async () => undefined,
  terminate: async () => undefined,
  purge: async () => undefined,
};

/** A Batch account nobody answers at (a closed port), one attempt. */
function unreachable(): BatchContext {
  const cfg = loadConfig({
    BATCH_ACCOUNT_URL: 'http://127.0.0.1:9',
    BATCH_ACCOUNT_NAME: 'gone',
    BATCH_ACCOUNT_KEY: Buffer.from('k').toString('base64'),
    AzureWebJobsStorage: 'UseDevelopmentStorage=true',
    STAGING_ACCOUNTS: 'devstoreaccount1',
  });
  return createBatchContext(cfg, { policy: { maxAttempts: 1, initialMs: 10, maxMs: 10, multiplier: 1, jitter: 0 } });
}

async function ownedPool(ctx: BatchContext, poolId: string, jobId: string): Promise<void> {
  await ctx.client.pool.add({
    id: poolId,
    vmSize: 'Standard_D2s_v5',
    targetDedicatedNodes: 0,
    virtualMachineConfiguration: {
      imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
      nodeAgentSKUId: 'batch.node.ubuntu 22.04',
    },
    metadata: poolOwnershipMetadata(jobId, 'tid/alice'),
  });
}

async function poolState(ctx: BatchContext, poolId: string): Promise<string | undefined> {
  try {
    return (await ctx.client.pool.get(poolId)).state;
  } catch {
    return undefined; // gone
  }
}

function deps(otherAccounts: SweepDeps['otherAccounts']): SweepDeps {
  return {
    batch: homeCtx,
    homeAccount: home.accountName,
    otherAccounts,
    store,
    orchestrations: noOrchestrations,
    stagingAccounts: [],
    hostBlobs,
    // No grace: a pool of an unknown job is a leak at once.
    settings: { stallLimitMs: 600_000, graceMs: 0, stagingRetentionMs: 3_600_000 },
  };
}

beforeAll(async () => {
  azurite = await startAzurite();
  const timing = { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 };
  home = await startBatchEmulator({ timing });
  second = await startBatchEmulator({ timing, accountName: 'batchsecond' });
  homeCtx = emulatorBatchContext(home, 2);
  secondCtx = emulatorBatchContext(second, 2);
  store = JobStore.fromConnectionString(azurite.connectionString(), { jobsTable: `Jobs${process.pid}`, eventsTable: `JobEvents${process.pid}` });
  await store.ensureTables();
  hostBlobs = BlobServiceClient.fromConnectionString(azurite.connectionString());
}, 60_000);

afterAll(async () => {
  await second?.stop();
  await home?.stop();
  await azurite?.stop();
});

describe('the sweep walks every Batch account', () => {
  it('deletes a leftover pool in the second account, and reports an unreachable account without stopping', async () => {
    await ownedPool(homeCtx, 'hpc-ghost-home', 'ghost-home');
    await ownedPool(secondCtx, 'hpc-ghost-second', 'ghost-second');
    const report = await runSweep(
      deps([
        { name: 'gone', batch: unreachable() },
        { name: second.accountName, batch: secondCtx },
      ]),
    );
    expect(report.ran).toBe(true);
    expect(report.accounts).toEqual([
      { name: home.accountName, listed: true },
      { name: 'gone', listed: false, error: expect.any(String) },
      { name: second.accountName, listed: true },
    ]);
    expect(report.skipped).toEqual([expect.objectContaining({ step: expect.stringContaining('Batch account gone') })]);
    const deletions = report.actions.filter((a) => a.kind === 'deletePool');
    expect(deletions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ poolId: 'hpc-ghost-home', ok: true }),
        expect.objectContaining({ poolId: 'hpc-ghost-second', account: second.accountName, ok: true }),
      ]),
    );
    expect(deletions.find((a) => a.poolId === 'hpc-ghost-home')).not.toHaveProperty('account');
    expect(await poolState(secondCtx, 'hpc-ghost-second')).not.toBe('active');
    expect(await poolState(homeCtx, 'hpc-ghost-home')).not.toBe('active');
  });

  it('with only the home account, a pool in another account is not seen (the old behaviour this fixes)', async () => {
    await ownedPool(secondCtx, 'hpc-ghost-second2', 'ghost-second2');
    const report = await runSweep(deps(undefined));
    expect(report.actions.filter((a) => a.kind === 'deletePool' && a.poolId === 'hpc-ghost-second2')).toEqual([]);
    expect(await poolState(secondCtx, 'hpc-ghost-second2')).toBe('active');
    const swept = await runSweep(deps([{ name: second.accountName, batch: secondCtx }]));
    expect(swept.actions).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'deletePool', poolId: 'hpc-ghost-second2', ok: true })]));
  });
});
