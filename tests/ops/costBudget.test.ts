/**
 * Cost accounting, the budget guard, idle time, reused pools and concurrent sweeps on the local stack (real
 * Azurite, the Batch emulator running real Open MPI, the Durable engine running the compiled app from dist/).
 * Polling here is the local stack's 500 ms → 1 s; the tolerances below allow for 2 s intervals (POLL_MAX_MS), as before.
 */
import { existsSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, submitSpec, watchJob } from '../../local/jobRunner';
import { DEFAULT_PRICE_TABLE, pricePerNodeHour } from '../../shared/core/config/priceTable';
import { runSweep } from '../../shared/adapters/ops/sweep';
import type { JobCost } from '../../shared/core/ops/cost';
import { loadConfig } from '../../shared/adapters/config';
import { BatchRequestLog, appJobStore, batchClient, durableInstanceUrl, smallSpec, sweepDeps } from './helpers';

const POLL_MAX_MS = 2_000;
const IMAGE = {
  imageReference: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', sku: '22_04-lts', version: 'latest' },
  nodeAgentSKUId: 'batch.node.ubuntu 22.04',
};
const requests = new BatchRequestLog();
let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImageFillerBytes: 0,
    logDestination: path.join(logs, 'ops-cost-host.log'),
    batch: { onExchange: requests.onExchange },
    // The pool made below stands for one the deployment shares (pools have owners: a submitter may not name another's).
    env: { SHARED_POOLS: 'ops-shared-pool' },
  });
  // A long-lived pool the control plane did not create (no owner tag), as a reused pool is in practice: made now,
  // long ready when the reuse test runs (MPI launched onto nodes that became idle a moment before failed with 213 twice in five runs).
  await batchClient(stack).pool.add({
    id: 'ops-shared-pool',
    vmSize: 'Standard_D8s_v5',
    virtualMachineConfiguration: IMAGE,
    targetDedicatedNodes: 2,
    enableInterNodeCommunication: true,
    taskSlotsPerNode: 1,
  });
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

