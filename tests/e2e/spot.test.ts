/**
 * pool.spot end to end on the local stack: Azurite, the Batch emulator running real processes and real Open MPI, the
 * Durable engine running the compiled app from dist/. A 2-node job on Spot nodes (pool.spot.nodes 2, fallback
 * "dedicated" after 0 preemptions) loses one Spot node to an injected preemption while its MPI task runs: Batch
 * requeues the task, the attempt ends as a `preemption`, the pool is moved to dedicated nodes, attempt 2 succeeds
 * there, and the cost record splits Spot and dedicated node-minutes. The same fault with fallback "wait" retries on
 * Spot nodes (no dedicated node ever), and with "fail" ends the job with the reason.
 *
 * The MPI program tells its attempts apart by a marker file outside the nodes (the emulated nodes share one disk):
 * attempt 1 finds none and sleeps, long enough for the test to preempt a node under it.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, getJobView, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import type { ExchangeRecord } from '../../local/batch/config';
import { batchIdFor } from '../../shared/core/planning/jobPlan';
import { batchClient, smallSpec } from '../ops/helpers';
import { until } from '../batch/until';

let stack: Stack;
const exchanges: ExchangeRecord[] = [];
const calls = (method: string, pathPattern: RegExp, status?: number) =>
  exchanges.filter((e) => e.method === method && pathPattern.test(e.path) && (status === undefined || e.status === status));

const notes = (view: JobViewLite) => (view.timeline ?? []).filter((e) => e.kind === 'note' && !e.reason.startsWith('admitted:')).map((e) => e.reason);

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImageFillerBytes: 0,
    logDestination: path.join(logs, 'e2e-spot-host.log'),
    batch: { onExchange: (e) => exchanges.push(e) },
  });
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

/** Submits a 2-node job on Spot nodes with `fallback`, preempts one node while its MPI task runs, and watches it end. */
async function preemptedJob(id: string, fallback: 'dedicated' | 'wait' | 'fail'): Promise<{ view: JobViewLite; victim: string; poolId: string }> {
  const poolId = batchIdFor('hpc', id);
  const marker = path.join(stack.batch.dataDir, `marker-${id}`);
  const doc = parse(
    smallSpec(id, { nodes: 2, command: `if [ ! -e ${marker} ]; then sleep 60; fi; echo "rank on $(hostname)"`, tags: { suite: 'spot' } }),
  ) as Record<string, unknown>;
  const pool = { ...(doc.pool as object), spot: { nodes: 2, fallback, maxPreemptions: 0 } };
  await submitSpec(stack, stringify({ ...doc, pool, retry: { backoff: { initial: 'PT1S', max: 'PT1S' } } }));

  await until(
    'the MPI task running',
    async () => {
      const v = await getJobView(stack, id);
      if (['Succeeded', 'Failed', 'Cancelled'].includes(v.state)) throw new Error(`job ended before the fault: ${v.state} ${v.error?.message}`);
      if (v.progress?.progress?.mpi?.state === 'running') return v;
      await new Promise((r) => setTimeout(r, 300));
      return undefined;
    },
    150_000,
  );
  // The pool Batch made: both nodes are Spot nodes.
  const spotNodes = (await batchClient(stack).computeNode.list(poolId)).map((n) => ({ id: n.id!, isDedicated: n.isDedicated }));
  expect(spotNodes.map((n) => n.isDedicated)).toEqual([false, false]);
  const victim = spotNodes.map((n) => n.id).sort()[1];
  writeFileSync(marker, '');
  stack.batch.setFaults({ nodes: [{ nodeId: victim, preempted: true }] });
  try {
    const view = await watchJob(stack, id, 240_000);
    console.log(`${view.id}: ${view.state} ${view.error?.message ?? ''}\n${notes(view).join('\n')}\n${JSON.stringify(view.result?.cost)}`);
    return { view, victim, poolId };
  } finally {
    stack.batch.setFaults({ nodes: [] });
  }
}

