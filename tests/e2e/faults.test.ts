/**
 * Faults injected into the real pipeline on the local stack (one stack for the file, cheap 2-node jobs with no
 * input data): a node that goes unusable while the pool allocates, an image that does not exist in the
 * registry, and a storm of 503s from the Batch API. Each job must reach the right final state, never own more
 * than one pool, and leave nothing behind. (An MPI program exiting non-zero is covered in pipeline.test.ts.)
 */
import { readFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import type { ExchangeRecord } from '../../local/batch/config';

const DEMO_SPEC = readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8');
let stack: Stack;
/** Every Batch API call the emulator answered, as it answered it. */
const exchanges: ExchangeRecord[] = [];
const calls = (method: string, pathPattern: RegExp, status?: number) =>
  exchanges.filter((e) => e.method === method && pathPattern.test(e.path) && (status === undefined || e.status === status)).length;

type SpecDoc = { id?: string; data?: unknown; pool: Record<string, unknown>; container: Record<string, unknown>; mpi: Record<string, unknown> } & Record<
  string,
  unknown
>;
/** The demo spec on 2 nodes with no input data: the cheapest job that still goes through every stage. */
function cheapJob(id: string, patch: (spec: SpecDoc) => void = () => undefined): string {
  const spec = parse(DEMO_SPEC) as SpecDoc;
  spec.id = id;
  spec.data = { inputs: [] };
  spec.pool.nodes = 2;
  spec.mpi.command = 'hostname';
  patch(spec);
  return stringify(spec);
}

/**
 * Samples the account's pools while a job runs and remembers every pool tagged with the job's id: a
 * pipeline that lost track of its pool and created another would show two ids here.
 */
function watchOwnedPools(jobId: string): { stop(): Promise<Set<string>> } {
  // No SDK retries: under the 503 storm a refused sample is simply skipped instead of stalling for its backoff.
  const batch = stack.operator.batch({ noRetryPolicy: true });
  const seen = new Set<string>();
  let running = true;
  const loop = (async () => {
    while (running) {
      try {
        for (const pool of await batch.pool.list()) {
          const meta = new Map((pool.metadata ?? []).map((m) => [m.name, m.value]));
          if (meta.get('hpc-cp-owner') === 'hpc-mpi-control-plane' && meta.get('hpc-cp-job') === jobId && pool.id) seen.add(pool.id);
        }
      } catch {
        // The 503 storm answers our own sampling too; the next round will see the pools.
      }
      await new Promise((r) => setTimeout(r, 500));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return seen;
    },
  };
}

async function runJob(id: string, specText: string, timeoutMs: number): Promise<{ view: JobViewLite; pools: Set<string> }> {
  const pools = watchOwnedPools(id);
  try {
    const jobId = await submitSpec(stack, specText);
    expect(jobId).toBe(id);
    const view = await watchJob(stack, id, timeoutMs);
    if (view.state === 'Failed') console.log(`job ${id} failed: ${view.error?.message}`);
    return { view, pools: await pools.stop() };
  } catch (err) {
    await pools.stop();
    throw err;
  }
}

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'e2e-faults-host.log'),
    demoImageFillerBytes: 64 * 1024,
    batch: { onExchange: (e) => exchanges.push(e) },
  });
  // The start task compiles the demo program from this blob even when there is no input data.
  const software = stack.operator.blobService('data1').getContainerClient('software');
  await software.createIfNotExists();
  await software.getBlockBlobClient('shardsum.c').uploadFile(path.join(REPO_ROOT, 'examples', 'mpi', 'shardsum.c'));
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

describe('pipeline under injected faults', () => {
  it('replaces a node that goes unusable while the pool allocates, and succeeds on a full pool', async () => {
    stack.batch.setFaults({ unusableNodes: { count: 1, poolId: 'hpc-faults-unusable' } });
    try {
      const { view, pools } = await runJob('faults-unusable', cheapJob('faults-unusable'), 180_000);
      expect(view.error?.message).toBeUndefined();
      expect(view.state).toBe('Succeeded');
      // The replacement happened: the broken node was removed and the pool resized back to 2.
      expect(calls('POST', /^\/pools\/hpc-faults-unusable\/removenodes$/i, 202)).toBe(1);
      expect(calls('POST', /^\/pools\/hpc-faults-unusable\/resize$/i, 202)).toBeGreaterThanOrEqual(1);
      expect(view.result?.mpi?.stdoutTail ?? '').toMatch(/\S/);
      expect(calls('POST', /^\/pools$/, 201)).toBe(1);
      expect([...pools]).toEqual(['hpc-faults-unusable']);
      expect(await checkCleanup(stack, view)).toEqual([]);
    } finally {
      stack.batch.setFaults({ unusableNodes: undefined });
    }
  }, 240_000);

  it('fails clearly when an image does not exist: names the node and the registry message, and cleans up', async () => {
    const spec = cheapJob('faults-bad-image', (s) => {
      s.container = { runtime: 'docker', images: [`${stack.registry.host}/hpc/mpi-demo:no-such-tag`] };
      // A declared MPI version: the control plane then does not read the image before the pool (issue 27's evidence,
      // which refuses a missing image up front: tests/e2e/imageEvidence.test.ts), so the nodes' pull meets the 404.
      s.mpi.version = '4.1';
      // No start task: the docker runtime brings its own program; keep the job about the pull.
      delete s.pool.startTask;
    });
    const { view, pools } = await runJob('faults-bad-image', spec, 180_000);
    expect(view.state).toBe('Failed');
    expect(view.error?.message).toMatch(/manifest unknown/i);
    expect(view.error?.message).toMatch(/node/i);
    const transitions = (view.timeline ?? []).filter((e) => e.kind === 'transition').map((e) => e.to);
    expect(transitions).toEqual(['Submitted', 'Queued', 'Provisioning', 'PullingImages', 'CleaningUp', 'Failed']);
    const cleanup = (view.progress as { progress?: { cleanup?: { done?: string[] } } }).progress?.cleanup?.done ?? [];
    expect(cleanup).toEqual(expect.arrayContaining(['pool deleted']));
    expect([...pools]).toEqual(['hpc-faults-bad-image']);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 240_000);

  it('succeeds through a storm of 503s from the Batch API: the adapter retries', async () => {
    const poolCreatesBefore = calls('POST', /^\/pools$/, 201);
    const refusedBefore = exchanges.filter((e) => e.status === 503).length;
    stack.batch.setFaults({ seed: 7, throttle: { rate503: 0.25 } });
    let view: JobViewLite;
    let pools: Set<string>;
    try {
      ({ view, pools } = await runJob('faults-503', cheapJob('faults-503'), 180_000));
    } finally {
      stack.batch.setFaults({ throttle: undefined });
    }
    if (view.state !== 'Succeeded') console.log(await mpiOutput(stack, view));
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    expect(view.result?.mpi?.stdoutTail ?? '').toMatch(/\S/);
    // The storm was real: many calls were refused, and exactly one pool was created despite retried creates.
    expect(exchanges.filter((e) => e.status === 503).length - refusedBefore).toBeGreaterThan(5);
    expect(calls('POST', /^\/pools$/, 201) - poolCreatesBefore).toBe(1);
    expect([...pools]).toEqual(['hpc-faults-503']);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 240_000);
});
