/**
 * The emulator's account core quota: a pool allocates what fits under the per-family and the account-wide dedicated
 * core quota and ends steady with resize error AccountCoreQuotaReached; nodes of a pool being deleted count until they
 * are gone; a resize after that gets the rest. Every exchange is checked against the Batch OpenAPI document.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { createContractRecorder, type ContractRecorder } from '../../local/batch/contract';
import { loadConfig } from '../../shared/adapters/config';
import {
  createBatchContext,
  createJobPool,
  deletePool,
  getPoolSnapshot,
  resizePool,
  type BatchContext,
  type JobPoolSpec,
  type PoolSnapshot,
} from '../../shared/adapters/batch';
import { until } from './until';

let emu: BatchEmulatorHandle;
let recorder: ContractRecorder;
let ctx: BatchContext;

beforeAll(async () => {
  recorder = createContractRecorder();
  // Standard_D2s_v5: 2 cores, standardDSv5Family. Standard_HC44rs: 44 cores, standardHCSFamily. A pool takes 4 s to
  // delete: long enough that the resize made while it is deleting comes before it is gone, even on a loaded machine.
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20, poolDeleteMs: 4000 },
    quota: { perFamily: { standardDSv5Family: 6 }, dedicatedCores: 100 },
    onExchange: (ex) => recorder.onExchange(ex),
  });
  ctx = createBatchContext(
    loadConfig({
      BATCH_ACCOUNT_URL: emu.url,
      BATCH_ACCOUNT_NAME: emu.accountName,
      BATCH_ACCOUNT_KEY: emu.accountKey,
      AzureWebJobsStorage: 'UseDevelopmentStorage=true',
      STAGING_ACCOUNTS: 'devstoreaccount1',
    }),
  );
});

afterAll(async () => {
  await emu?.stop();
});

const spec = (poolId: string, vmSize: string, nodes: number): JobPoolSpec => ({
  poolId,
  jobId: poolId,
  vmSize,
  targetDedicatedNodes: nodes,
  image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
  nodeAgentSkuId: 'batch.node.ubuntu 22.04',
});

const steady = (poolId: string) =>
  until(`pool ${poolId} steady`, async () => {
    const s = await getPoolSnapshot(ctx, poolId);
    return s && s.allocationState === 'steady' ? s : undefined;
  });

const QUOTA = [{ code: 'AccountCoreQuotaReached', message: 'The specified account has reached core quota' }];

test('a pool over the family quota gets what fits and the resize error; the rest comes once a deleted pool is gone', async () => {
  await createJobPool(ctx, spec('q-a', 'Standard_D2s_v5', 2));
  expect(await steady('q-a')).toMatchObject({ currentDedicatedNodes: 2, resizeErrors: [] });
  await createJobPool(ctx, spec('q-b', 'Standard_D2s_v5', 3));
  const b: PoolSnapshot = await steady('q-b');
  expect(b).toMatchObject({ currentDedicatedNodes: 1, targetDedicatedNodes: 3, resizeErrors: QUOTA });
  // Another family is not limited by this one.
  await createJobPool(ctx, spec('q-hc', 'Standard_HC44rs', 2));
  expect(await steady('q-hc')).toMatchObject({ currentDedicatedNodes: 2, resizeErrors: [] });
  // The account total (100) now holds 6 + 88: one more HC node does not fit.
  await createJobPool(ctx, spec('q-hc2', 'Standard_HC44rs', 1));
  expect(await steady('q-hc2')).toMatchObject({ currentDedicatedNodes: 0, resizeErrors: QUOTA });

  // While q-a is being deleted its nodes still count.
  await deletePool(ctx, 'q-a');
  expect(emu.pools().find((p) => p.id === 'q-a')).toMatchObject({ state: 'deleting' });
  await resizePool(ctx, 'q-b', 3);
  expect(await steady('q-b')).toMatchObject({ currentDedicatedNodes: 1, resizeErrors: QUOTA });
  await until('q-a gone', async () => (emu.pools().some((p) => p.id === 'q-a') ? undefined : true));
  await resizePool(ctx, 'q-b', 3);
  expect(await steady('q-b')).toMatchObject({ currentDedicatedNodes: 3, resizeErrors: [] });

  // setQuota changes it at run time.
  emu.setQuota({});
  await resizePool(ctx, 'q-hc2', 1);
  expect(await steady('q-hc2')).toMatchObject({ currentDedicatedNodes: 1, resizeErrors: [] });
  expect(recorder.count()).toBeGreaterThan(10);
  expect(recorder.violations()).toEqual([]);
});
