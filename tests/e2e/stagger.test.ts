/**
 * Staggered image pulls through the whole pipeline: 40 emulated nodes must all hold the image before the MPI
 * containers start, and the registry (limited like the seeds' overloaded one) must never see more than the
 * allowed number of nodes pulling. Real `docker pull` processes move real bytes from the local OCI registry.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';

let stack: Stack;

function spec(id: string): string {
  return stringify({
    id,
    name: 'stagger',
    pool: { vmSize: 'Standard_D2s_v5', nodes: 40 },
    container: { runtime: 'docker', images: [`${stack.registry.host}/hpc/mpi-demo:1.0`], pullConcurrency: 10 },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: 'true' },
  });
}

async function explain(view: JobViewLite): Promise<void> {
  if (view.state === 'Succeeded') return;
  // The pool (and its files) may be gone already: the result keeps the master's output tails.
  const mpi = (view.result as { mpi?: { stdoutTail?: string; stderrTail?: string } } | undefined)?.mpi;
  console.log(`job ${view.id} ${view.state}: ${view.error?.message}\n--- recorded stdout ---\n${mpi?.stdoutTail ?? ''}\n--- recorded stderr ---\n${mpi?.stderrTail ?? ''}\n${await mpiOutput(stack, view)}`);
}

async function failedPullTasks(batchJobId: string): Promise<number> {
  const batch = stack.operator.batch();
  const tasks = await batch.task.list(batchJobId);
  return tasks.filter((t) => t.id?.startsWith('pull-') && t.executionInfo?.exitCode !== 0).length;
}

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'e2e-stagger-host.log'),
    registryMaxConcurrentPulls: 10,
    // A shared bandwidth cap makes pulls take long enough to overlap, as on a real registry: without it a
    // 1 MB pull is over before the next node's docker process has started, and no limit is ever reached.
    registryBandwidthBytesPerSec: 16 * 1024 * 1024,
    demoImageFillerBytes: 2 * 1024 * 1024,
  });
}, 120_000);
afterAll(async () => stack?.stop(), 120_000);

describe('staggered pulls on 40 nodes', () => {
  it('with the registry limited to 10 concurrent pulls: succeeds with zero failed pulls and never more than 10 pulling', async () => {
    stack.registry.resetStats();
    const id = await submitSpec(stack, spec('stagger-limit-10'));
    const view = await watchJob(stack, id, 420_000);
    await explain(view);
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    const stats = stack.registry.stats();
    expect(stats.totalPulls).toBeGreaterThanOrEqual(40);
    expect(stats.maxConcurrentObserved).toBeLessThanOrEqual(10);
    expect(stats.total429).toBe(0);
    expect(await failedPullTasks(view.batchJobId as string)).toBe(0);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 480_000);

  it('with the registry limited to 5: throttled pulls are retried with backoff and the job still succeeds', async () => {
    stack.registry.resetStats();
    stack.registry.setLimit(5);
    const id = await submitSpec(stack, spec('stagger-limit-5'));
    const view = await watchJob(stack, id, 420_000);
    await explain(view);
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    const stats = stack.registry.stats();
    expect(stats.total429).toBeGreaterThan(0);
    expect(stats.maxConcurrentObserved).toBeLessThanOrEqual(5);
    expect(await failedPullTasks(view.batchJobId as string)).toBeGreaterThan(0);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 480_000);
});
