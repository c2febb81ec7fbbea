/**
 * Acceptance (issue 4): pulling the demo image on 40 emulated nodes from a registry limited to 10 concurrent pulls.
 * All at once, the registry answers 429 toomanyrequests and some pulls fail; issued 10 at a time, none is refused
 * and every node ends up with a verified copy. Real `docker pull` processes, real HTTP, real bytes.
 * The registry's bandwidth cap makes each pull last long enough (seconds) for 40 starts to overlap on 2 cores.
 */
import { RegistryHandle, startRegistry } from '../../local/registry';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { TestNode, ToolResult, cleanupNodes, makeBaseDir, makeNode, runTool, verifyNodeImage } from './nodeHarness';

const NODES = 40;
const LIMIT = 10;
const FILLER = 256 * 1024;
const BANDWIDTH = 1536 * 1024;

let registry: RegistryHandle;
let base: string;

beforeAll(async () => {
  base = await makeBaseDir('pull-stagger-');
  registry = await startRegistry({ images: [await buildDemoImage({ fillerBytes: FILLER })], maxConcurrentPulls: LIMIT, bandwidthBytesPerSec: BANDWIDTH });
});

afterAll(async () => {
  await registry?.stop();
  if (base) await cleanupNodes(base);
});

async function nodes(prefix: string): Promise<TestNode[]> {
  return Promise.all(Array.from({ length: NODES }, (_, i) => makeNode(base, `${prefix}-${String(i).padStart(2, '0')}`)));
}

async function windowed<T>(items: T[], width: number, fn: (item: T) => Promise<ToolResult>): Promise<ToolResult[]> {
  const results: ToolResult[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]);
      }
    }),
  );
  return results;
}

test('40 nodes pulling all at once overload a registry limited to 10 concurrent pulls', async () => {
  const ref = `${registry.host}/hpc/mpi-demo:1.0`;
  const all = await nodes('burst');
  registry.resetStats();
  const results = await Promise.all(all.map((n) => runTool(n, 'docker', ['pull', ref])));
  const stats = registry.stats();
  const failed = results.filter((r) => r.code !== 0);
  expect(stats.total429).toBeGreaterThan(0);
  expect(failed.length).toBeGreaterThan(0);
  expect(stats.maxConcurrentObserved).toBeLessThanOrEqual(LIMIT);
  for (const f of failed) expect(f.stderr).toMatch(/^Error response from daemon: toomanyrequests: /m);
  // A failed pull leaves no image behind; a successful one leaves a verified image.
  for (const [i, r] of results.entries()) {
    const problems = await verifyNodeImage(all[i], ref);
    if (r.code === 0) expect(problems).toEqual([]);
    else expect(problems.join('\n')).toMatch(/no .* in the image store/);
  }
});

test('the same 40 nodes pulling 10 at a time are never refused and all hold a verified image', async () => {
  const ref = `${registry.host}/hpc/mpi-demo:1.0`;
  const all = await nodes('window');
  registry.resetStats();
  const results = await windowed(all, LIMIT, (n) => runTool(n, 'docker', ['pull', ref]));
  const stats = registry.stats();
  expect(results.filter((r) => r.code !== 0).map((r) => r.stderr)).toEqual([]);
  expect(stats.total429).toBe(0);
  expect(stats.totalPulls).toBe(NODES);
  expect(Object.keys(stats.perClient)).toHaveLength(NODES);
  const problems = (await Promise.all(all.map((n) => verifyNodeImage(n, ref)))).flat();
  expect(problems).toEqual([]);
});
