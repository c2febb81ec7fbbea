/**
 * Spot/low-priority nodes in the emulator, as Batch documents them (learn.microsoft.com/azure/batch/batch-spot-vms):
 * a pool holds dedicated and Spot nodes side by side (isDedicated, currentLowPriorityNodes, node counts' lowPriority),
 * Spot cores have their own quota (AccountLowPriorityCoreQuotaReached), and a preempted node becomes `preempted`, stays
 * listed, its multi-instance task is requeued, and when capacity returns it keeps its id and boots again. Every
 * exchange is checked against the Batch OpenAPI document.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { createContractRecorder, type ContractRecorder } from '../../local/batch/contract';
import { loadConfig } from '../../shared/adapters/config';
import { createBatchContext, createJobPool, getPoolSnapshot, resizePool, type BatchContext, type JobPoolSpec } from '../../shared/adapters/batch';
import { until } from './until';

let emu: BatchEmulatorHandle;
let recorder: ContractRecorder;
let ctx: BatchContext;

beforeAll(async () => {
  recorder = createContractRecorder();
  // Standard_D2s_v5: 2 cores. 8 low-priority cores: 4 Spot nodes of that size.
  emu = await startBatchEmulator({
    timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
    quota: { lowPriorityCores: 8 },
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

const spec = (poolId: string, dedicated: number, spot: number): JobPoolSpec => ({
  poolId,
  jobId: poolId,
  vmSize: 'Standard_D2s_v5',
  targetDedicatedNodes: dedicated,
  targetLowPriorityNodes: spot,
  image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
  nodeAgentSkuId: 'batch.node.ubuntu 22.04',
});

const idleAndSteady = (poolId: string, idle: number) =>
  until(`pool ${poolId} steady with ${idle} idle nodes`, async () => {
    const s = await getPoolSnapshot(ctx, poolId);
    return s && s.allocationState === 'steady' && s.nodes.filter((n) => n.state === 'idle').length === idle ? s : undefined;
  });

test('a pool of dedicated and Spot nodes: each node says which it is, the pool and the node counts count them apart', async () => {
  await createJobPool(ctx, spec('spot-mix', 1, 2));
  const snap = await idleAndSteady('spot-mix', 3);
  expect(snap).toMatchObject({ currentDedicatedNodes: 1, targetDedicatedNodes: 1, currentLowPriorityNodes: 2, targetLowPriorityNodes: 2, resizeErrors: [] });
  expect(snap.nodes.filter((n) => n.isDedicated === false)).toHaveLength(2);
  const pool = await ctx.client.pool.get('spot-mix');
  expect(pool.enableInterNodeCommunication).toBe(true);
  const counts = (await ctx.client.account.listPoolNodeCounts()).find((c) => c.poolId === 'spot-mix');
  expect(counts?.dedicated?.total).toBe(1);
  expect(counts?.lowPriority).toMatchObject({ total: 2, idle: 2 });

  // A resize sets both targets: Spot nodes go, dedicated ones come.
  await resizePool(ctx, 'spot-mix', 3, 15, 0);
  const after = await idleAndSteady('spot-mix', 3);
  expect(after).toMatchObject({ currentDedicatedNodes: 3, currentLowPriorityNodes: 0, targetLowPriorityNodes: 0 });
  expect(after.nodes.every((n) => n.isDedicated !== false)).toBe(true);
});

test('Spot cores have their own quota: a pool over it gets what fits and AccountLowPriorityCoreQuotaReached', async () => {
  // 8 low-priority cores, none in use after the previous test: 4 nodes of 2 cores fit, the 5th does not.
  await createJobPool(ctx, spec('spot-quota', 2, 5));
  const snap = await until('spot-quota steady', async () => {
    const s = await getPoolSnapshot(ctx, 'spot-quota');
    return s && s.allocationState === 'steady' ? s : undefined;
  });
  expect(snap).toMatchObject({
    currentDedicatedNodes: 2,
    currentLowPriorityNodes: 4,
    targetLowPriorityNodes: 5,
    resizeErrors: [{ code: 'AccountLowPriorityCoreQuotaReached', message: 'The specified account has reached low priority core quota' }],
  });
  await ctx.client.pool.deleteMethod('spot-quota');
  await until('spot-quota gone', async () => (emu.pools().some((p) => p.id === 'spot-quota') ? undefined : true));
});

test('a preempted Spot node: state preempted, still listed, its multi-instance task requeued; restored with the same id', async () => {
  await createJobPool(ctx, spec('spot-pre', 0, 2));
  const snap = await idleAndSteady('spot-pre', 2);
  await ctx.client.job.add({ id: 'spot-job', poolInfo: { poolId: 'spot-pre' } });
  await ctx.client.task.add('spot-job', {
    id: 'mpi',
    commandLine: '/bin/sh -c "sleep 60"',
    multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: '/bin/true' },
  });
  await until('mpi running', async () => ((await ctx.client.task.get('spot-job', 'mpi')).state === 'running' ? true : undefined));
  const victim = snap.nodes[1].id;

  emu.setFaults({ nodes: [{ nodeId: victim, preempted: true }] });
  const task = await until('mpi requeued', async () => {
    const t = await ctx.client.task.get('spot-job', 'mpi');
    return t.state === 'active' && (t.executionInfo?.requeueCount ?? 0) >= 1 ? t : undefined;
  });
  expect(task.executionInfo).toMatchObject({ requeueCount: 1, retryCount: 0 });
  const pre = await getPoolSnapshot(ctx, 'spot-pre');
  expect(pre?.nodes.find((n) => n.id === victim)).toMatchObject({ state: 'preempted', isDedicated: false });
  expect(pre).toMatchObject({ currentLowPriorityNodes: 2 });
  const counts = (await ctx.client.account.listPoolNodeCounts()).find((c) => c.poolId === 'spot-pre');
  expect(counts?.lowPriority).toMatchObject({ preempted: 1, total: 2 });
  // The task needs both nodes: it waits while one is preempted.
  expect((await ctx.client.task.get('spot-job', 'mpi')).state).toBe('active');

  // Capacity returns: the node keeps its id, boots again and the task runs on it.
  emu.setFaults({ spotRestoreMs: 10 });
  await ctx.client.pool.removeNodes('spot-pre', { nodeList: [victim] });
  await idleAndSteady('spot-pre', 1);
  await resizePool(ctx, 'spot-pre', 0, 15, 2);
  await until('mpi running again', async () => ((await ctx.client.task.get('spot-job', 'mpi')).state === 'running' ? true : undefined));
  await ctx.client.job.terminate('spot-job');
  expect(recorder.violations()).toEqual([]);
});

test('Batch brings a preempted node back with its id when capacity returns (spotRestoreMs)', async () => {
  // Long enough to see the node preempted before it is back.
  emu.setFaults({ spotRestoreMs: 1500, nodes: [] });
  await createJobPool(ctx, spec('spot-back', 0, 1));
  const [node] = (await idleAndSteady('spot-back', 1)).nodes;
  emu.setFaults({ nodes: [{ nodeId: node.id, preempted: true }] });
  await until('preempted', async () => ((await getPoolSnapshot(ctx, 'spot-back'))?.nodes[0]?.state === 'preempted' ? true : undefined));
  const back = await idleAndSteady('spot-back', 1);
  expect(back.nodes.map((n) => n.id)).toEqual([node.id]);
  // Once per node: the fault still names it, and it is not preempted again.
  expect(back.nodes[0]).toMatchObject({ state: 'idle', isDedicated: false });
  expect(recorder.violations()).toEqual([]);
});