test('a Spot job survives a preemption: retried by class, falls back to dedicated nodes, its cost split', async () => {
  const { view, victim, poolId } = await preemptedJob('spot-fallback', 'dedicated');
  expect(view.error?.message).toBeUndefined();
  expect(view.state).toBe('Succeeded');
  const attempts = view.result?.attempts ?? [];
  expect(attempts.map((a) => [a.attempt, a.outcome, a.failureClass])).toEqual([
    [1, 'failed', 'preemption'],
    [2, 'succeeded', undefined],
  ]);
  expect(attempts[0].reason).toBe(`preemption: Azure took back Spot node(s) ${victim}`);
  expect(attempts[0].retryReason).toContain('falling back to 2 dedicated node(s)');
  expect(attempts[1].nodes).not.toContain(victim);
  expect(notes(view).find((n) => n.startsWith('attempt 1 of 1 failed (preemption)'))).toContain('pool.spot.fallback "dedicated"');
  // Created with Spot nodes only, then resized to dedicated nodes only (Spot target 0).
  const resizes = calls('POST', new RegExp(`^/pools/${poolId}/resize$`, 'i'), 202).map(
    (e) => e.requestBody as { targetDedicatedNodes?: number; targetLowPriorityNodes?: number } | undefined,
  );
  expect(resizes.at(-1)).toMatchObject({ targetDedicatedNodes: 2, targetLowPriorityNodes: 0 });
  expect(view.result?.mpi?.taskId).toBe('mpi-a2');
  expect(view.result?.mpi?.stdoutTail).toMatch(/rank on /);
  // The cost: Spot node-minutes until the fallback, dedicated ones after, each priced.
  const cost = view.result!.cost!;
  expect(cost.nodeMinutes.lowPriority).toBeGreaterThan(0);
  expect(cost.nodeMinutes.dedicated).toBeGreaterThan(0);
  expect(cost.nodeMinutes.total).toBeCloseTo(cost.nodeMinutes.lowPriority + cost.nodeMinutes.dedicated, 1);
  if (cost.estimatedCost !== undefined) {
    expect(cost.estimatedCostSplit).toBeDefined();
    expect(cost.estimatedCost).toBeCloseTo(cost.estimatedCostSplit!.dedicated + cost.estimatedCostSplit!.spot, 3);
  }
  expect(await checkCleanup(stack, view)).toEqual([]);
}, 420_000);

test('fallback "wait": past maxPreemptions the job is retried on Spot nodes again, never on dedicated ones', async () => {
  const { view, victim, poolId } = await preemptedJob('spot-wait', 'wait');
  expect(view.error?.message).toBeUndefined();
  expect(view.state).toBe('Succeeded');
  const attempts = view.result?.attempts ?? [];
  expect(attempts.map((a) => [a.attempt, a.outcome, a.failureClass])).toEqual([
    [1, 'failed', 'preemption'],
    [2, 'succeeded', undefined],
  ]);
  expect(attempts[0].retryReason).toContain('retried on Spot nodes again (pool.spot.fallback "wait"');
  expect(attempts[1].nodes).not.toContain(victim);
  expect(notes(view).find((n) => n.startsWith('attempt 1 of 1 failed (preemption)'))).toContain('pool.spot.fallback "wait"');
  // No resize ever asked for dedicated nodes: the Spot target stays, and the cost has Spot node-minutes only.
  const resizes = calls('POST', new RegExp(`^/pools/${poolId}/resize$`, 'i'), 202).map(
    (e) => e.requestBody as { targetDedicatedNodes?: number; targetLowPriorityNodes?: number } | undefined,
  );
  expect(resizes.filter((r) => (r?.targetDedicatedNodes ?? 0) > 0)).toEqual([]);
  expect(view.result!.cost!.nodeMinutes.dedicated).toBe(0);
  expect(view.result!.cost!.nodeMinutes.lowPriority).toBeGreaterThan(0);
  expect(await checkCleanup(stack, view)).toEqual([]);
}, 420_000);

test('fallback "fail": past maxPreemptions the job fails, saying why, and is cleaned up', async () => {
  const { view } = await preemptedJob('spot-fail', 'fail');
  expect(view.state).toBe('Failed');
  expect(view.error?.message).toContain('pool.spot.fallback is "fail"');
  expect((view.result?.attempts ?? []).map((a) => [a.attempt, a.outcome, a.failureClass])).toEqual([[1, 'failed', 'preemption']]);
  expect(await checkCleanup(stack, view)).toEqual([]);
}, 420_000);
