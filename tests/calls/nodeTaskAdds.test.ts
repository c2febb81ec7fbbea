/**
 * Adding node tasks (addNodeTasks, behind nodeTasksAdd) costs one Batch request per 100 tasks, not one per node: a
 * Task_AddCollection (docs/call-budgets.md, "Node tasks"). Counted where the requests arrive, the emulator's exchanges,
 * at 2 and at 8 nodes' tasks (fails on the old activity: one POST /jobs/{}/tasks per task). The emulator answers the
 * collection as Batch does: per task, TaskExists for a task already there, which the activity counts as added.
 */
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import type { ExchangeRecord } from '../../local/batch/config';
import { createJob, createJobPool, getPoolSnapshot, listTasks, type BatchContext, type NodeSnapshot } from '../../shared/adapters/batch';
import { addNodeTasks } from '../../orchestrations/activities/nodeTasks';
import { batchTemplate } from '../../local/testing/callCounter';
import type { NodeTaskRequest } from '../../shared/core/contract';
import { until } from '../batch/until';
import { emulatorBatchContext } from '../batch/emulatorContext';

const POOL = 'adds-pool';
const BATCH_JOB = 'adds-run';

let emu: BatchEmulatorHandle;
let ctx: BatchContext;
let nodes: NodeSnapshot[];
const exchanges: ExchangeRecord[] = [];

beforeAll(async () => {
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 }, onExchange: (e) => exchanges.push(e) });
  ctx = emulatorBatchContext(emu);
  await createJobPool(ctx, {
    poolId: POOL,
    jobId: 'adds-job',
    vmSize: 'standard_hb120rs_v3',
    targetDedicatedNodes: 2,
    image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
  });
  nodes = await until('2 idle nodes', async () => {
    const s = await getPoolSnapshot(ctx, POOL);
    return s && s.nodes.length === 2 && s.nodes.every((n) => n.state === 'idle') ? s.nodes : undefined;
  });
  await createJob(ctx, { batchJobId: BATCH_JOB, jobId: 'adds-job', poolId: POOL });
}, 60_000);

afterAll(async () => {
  await emu?.stop();
});

async function requestsOf(work: () => Promise<unknown>): Promise<string[]> {
  const from = exchanges.length;
  await work();
  return exchanges.slice(from).map((e) => `${e.method} ${batchTemplate(e.path)}`);
}

/** `count` node tasks (affinity to the pool's nodes in turn, as many tasks per node as it takes), ids `<prefix>-<i>-a1`. */
const tasks = (prefix: string, count: number): NodeTaskRequest[] =>
  Array.from({ length: count }, (_, i) => ({ id: `${prefix}-${i}-a1`, affinityId: nodes[i % nodes.length].affinityId, commandLine: '/bin/sh -c "echo done"' }));

test.each([2, 8])("%i nodes' tasks: one task collection request, every task added", async (count) => {
  const prefix = `dl${count}`;
  expect(await requestsOf(() => addNodeTasks(ctx, { batchJobId: BATCH_JOB, tasks: tasks(prefix, count) }))).toEqual(['POST /jobs/{}/addtaskcollection']);
  const listed = (await listTasks(ctx, BATCH_JOB, { select: 'id' })).map((t) => t.taskId).filter((id) => id.startsWith(`${prefix}-`));
  expect(listed.sort()).toEqual(
    tasks(prefix, count)
      .map((t) => t.id)
      .sort(),
  );
});

test('a repeated add (the activity ran again): one request, the tasks there counted as added, nothing added twice', async () => {
  const again = tasks('dl8', 8);
  const before = (await listTasks(ctx, BATCH_JOB, { select: 'id' })).length;
  expect(await requestsOf(() => addNodeTasks(ctx, { batchJobId: BATCH_JOB, tasks: again }))).toEqual(['POST /jobs/{}/addtaskcollection']);
  const answer = exchanges[exchanges.length - 1];
  expect((await listTasks(ctx, BATCH_JOB, { select: 'id' })).length).toBe(before);
  // The emulator said TaskExists for each, per task, in a 200 (as Batch does).
  expect(answer.status).toBe(200);
  const results = (answer.responseBody as { value: { status: string; taskId: string; error?: { code: string } }[] }).value;
  expect(results.map((r) => [r.status, r.error?.code]).filter(([st, code]) => st !== 'clienterror' || code !== 'TaskExists')).toEqual([]);
  expect(results.map((r) => r.taskId).sort()).toEqual(again.map((t) => t.id).sort());
});

test('101 tasks: two requests (at most 100 tasks per collection)', async () => {
  const requests = await requestsOf(() => addNodeTasks(ctx, { batchJobId: BATCH_JOB, tasks: tasks('many', 101) }));
  expect(requests).toEqual(['POST /jobs/{}/addtaskcollection', 'POST /jobs/{}/addtaskcollection']);
  await until('the 101 tasks listed', async () =>
    (await listTasks(ctx, BATCH_JOB, { select: 'id' })).filter((t) => t.taskId.startsWith('many-')).length === 101 ? true : undefined,
  );
});
