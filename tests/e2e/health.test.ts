/**
 * Node health checks end to end (docs/pipeline.md "Node health checks"): one 3-node Standard_HB120rs_v3 job on the local
 * stack, whose second and third nodes (creation order 1 and 2) each have a modelled hardware fault from the start
 * (local/batch/model/hardware.ts): a slow InfiniBand link on one, low memory bandwidth on the other. The preflight's
 * health checks (the stack judges ib, ibbw, stream and site) find exactly those two nodes, each by its own check and by
 * no other; both are replaced, the healthy first node is kept, the MPI task runs without them, and the job's timeline,
 * `hpcjob status` and the result name each node with its check, the measured figure and AzNHC's threshold.
 * One job carries both faults (it was one 2-node job per fault): three nodes still leave a healthy node beside each
 * faulty one, so "that node and only that node" is still what each test proves.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import type { NodeFault } from '../../local/batch/faults/faultConfig';
import { batchIdFor } from '../../shared/core/planning/jobPlan';
import { nodeReplacements } from '../../shared/core/contract/nodeReplacements';
import { formatJob } from '../../cli/format';
import type { JobView } from '../../cli/apiClient';
import { smallSpec } from '../ops/helpers';

let stack: Stack;

function spec(id: string): string {
  const doc = parse(
    smallSpec(id, { nodes: 3, command: 'echo "rank on $(hostname)"', tags: { suite: 'health' }, pool: { vmSize: 'Standard_HB120rs_v3', nodes: 3 } }),
  ) as Record<string, unknown>;
  return stringify({ ...doc, preflight: { pingPong: { enabled: false } } });
}

type Fault = Omit<NodeFault, 'poolId' | 'ordinal' | 'nodeId'>;

/** Runs the job with `faults[i]` on its pool's node of creation order i + 1; returns the view and those nodes' ids. */
async function runWithNodeFaults(id: string, faults: Fault[]): Promise<{ view: JobViewLite; faulty: string[] }> {
  const poolId = batchIdFor('hpc', id);
  stack.batch.setFaults({ nodes: faults.map((fault, i) => ({ poolId, ordinal: i + 1, ...fault })) });
  try {
    await submitSpec(stack, spec(id));
    let faulty: string[] = [];
    const watching = watchJob(stack, id, 300_000);
    // The nodes in creation order (the pool is deleted at the end: read them while it lives).
    while (faulty.length < faults.length) {
      faulty = stack.batch
        .nodes(poolId)
        .slice(1, faults.length + 1)
        .map((n) => n.id);
      if (faulty.length < faults.length) await new Promise((r) => setTimeout(r, 200));
    }
    return { view: await watching, faulty };
  } finally {
    stack.batch.setFaults({ nodes: [] });
  }
}

function expectReplaced(view: JobViewLite, faulty: string, check: string, measured: string, threshold: string): void {
  if (view.state !== 'Succeeded') console.log(JSON.stringify({ state: view.state, error: view.error, timeline: view.timeline }, null, 1));
  expect(view.state).toBe('Succeeded');
  const pf = view.result!.preflight!;
  expect(pf).toMatchObject({ rounds: 2, passed: true });
  expect(pf.replaced).toContain(faulty);
  expect(view.result?.attempts?.[0]?.nodes ?? []).not.toContain(faulty);
  // The timeline: that node, why, the check with measured vs threshold.
  const replaced = nodeReplacements(view.timeline as never).filter((r) => r.node === faulty);
  expect(replaced).toEqual([expect.objectContaining({ node: faulty, cause: 'preflight', stage: 'StagingData' })]);
  expect(replaced[0].checks).toEqual(expect.arrayContaining([expect.objectContaining({ check, ok: false, measured, threshold })]));
  expect(replaced[0].reasons.join('\n')).toContain(`measured ${measured}, threshold ${threshold}`);
  // hpcjob status prints it: on the "replaced" line, or on its own continuation line below it (the second node).
  const status = formatJob(view as unknown as JobView);
  expect(status).toMatch(/^replaced \S+ \(preflight, StagingData\)/m);
  expect(status).toMatch(new RegExp(`^(?:replaced| +) ${faulty} \\(preflight, StagingData\\): health ${check}`, 'm'));
}

/** The checks that failed on `node`, as [check, measured]. */
const failedChecks = (view: JobViewLite, node: string) =>
  nodeReplacements(view.timeline as never)
    .filter((r) => r.node === node)
    .flatMap((r) => r.checks ?? [])
    .map((c) => [c.check, c.measured]);

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, demoImageFillerBytes: 0, logDestination: path.join(logs, 'e2e-health-host.log') });
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

describe('preflight node health checks on the local stack', () => {
  let job: Promise<{ view: JobViewLite; faulty: string[] }>;
  beforeAll(() => {
    // Node 1: its InfiniBand link trained at half rate; node 2: low memory bandwidth (STREAM); node 0 is healthy.
    job = runWithNodeFaults('health-faults', [{ ibRateGbps: 100 }, { streamMBps: 150_000 }]);
    job.catch(() => undefined); // awaited by each test
  });

  it('only the faulty nodes are replaced, the healthy one is kept, and nothing is left behind', async () => {
    const { view, faulty } = await job;
    expect([...view.result!.preflight!.replaced].sort()).toEqual([...faulty].sort());
    // The kept nodes' figures passed (the modelled healthy HBv3).
    const kept = Object.entries(view.result!.preflight!.nodes);
    expect(kept.every(([, f]) => f.ok && (f.health ?? []).every((h) => h.ok))).toBe(true);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 420_000);

  it('a node whose InfiniBand link trained at half rate is replaced, and only that node', async () => {
    const { view, faulty } = await job;
    expectReplaced(view, faulty[0], 'ib', 'Active/LinkUp, 100 Gb/s', 'Active/LinkUp, ≥ 200 Gb/s');
    // The half-rate link also shows in the loopback bandwidth; memory bandwidth is fine.
    expect(failedChecks(view, faulty[0])).toEqual([
      ['ib', 'Active/LinkUp, 100 Gb/s'],
      ['ibbw', '97.5 Gb/s'],
    ]);
  }, 420_000);

  it('a node with low memory bandwidth (STREAM) is replaced, and only that node', async () => {
    const { view, faulty } = await job;
    expectReplaced(view, faulty[1], 'stream', '150,000 MB/s (Copy, the lowest of 4)', '≥ 320,000 MB/s each of Copy, Scale, Add, Triad');
    expect(failedChecks(view, faulty[1]).map(([check]) => check)).toEqual(['stream']);
  }, 420_000);
});
