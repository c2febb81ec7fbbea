/**
 * A look at the node tasks in flight (observeNodeTasks, behind nodeTasksObserve) costs one Batch request whatever
 * the number of nodes: one list of the job's tasks with $select, not a GET per task (docs/call-budgets.md). Counted
 * where the requests arrive, the emulator's exchanges (fails on the old activity: one GET per task in flight).
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import type { ExchangeRecord } from '../../local/batch/config';
import { addNodeTask, createJob, createJobPool, getPoolSnapshot, getTask, type BatchContext, type NodeSnapshot } from '../../shared/adapters/batch';
import { observeNodeTasks } from '../../orchestrations/activities/nodeTasks';
import { batchTemplate } from '../../local/testing/callCounter';
import { until } from '../batch/until';
import { emulatorBatchContext } from '../batch/emulatorContext';

const POOL = 'calls-pool';
const BATCH_JOB = 'calls-run';

let emu: BatchEmulatorHandle;
let ctx: BatchContext;
let nodes: NodeSnapshot[];
const exchanges: ExchangeRecord[] = [];

beforeAll(async () => {
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 }, onExchange: (e) => exchanges.push(e) });
  ctx = emulatorBatchContext(emu);
  await createJobPool(ctx, {
    poolId: POOL,
    jobId: 'calls-job',
    vmSize: 'standard_hb120rs_v3',
    targetDedicatedNodes: 3,
    image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
  });
  nodes = await until('3 idle nodes', async () => {
    const s = await getPoolSnapshot(ctx, POOL);
    return s && s.nodes.length === 3 && s.nodes.every((n) => n.state === 'idle') ? s.nodes : undefined;
  });
  await createJob(ctx, { batchJobId: BATCH_JOB, jobId: 'calls-job', poolId: POOL });
  for (const [i, n] of nodes.entries()) {
    await addNodeTask(ctx, BATCH_JOB, { id: `dl-${i}-a1`, affinityId: n.affinityId, elevated: false, commandLine: '/bin/sh -c "echo done"' });
  }
  for (const i of nodes.keys())
    await until(`dl-${i}-a1 completed`, async () => ((await getTask(ctx, BATCH_JOB, `dl-${i}-a1`)).state === 'completed' ? true : undefined));
}, 60_000);

afterAll(async () => {
  await emu?.stop();
});

/** The Batch requests `work` makes, as "METHOD template". */
async function requestsOf(work: () => Promise<unknown>): Promise<string[]> {
  const from = exchanges.length;
  await work();
  return exchanges.slice(from).map((e) => `${e.method} ${batchTemplate(e.path)}`);
}

test('three tasks in flight: one list request, with $select, and every state as a GET would give it', async () => {
  const ids = ['dl-0-a1', 'dl-1-a1', 'dl-2-a1'];
  let observed: Awaited<ReturnType<typeof observeNodeTasks>> = [];
  const requests = await requestsOf(async () => {
    observed = await observeNodeTasks(ctx, { batchJobId: BATCH_JOB, taskIds: ids });
  });
  expect(requests).toEqual(['GET /jobs/{}/tasks']);
  expect(exchanges[exchanges.length - 1].query.$select).toBe('id,state,executionInfo,nodeInfo');
  expect(observed).toEqual(ids.map((id, i) => ({ id, state: 'completed', exitCode: 0, nodeId: nodes[i].id })));
});

test('the cost does not grow with the tasks asked for: two or three, one request; one task, one GET', async () => {
  expect(await requestsOf(() => observeNodeTasks(ctx, { batchJobId: BATCH_JOB, taskIds: ['dl-0-a1', 'dl-1-a1'] }))).toEqual(['GET /jobs/{}/tasks']);
  expect(await requestsOf(() => observeNodeTasks(ctx, { batchJobId: BATCH_JOB, taskIds: ['dl-0-a1'] }))).toEqual(['GET /jobs/{}/tasks/{}']);
});

test('a task not listed and a job that is gone: missing, in the order asked, still one request each', async () => {
  let observed: Awaited<ReturnType<typeof observeNodeTasks>> = [];
  expect(
    await requestsOf(async () => {
      observed = await observeNodeTasks(ctx, { batchJobId: BATCH_JOB, taskIds: ['dl-9-a1', 'dl-1-a1'] });
    }),
  ).toEqual(['GET /jobs/{}/tasks']);
  expect(observed.map((o) => [o.id, o.state])).toEqual([
    ['dl-9-a1', 'missing'],
    ['dl-1-a1', 'completed'],
  ]);
  const gone = await requestsOf(async () => {
    observed = await observeNodeTasks(ctx, { batchJobId: 'no-such-job', taskIds: ['dl-0-a1', 'dl-1-a1'] });
  });
  expect(gone).toEqual(['GET /jobs/{}/tasks']);
  expect(observed).toEqual([
    { id: 'dl-0-a1', state: 'missing' },
    { id: 'dl-1-a1', state: 'missing' },
  ]);
});
