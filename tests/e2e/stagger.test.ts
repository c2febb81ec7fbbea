/**
 * Images on many emulated nodes through the whole pipeline. With the image tree (the default) at most 10 nodes pull
 * from the registry and the others copy from a node that holds the image (docker save | docker load over the
 * emulator's ssh, paced by the per-node bandwidth cap); the registry's own counters must show it never served more
 * than 10 pulls, and every node's image store must hold the image with the one digest, checked blob by blob. With the
 * registry limited below the window, throttled pulls are retried with backoff. Real processes move real bytes.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, getJobView, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import { verifyNodeImage } from '../registry/nodeHarness';

let stack: Stack;

const NODES = 40;
const ref = () => `${stack.registry.host}/hpc/mpi-demo:1.0`;

function spec(id: string, extra: { command?: string; imageDistribution?: 'peers' | 'registry'; nodes?: number } = {}): string {
  return stringify({
    id,
    name: 'stagger',
    pool: { vmSize: 'Standard_D2s_v5', nodes: extra.nodes ?? NODES },
    container: { runtime: 'docker', images: [ref()], pullConcurrency: 10, ...(extra.imageDistribution ? { imageDistribution: extra.imageDistribution } : {}) },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: extra.command ?? 'true' },
  });
}

/**
 * Once the job is past PullingImages (and before cleanup removes the nodes), checks every node's image store
 * independently of the docker tool: the reference is there, every blob has the digest its name claims, every node
 * has the same image id, and the digest the node recorded for its peers is that id. Returns the problems and the ids.
 */
async function nodeImagesWhileRunning(id: string): Promise<{ problems: string[]; imageIds: Set<string>; nodes: number }> {
  // One look a second: the job stays past PullingImages for its 40-node preflight and MPI task (tens of seconds), and
  // every look is a request the loaded host serves beside the job's own work.
  for (let i = 0; i < 300; i++) {
    const view = await getJobView(stack, id).catch(() => undefined);
    if (view && ['StagingData', 'Running'].includes(view.state)) {
      const pool = stack.batch.pools().find((p) => p.nodes === NODES);
      if (!pool) break;
      const nodes = stack.batch.nodes(pool.id);
      const problems: string[] = [];
      const imageIds = new Set<string>();
      for (const n of nodes) {
        problems.push(...(await verifyNodeImage({ id: n.id, root: n.rootDir, taskDir: '', env: {} }, ref())));
        const refs = JSON.parse(readFileSync(path.join(n.rootDir, 'docker', 'images', 'refs.json'), 'utf8')) as { refs: Record<string, { imageId: string }> };
        const imageId = refs.refs[ref()]?.imageId;
        imageIds.add(imageId);
        const recorded = readFileSync(path.join(n.sharedDir, 'mpijob', 'images', id, 'digests'), 'utf8').trim();
        if (recorded !== imageId) problems.push(`${n.id}: recorded digest ${recorded}, holds ${imageId}`);
      }
      return { problems, imageIds, nodes: nodes.length };
    }
    if (view && ['Succeeded', 'Failed', 'Cancelled', 'CleaningUp'].includes(view.state)) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  return { problems: ['the job was never seen past PullingImages with its nodes up'], imageIds: new Set(), nodes: 0 };
}

async function explain(view: JobViewLite): Promise<void> {
  if (view.state === 'Succeeded') return;
  // The pool (and its files) may be gone already: the result keeps the master's output tails.
  const mpi = (view.result as { mpi?: { stdoutTail?: string; stderrTail?: string } } | undefined)?.mpi;
  console.log(
    `job ${view.id} ${view.state}: ${view.error?.message}\n--- recorded stdout ---\n${mpi?.stdoutTail ?? ''}\n--- recorded stderr ---\n${mpi?.stderrTail ?? ''}\n${await mpiOutput(stack, view)}`,
  );
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
    // Each node's NIC for node-to-node copies (docs/local-batch.md): the tree's copies are paced like real transfers.
    batch: { nodeBandwidthBytesPerSec: 32 * 1024 * 1024 },
  });
}, 120_000);
afterAll(async () => stack?.stop(), 120_000);

describe('images on many nodes', () => {
  // One 40-node job carries the tree's whole proof. Its result (every node's preflight figures, logs, subtasks) is
  // larger than a queue message and its per-node progress larger than Azure's 16 KB custom status: the job succeeds
  // only because the engine offloads the message to a blob and the pipeline publishes counts instead of node states.
  it('image tree on 40 nodes, registry limited to 5: only the 10 seeds ask the registry, throttled seed pulls are retried with backoff, every node holds the one verified image', async () => {
    stack.registry.resetStats();
    stack.registry.setLimit(5);
    const id = await submitSpec(stack, spec('stagger-tree', { command: 'sleep 3' }));
    const [images, view] = await Promise.all([nodeImagesWhileRunning(id), watchJob(stack, id, 420_000)]);
    await explain(view);
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    expect(images.nodes).toBe(NODES);
    expect(images.problems).toEqual([]);
    expect(images.imageIds.size).toBe(1);
    const stats = stack.registry.stats();
    // Nodes name themselves `<pool>/<node>` (X-Pull-Client). The only other client is the control plane reading the
    // image's manifest and config before the pool (issue 27's evidence): one client, no layer, not a node's pull.
    const clients = Object.keys(stats.perClient);
    expect(clients.filter((k) => k.includes('/')).length).toBeLessThanOrEqual(10);
    expect(clients.filter((k) => !k.includes('/')).length).toBeLessThanOrEqual(1);
    expect(stats.maxConcurrentObserved).toBeLessThanOrEqual(5);
    expect(stats.total429).toBeGreaterThan(0);
    expect(await failedPullTasks(view.batchJobId as string)).toBeGreaterThan(0);
    expect(Object.keys(view.result?.preflight?.nodes ?? {}).length).toBe(NODES);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 480_000);

  // The window without the tree needs only more nodes than the window (tests/registry/pull-stagger.test.ts drives
  // 40 node pulls against the registry without the pipeline).
  it('imageDistribution registry on 14 nodes, limited to 10: every node pulls, never more than 10 at once, no failed pull', async () => {
    stack.registry.resetStats();
    stack.registry.setLimit(10);
    const id = await submitSpec(stack, spec('stagger-registry', { imageDistribution: 'registry', nodes: 14 }));
    const view = await watchJob(stack, id, 420_000);
    await explain(view);
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    const stats = stack.registry.stats();
    expect(stats.totalPulls).toBeGreaterThanOrEqual(14);
    expect(stats.maxConcurrentObserved).toBeLessThanOrEqual(10);
    expect(stats.total429).toBe(0);
    expect(await failedPullTasks(view.batchJobId as string)).toBe(0);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 480_000);
});