interface View {
  state: string;
  error?: { code: string; message: string };
  result?: { cost?: JobCost; nodeMinutes?: number; mpi?: { endTime?: string } };
  cost?: JobCost;
  timeline?: { kind: string; to?: string; reason: string }[];
}
/** Both nodes of the reused pool idle (the previous job's tasks and release tasks are done). */
async function sharedPoolIdle(): Promise<void> {
  for (let i = 0; ; i++) {
    const nodes = [];
    for await (const n of await batchClient(stack).computeNode.list('ops-shared-pool')) nodes.push(n);
    if (nodes.filter((n) => n.state === 'idle').length === 2) return;
    if (i > 120) throw new Error(`reused pool nodes not idle: ${nodes.map((n) => n.state).join(', ')}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

const operator = () => ({ headers: { 'x-functions-key': stack.host.keys.functionKey } });
const view = async (id: string) => (await (await fetch(`${stack.baseUrl}/api/jobs/${id}`, operator())).json()) as View;

describe('cost, budget and idle time', () => {
  it('records node-minutes = nodes × measured minutes (within two polls), priced from the table; usage sums it per tag; idle time measured', async () => {
    const id = await submitSpec(stack, smallSpec('ops-cost', { nodes: 2, command: 'sleep 4; hostname', tags: { team: 'ops-cost' } }));
    const done = await watchJob(stack, id, 150_000);
    expect(done.state).toBe('Succeeded');
    const v = await view(id);
    const cost = v.result!.cost!;
    expect(v.cost).toEqual(cost); // GET /api/jobs/{id} shows it at the top level too
    expect(cost.nodes).toBe(2);
    expect(cost.nodeMinutes.lowPriority).toBe(0);

    // What the emulator saw: the pool add and the pool delete request.
    const add = requests.find('POST', /^\/pools$/).find((e) => e.status === 201);
    const del = requests.find('DELETE', /^\/pools\/[^/]+$/).find((e) => e.path.includes(done.batchPoolId!));
    expect(add && del).toBeTruthy();
    const measured = (2 * (del!.at - add!.at)) / 60_000;
    // One poll per node, one more for the engine's dispatch (the orchestrator reads its clock when an episode starts,
    // which trails the emulator's request log by seconds on a loaded 2-core machine), and one for the MPI wait's
    // sub-orchestration handing its answer back to the job (a further episode before the release is recorded).
    const tolerance = (2 * 3 * POLL_MAX_MS) / 60_000;
    expect(Math.abs(cost.nodeMinutes.dedicated - measured)).toBeLessThanOrEqual(tolerance);
    const price = pricePerNodeHour(DEFAULT_PRICE_TABLE, 'Standard_D8s_v5')!;
    expect(cost.pricePerNodeHour).toBe(price);
    expect(cost.estimatedCost).toBeCloseTo((cost.nodeMinutes.dedicated / 60) * price, 3);
    expect(Object.keys(cost.perStage)).toEqual(expect.arrayContaining(['Provisioning', 'Running', 'CleaningUp']));

    // Idle: the MPI task's end (Batch's endTime) to the pool deletion request.
    const idleMs = del!.at - Date.parse(v.result!.mpi!.endTime!);
    console.log(
      `ops figures: node-minutes ${cost.nodeMinutes.dedicated} vs measured ${measured.toFixed(3)}; idle (MPI end → pool delete request) ${idleMs} ms; poll max ${POLL_MAX_MS} ms`,
    );
    // The bound (at most one polling interval) is a speed figure: `npm run bench -- pipeline` measures it, and the
    // polling schedule that gives it is pinned down deterministically by tests/orchestrations/mpiJob.replay.test.ts.
    // Here only its sign: the deletion request follows the task's end.
    expect(idleMs).toBeGreaterThanOrEqual(0);

    const usage = (await (await fetch(`${stack.baseUrl}/api/usage?tag=team=ops-cost`, operator())).json()) as {
      perTag: Record<string, { jobs: number; nodeMinutes: number; estimatedCost: number }>;
      perDay: Record<string, unknown>;
    };
    expect(usage.perTag['team=ops-cost']).toEqual({ jobs: 1, nodeMinutes: cost.nodeMinutes.total, estimatedCost: cost.estimatedCost, unpriced: 0 });
    expect(Object.keys(usage.perDay)).toEqual([cost.releasedAt.slice(0, 10)]);
  }, 180_000);

  it('cancels a job over limits.maxNodeHours with reason budget, and cleans up', async () => {
    // 2 nodes × 0.004 h = 7.2 s of wall clock after allocation: the 120 s program cannot finish.
    const id = await submitSpec(stack, smallSpec('ops-budget', { nodes: 2, command: 'sleep 120', limits: { maxNodeHours: 0.004 } }));
    const done = await watchJob(stack, id, 150_000);
    expect(done.state).toBe('Cancelled');
    expect(done.error?.message).toMatch(/^budget: [\d.]+ node-hours used, limit maxNodeHours 0\.004/);
    expect((done.timeline ?? []).filter((e) => e.kind === 'transition').map((e) => e.to)).toEqual(expect.arrayContaining(['CleaningUp', 'Cancelled']));
    expect(await checkCleanup(stack, done)).toEqual([]);
  }, 180_000);
});

describe('sweep on the stack', () => {
  it('two sweeps started at once act on each leaked resource once, without errors; a reused pool is never deleted', async () => {
    const batch = batchClient(stack);
    // The reused pool (made in beforeAll) is used by a job; a leaked pool we own belongs to an unknown job.
    await batch.pool.add({
      id: 'ops-leaked-pool',
      vmSize: 'Standard_D8s_v5',
      virtualMachineConfiguration: IMAGE,
      targetDedicatedNodes: 0,
      metadata: [
        { name: 'hpc-cp-owner', value: 'hpc-mpi-control-plane' },
        { name: 'hpc-cp-job', value: 'ops-ghost' },
      ],
    });

    await sharedPoolIdle();
    const id = await submitSpec(stack, smallSpec('ops-reuse', { command: 'hostname', pool: { poolId: 'ops-shared-pool', nodes: 2 } }));
    const done = await watchJob(stack, id, 150_000);
    if (done.state !== 'Succeeded')
      throw new Error(`ops-reuse ended ${done.state}: ${JSON.stringify({ error: done.error, logs: done.result?.logs, timeline: done.timeline })}`);

    await new Promise((r) => setTimeout(r, 1_500)); // past the grace below
    const settings = { stallLimitMs: 10 * 60_000, graceMs: 1_000, stagingRetentionMs: 60 * 60_000 };
    const [a, b] = await Promise.all([runSweep(sweepDeps(stack, settings)), runSweep(sweepDeps(stack, settings))]);
    const third = await runSweep(sweepDeps(stack, settings));
    const reports = [a, b, third];
    for (const r of reports) expect(r.actions.filter((x) => !x.ok)).toEqual([]);
    expect(reports.filter((r) => r.ran).length).toBeGreaterThanOrEqual(2);
    const poolDeletes = reports.flatMap((r) => r.actions).filter((x) => x.kind === 'deletePool');
    expect(poolDeletes.map((x) => (x as { poolId: string }).poolId)).toEqual(['ops-leaked-pool']);
    expect(requests.find('DELETE', /^\/pools\/ops-leaked-pool$/)).toHaveLength(1);

    // The reused pool is still there, no task of ours is active on it, and its Batch job ended.
    expect((await batch.pool.exists('ops-shared-pool')).body).toBe(true);
    expect(requests.find('DELETE', /^\/pools\/ops-shared-pool$/)).toHaveLength(0);
    const job = await batch.job.get(done.batchJobId!);
    expect(['completed', 'terminating']).toContain(job.state);
  }, 180_000);

  it('removes containers a failed release task left on a reused pool: a cleanup task on that node only, then the job is never looked at again', async () => {
    const batch = batchClient(stack);
    const settings = { stallLimitMs: 10 * 60_000, graceMs: 1_000, stagingRetentionMs: 60 * 60_000 };
    // The job release task fails on the pool's first node without running (a hung container runtime, say).
    stack.batch.setFaults({ releaseTaskFailure: { count: 1, poolId: 'ops-shared-pool' } });
    try {
      await sharedPoolIdle();
      const id = await submitSpec(
        stack,
        smallSpec('ops-reuse-docker', {
          command: 'hostname',
          pool: { poolId: 'ops-shared-pool', nodes: 2 },
          container: { runtime: 'docker', images: [`${stack.registry.host}/hpc/mpi-demo:1.0`] },
        }),
      );
      const done = await watchJob(stack, id, 150_000);
      if (done.state !== 'Succeeded')
        throw new Error(`ops-reuse-docker ended ${done.state}: ${JSON.stringify({ error: done.error, timeline: done.timeline })}`);
      const holders = () =>
        stack.batch
          .nodes('ops-shared-pool')
          .filter((n) => existsSync(path.join(n.rootDir, 'containers', `mpijob-${id}`)))
          .map((n) => n.id);
      for (let i = 0; i < 60 && (await batch.job.get(done.batchJobId!)).state !== 'completed'; i++) await new Promise((r) => setTimeout(r, 250));
      const left = holders();
      expect(left).toHaveLength(1); // the node whose release task failed; the other node's release task removed its container

      // First sweep: one cleanup task, pinned to that node, in a housekeeping job on the reused pool.
      const first = await runSweep(sweepDeps(stack, settings));
      expect(first.actions.filter((a) => !a.ok)).toEqual([]);
      const clean = first.actions.filter((a) => a.kind === 'cleanContainers');
      expect(clean).toEqual([
        expect.objectContaining({ rule: 'leftoverContainers', jobId: id, poolId: 'ops-shared-pool', tasks: [expect.objectContaining({ nodeId: left[0] })] }),
      ]);
      const cleanupJobId = (clean[0] as { cleanupJobId: string }).cleanupJobId;
      for (let i = 0; ; i++) {
        const tasks = [];
        for await (const t of await batch.task.list(cleanupJobId)) tasks.push(t);
        if (tasks.length && tasks.every((t) => t.state === 'completed')) {
          expect(tasks.map((t) => [t.nodeInfo?.nodeId, t.executionInfo?.exitCode])).toEqual([[left[0], 0]]);
          break;
        }
        if (i > 120) throw new Error(`cleanup tasks did not finish: ${JSON.stringify(tasks.map((t) => t.state))}`);
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(holders()).toEqual([]);

      // Second sweep: the node is clean; the housekeeping job goes and the row says so. Third: nothing more to do.
      const second = await runSweep(sweepDeps(stack, settings));
      expect(second.actions.filter((a) => !a.ok)).toEqual([]);
      expect(second.actions.filter((a) => a.rule === 'leftoverContainers').map((a) => a.kind)).toEqual(['finishContainerCleanup']);
      expect((await batch.job.get(cleanupJobId).catch(() => ({ state: 'gone' }))).state).toMatch(/^(deleting|gone)$/);
      const third = await runSweep(sweepDeps(stack, settings));
      expect(third.actions.filter((a) => a.rule === 'leftoverContainers')).toEqual([]);
      expect(third.observed.containerJobs).toBe(0);

      const row = await appJobStore(loadConfig(stack.settings)).get(id);
      expect(row?.containersCheckedAt).toEqual(expect.any(String));
      const notes = (await view(id)).timeline!.filter((e) => e.kind === 'note' && e.reason.startsWith('sweep leftoverContainers:')).map((e) => e.reason);
      expect(notes).toEqual([
        expect.stringContaining(`on ${left[0]} added to ${cleanupJobId}`),
        expect.stringContaining('no container of the job is left on its nodes'),
      ]);
      expect((await batch.pool.exists('ops-shared-pool')).body).toBe(true);
    } finally {
      stack.batch.setFaults({ releaseTaskFailure: undefined });
    }
  }, 240_000);

  it('purges finished jobs (row, timeline, orchestration history) past the retention when retention is on', async () => {
    const settings = { stallLimitMs: 10 * 60_000, graceMs: 1_000, stagingRetentionMs: 60 * 60_000 };
    const off = await runSweep(sweepDeps(stack, settings));
    expect(off.actions.filter((a) => a.kind === 'purgeJob')).toEqual([]);
    const on = await runSweep(sweepDeps(stack, { ...settings, jobsRetentionMs: 1 }));
    const purged = on.actions.filter((a) => a.kind === 'purgeJob');
    expect(on.actions.filter((a) => !a.ok)).toEqual([]);
    expect(purged.map((a) => a.jobId).sort()).toEqual(['ops-budget', 'ops-cost', 'ops-reuse', 'ops-reuse-docker']);
    expect((await fetch(`${stack.baseUrl}/api/jobs/ops-cost`, operator())).status).toBe(404);
    expect((await fetch(durableInstanceUrl(stack, 'ops-cost'))).status).toBe(404);
  }, 60_000);
});
