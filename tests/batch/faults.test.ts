/**
 * Faults injected into the Batch emulator show up as the state a real Batch account reports
 * (resize errors, unusable nodes, start task failures, 429 with Retry-After, 503, ignored affinity),
 * and the adapter either recovers (retries with backoff honouring Retry-After, counted here) or
 * reports a clear error naming the resource, the Batch code and its message. Every exchange, the
 * faulty ones included, is also checked against the Batch OpenAPI document.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { createContractRecorder, type ContractRecorder } from '../../local/batch/contract';
import { loadConfig } from '../../shared/adapters/config';
import {
  BatchError,
  addNodeTask,
  createBatchContext,
  createJob,
  createJobPool,
  deletePool,
  failedNodes,
  getPoolSnapshot,
  getTask,
  inspectPool,
  poolAllocationError,
  removeNodes,
  resizePool,
  type BatchContext,
  type JobPoolSpec,
  type PoolSnapshot,
  type RetryEvent,
  type RetryPolicy,
} from '../../shared/adapters/batch';
import { until } from './until';

const FAST_RETRY: RetryPolicy = { maxAttempts: 6, initialMs: 10, maxMs: 2_000, multiplier: 2, jitter: 0.5 };

const steady = (ctx: BatchContext, poolId: string, pred: (s: PoolSnapshot) => boolean = () => true) =>
  until(`pool ${poolId} steady`, async () => {
    const s = await getPoolSnapshot(ctx, poolId);
    return s && s.allocationState === 'steady' && pred(s) ? s : undefined;
  });

const settled = (s: PoolSnapshot) => s.nodes.every((n) => !['creating', 'starting', 'waitingforstarttask'].includes(n.state));

function pool(poolId: string, nodes: number, extra: Partial<JobPoolSpec> = {}): JobPoolSpec {
  return {
    poolId,
    jobId: poolId,
    vmSize: 'standard_hb120rs_v3',
    targetDedicatedNodes: nodes,
    image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
    nodeAgentSkuId: 'batch.node.ubuntu 22.04',
    ...extra,
  };
}

describe('Batch faults: visible state and adapter behaviour', () => {
  let emu: BatchEmulatorHandle;
  let recorder: ContractRecorder;
  let retries: RetryEvent[];
  let ctx: BatchContext;

  beforeAll(async () => {
    recorder = createContractRecorder();
    emu = await startBatchEmulator({
      timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 },
      onExchange: (ex) => recorder.onExchange(ex),
    });
    ctx = contextFor(emu.url);
  });

  beforeEach(() => {
    retries = [];
    emu.setFaults({
      allocation: undefined,
      unusableNodes: undefined,
      startTaskFailure: undefined,
      throttle: undefined,
      ignoreAffinity: false,
      slowNodes: undefined,
    });
  });

  afterAll(async () => {
    await emu?.stop();
  });

  function contextFor(url: string, policy: RetryPolicy = FAST_RETRY, requestTimeoutMs?: number): BatchContext {
    const config = loadConfig({
      BATCH_ACCOUNT_URL: url,
      BATCH_ACCOUNT_NAME: emu.accountName,
      BATCH_ACCOUNT_KEY: emu.accountKey,
      AzureWebJobsStorage: 'UseDevelopmentStorage=true',
      STAGING_ACCOUNTS: 'devstoreaccount1',
    });
    return createBatchContext(config, { policy, requestTimeoutMs, onRetry: (e) => retries.push(e) });
  }

  test('total allocation failure: steady pool with a resize error; the adapter names pool, code and message', async () => {
    emu.setFaults({ allocation: { maxNodes: 0, poolId: 'alloc-none' } });
    await createJobPool(ctx, pool('alloc-none', 3));
    const s = await steady(ctx, 'alloc-none');
    expect(s).toMatchObject({ currentDedicatedNodes: 0, targetDedicatedNodes: 3, nodes: [] });
    expect(s.resizeErrors).toEqual([{ code: 'AllocationFailed', message: expect.stringContaining('could not be allocated') }]);
    const err = poolAllocationError(s);
    expect(err).toBeInstanceOf(BatchError);
    expect(err!.message).toMatch(
      /^pools\.allocate on pool alloc-none failed: AllocationFailed: allocated 0 of 3 dedicated nodes: AllocationFailed: Desired number/,
    );
    expect(err).toMatchObject({ code: 'AllocationFailed', resource: 'pool alloc-none' });
    await deletePool(ctx, 'alloc-none');
  });

  test('partial allocation: fewer nodes, AllocationTimedout, and no error while still resizing', async () => {
    emu.setFaults({ allocation: { maxNodes: 2, poolId: 'alloc-part' } });
    await createJobPool(ctx, pool('alloc-part', 4));
    const first = await getPoolSnapshot(ctx, 'alloc-part');
    if (first!.allocationState === 'resizing') expect(poolAllocationError(first!)).toBeUndefined();
    const s = await steady(ctx, 'alloc-part', (x) => x.nodes.every((n) => n.state === 'idle'));
    expect(s).toMatchObject({ currentDedicatedNodes: 2, targetDedicatedNodes: 4 });
    expect(s.nodes).toHaveLength(2);
    expect(s.resizeErrors[0].code).toBe('AllocationTimedout');
    expect(poolAllocationError(s)!.message).toMatch(/allocated 2 of 4 dedicated nodes: AllocationTimedout/);
    await deletePool(ctx, 'alloc-part');
  });

  test('unusable node: visible with its error; removing it and resizing back recovers the pool', async () => {
    emu.setFaults({ unusableNodes: { count: 1, poolId: 'unusable' } });
    await createJobPool(ctx, pool('unusable', 2));
    const s = await steady(ctx, 'unusable', (x) => x.nodes.length === 2 && settled(x) && x.nodes.every((n) => n.state !== 'starting'));
    const broken = failedNodes(s);
    expect(broken).toEqual([{ nodeId: expect.any(String), state: 'unusable', reason: expect.stringMatching(/^NodeUnusable: /) }]);
    expect(s.nodes.filter((n) => n.state === 'idle')).toHaveLength(1);

    await removeNodes(
      ctx,
      'unusable',
      broken.map((b) => b.nodeId),
    );
    await steady(ctx, 'unusable', (x) => !x.nodes.some((n) => n.id === broken[0].nodeId));
    await resizePool(ctx, 'unusable', 2, 5);
    const healed = await steady(ctx, 'unusable', (x) => x.nodes.length === 2 && x.nodes.every((n) => n.state === 'idle'));
    expect(failedNodes(healed)).toEqual([]);
    await deletePool(ctx, 'unusable');
  });

  test('start task failure: node in starttaskfailed with the exit code', async () => {
    emu.setFaults({ startTaskFailure: { count: 1, poolId: 'starttask', exitCode: 7 } });
    await createJobPool(ctx, pool('starttask', 2, { startTask: { commandLine: '/bin/sh -c "echo setup"' } }));
    const s = await steady(ctx, 'starttask', (x) => x.nodes.length === 2 && settled(x));
    const failed = s.nodes.find((n) => n.state === 'starttaskfailed');
    expect(failed?.startTask).toMatchObject({ state: 'completed', exitCode: 7 });
    expect(failedNodes(s)).toEqual([{ nodeId: failed!.id, state: 'starttaskfailed', reason: expect.stringMatching(/^start task exited with code 7/) }]);
    expect(s.nodes.filter((n) => n.state === 'idle')).toHaveLength(1);
    await deletePool(ctx, 'starttask');
  });

  test('429 with Retry-After: calls are retried after at least the requested wait, and succeed', async () => {
    await createJobPool(ctx, pool('throttled', 0));
    emu.setFaults({ throttle: { rate429: 0.5, retryAfterSeconds: 1 }, seed: 7 });
    const started = Date.now();
    for (let i = 0; i < 3; i++) expect((await inspectPool(ctx, 'throttled')).exists).toBe(true);
    const elapsed = Date.now() - started;
    emu.setFaults({ throttle: undefined });
    console.log(`429 fault: ${retries.length} retries over 3 calls, ${elapsed} ms, delays ${retries.map((r) => r.delayMs).join(', ')} ms`);
    expect(retries.length).toBeGreaterThan(0);
    for (const r of retries) {
      expect(r).toMatchObject({ operation: 'pools.inspect', status: 429, code: 'TooManyRequests', retryAfterMs: 1000 });
      expect(r.delayMs).toBeGreaterThanOrEqual(1000);
    }
    expect(elapsed).toBeGreaterThanOrEqual(1000 * retries.length);
  });

  test('503 ServerBusy: retried with growing jittered backoff, and succeeds', async () => {
    emu.setFaults({ throttle: { rate503: 0.4 }, seed: 3 });
    for (let i = 0; i < 8; i++) await inspectPool(ctx, 'throttled');
    emu.setFaults({ throttle: undefined });
    expect(retries.length).toBeGreaterThan(0);
    expect(retries.every((r) => r.status === 503 && r.code === 'ServerBusy' && r.retryAfterMs === undefined)).toBe(true);
    console.log(`503 fault: ${retries.length} retries over 8 calls, attempts ${retries.map((r) => r.attempt).join(',')}`);
  });

  test('a service that stays busy: a clear error after the allowed attempts', async () => {
    emu.setFaults({ throttle: { rate503: 1 } });
    const err = (await inspectPool(ctx, 'throttled').catch((e: unknown) => e)) as BatchError;
    emu.setFaults({ throttle: undefined });
    expect(err).toBeInstanceOf(BatchError);
    expect(err).toMatchObject({ code: 'ServerBusy', status: 503, attempts: FAST_RETRY.maxAttempts, operation: 'pools.inspect', resource: 'pool throttled' });
    expect(err.message).toMatch(/^pools\.inspect on pool throttled failed after 6 attempts: HTTP 503 ServerBusy: /);
    expect(retries).toHaveLength(FAST_RETRY.maxAttempts - 1);
  });

  test('a Retry-After longer than the adapter will sleep is handed back to the caller', async () => {
    emu.setFaults({ throttle: { rate429: 1, retryAfterSeconds: 30 } });
    const err = (await inspectPool(ctx, 'throttled').catch((e: unknown) => e)) as BatchError;
    emu.setFaults({ throttle: undefined });
    expect(err).toMatchObject({ code: 'TooManyRequests', status: 429, retryAfterMs: 30_000, attempts: 1 });
    expect(retries).toEqual([]);
  });

  test('a throttled create is retried without creating twice', async () => {
    emu.setFaults({ throttle: { rate429: 0.5, retryAfterSeconds: 0 }, seed: 7 });
    const results = [];
    for (const id of ['tc-1', 'tc-2', 'tc-3']) results.push(await createJobPool(ctx, pool(id, 0)));
    emu.setFaults({ throttle: undefined });
    // 429 means the service refused the call, so each create happened exactly once, on a later try.
    expect(retries.length).toBeGreaterThan(0);
    expect(results).toEqual(['tc-1', 'tc-2', 'tc-3'].map((poolId) => ({ poolId, created: true })));
    for (const id of ['tc-1', 'tc-2', 'tc-3']) await deletePool(ctx, id);
  });

  test('ignored affinity: the task snapshot shows the node it really ran on', async () => {
    await createJobPool(ctx, pool('affinity', 2));
    const s = await steady(ctx, 'affinity', (x) => x.nodes.length === 2 && x.nodes.every((n) => n.state === 'idle'));
    await createJob(ctx, { batchJobId: 'affinity-job', jobId: 'affinity', poolId: 'affinity' });
    emu.setFaults({ ignoreAffinity: true });
    const wanted = s.nodes[0];
    await addNodeTask(ctx, 'affinity-job', { id: 'pinned', affinityId: wanted.affinityId, commandLine: '/bin/true' });
    const t = await until('pinned done', async () => {
      const x = await getTask(ctx, 'affinity-job', 'pinned');
      return x.state === 'completed' ? x : undefined;
    });
    expect(t.nodeId).toBe(s.nodes[1].id);
    expect(t.nodeAffinityId).not.toBe(wanted.affinityId);
    await deletePool(ctx, 'affinity');
  });

  test('slow nodes: the snapshot shows ready and still-allocating nodes side by side', async () => {
    emu.setFaults({ slowNodes: { count: 1, extraAllocateMs: 1500, poolId: 'slow' } });
    await createJobPool(ctx, pool('slow', 2));
    const mixed = await until('one idle, one not', async () => {
      const s = await getPoolSnapshot(ctx, 'slow');
      return s && s.nodes.some((n) => n.state === 'idle') && s.nodes.some((n) => n.state !== 'idle') ? s : undefined;
    });
    expect(mixed.allocationState).toBe('resizing');
    await steady(ctx, 'slow', (x) => x.nodes.every((n) => n.state === 'idle'));
    await deletePool(ctx, 'slow');
  });

  test('lost responses: the request went through, the connection dropped; reads are retried, a create is not made twice', async () => {
    // A proxy in front of the emulator that forwards every other request but drops the connection
    // instead of returning the answer: the worst case for a retried create.
    let n = 0;
    const proxy = http.createServer((req, res) => {
      const drop = ++n % 2 === 1;
      const upstream = http.request(`${emu.url}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
        if (drop) {
          up.resume();
          up.on('end', () => req.socket.destroy());
          return;
        }
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const viaProxy = contextFor(`http://127.0.0.1:${(proxy.address() as AddressInfo).port}`);
      expect((await inspectPool(viaProxy, 'throttled')).exists).toBe(true);
      n = 0; // the create's first try is processed, its answer lost
      expect(await createJobPool(viaProxy, pool('reset-pool', 0))).toEqual({ poolId: 'reset-pool', created: false });
      expect(retries.length).toBeGreaterThanOrEqual(2);
      expect(retries.every((r) => r.status === undefined && r.code === 'ECONNRESET')).toBe(true);
      expect(retries.map((r) => r.operation)).toContain('pools.create');
    } finally {
      await new Promise<void>((r) => {
        proxy.close(() => r());
        proxy.closeAllConnections();
      });
    }
    expect(await inspectPool(ctx, 'reset-pool')).toMatchObject({ exists: true, ownedByJob: 'reset-pool' });
    await deletePool(ctx, 'reset-pool');
  });

  test('a hung connection cannot stall an activity: the request times out, is retried, then reported', async () => {
    const hung = http.createServer(() => undefined); // accepts, never answers
    await new Promise<void>((r) => hung.listen(0, '127.0.0.1', r));
    try {
      const slow = contextFor(`http://127.0.0.1:${(hung.address() as AddressInfo).port}`, { ...FAST_RETRY, maxAttempts: 2 }, 200);
      const started = Date.now();
      const err = (await inspectPool(slow, 'any').catch((e: unknown) => e)) as BatchError;
      expect(err).toBeInstanceOf(BatchError);
      expect(err).toMatchObject({ code: 'REQUEST_ABORTED_ERROR', attempts: 2, resource: 'pool any' });
      expect(err.message).toMatch(/no response within the request timeout/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(400);
      expect(retries).toHaveLength(1);
    } finally {
      await new Promise<void>((r) => {
        hung.close(() => r());
        hung.closeAllConnections();
      });
    }
  });

  test('every exchange, faulty ones included, conforms to the Batch OpenAPI document', () => {
    console.log(`Batch fault-test contract coverage\n${recorder.report()}`);
    expect(recorder.violations()).toEqual([]);
    const statuses = [...recorder.statuses().values()].flat();
    expect(statuses).toEqual(expect.arrayContaining([429, 503]));
    // The throttling answers carried Retry-After as Batch sends it (whole seconds).
    const throttled = recorder.exchanges().filter((e) => e.status === 429);
    expect(throttled.length).toBeGreaterThan(0);
    for (const e of throttled) expect(e.responseHeaders?.['retry-after']).toMatch(/^\d+$/);
  });
});
