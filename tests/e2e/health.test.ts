/**
 * Node health checks end to end (docs/pipeline.md "Node health checks"): a 2-node Standard_HB120rs_v3 job on the local
 * stack, whose second node (creation order 1) has a modelled hardware fault from the start (local/batch/model/hardware.ts:
 * a slow InfiniBand link, then low memory bandwidth). The preflight's health checks (the stack judges ib, ibbw, stream
 * and site) find exactly that node, it is replaced, the MPI task runs without it, and the job's timeline, `hpcjob
 * status` and the result name the node with the check, the measured figure and AzNHC's threshold.
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
    smallSpec(id, { nodes: 2, command: 'echo "rank on $(hostname)"', tags: { suite: 'health' }, pool: { vmSize: 'Standard_HB120rs_v3', nodes: 2 } }),
  ) as Record<string, unknown>;
  return stringify({ ...doc, preflight: { pingPong: { enabled: false } } });
}

/** Runs the job with `fault` on its pool's second node; returns the view and that node's id. */
async function runWithNodeFault(id: string, fault: Omit<NodeFault, 'poolId' | 'ordinal' | 'nodeId'>): Promise<{ view: JobViewLite; faulty: string }> {
  const poolId = batchIdFor('hpc', id);
  stack.batch.setFaults({ nodes: [{ poolId, ordinal: 1, ...fault }] });
  try {
    await submitSpec(stack, spec(id));
    let faulty: string | undefined;
    const watching = watchJob(stack, id, 300_000);
    // The nodes in creation order (the pool is deleted at the end: read them while it lives).
    while (!faulty) {
      faulty = stack.batch.nodes(poolId)[1]?.id;
      if (!faulty) await new Promise((r) => setTimeout(r, 200));
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
  expect(pf).toMatchObject({ rounds: 2, passed: true, replaced: [faulty] });
  expect(view.result?.attempts?.[0]?.nodes ?? []).not.toContain(faulty);
  // The timeline: that node, why, the check with measured vs threshold.
  const replaced = nodeReplacements(view.timeline as never);
  expect(replaced).toEqual([expect.objectContaining({ node: faulty, cause: 'preflight', stage: 'StagingData' })]);
  expect(replaced[0].checks).toEqual(expect.arrayContaining([expect.objectContaining({ check, ok: false, measured, threshold })]));
  expect(replaced[0].reasons.join('\n')).toContain(`measured ${measured}, threshold ${threshold}`);
  // hpcjob status prints it.
  expect(formatJob(view as unknown as JobView)).toContain(`replaced ${faulty} (preflight, StagingData): health ${check}`);
}

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, demoImageFillerBytes: 0, logDestination: path.join(logs, 'e2e-health-host.log') });
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

describe('preflight node health checks on the local stack', () => {
  it('a node whose InfiniBand link trained at half rate is replaced, and only that node', async () => {
    const { view, faulty } = await runWithNodeFault('health-slow-link', { ibRateGbps: 100 });
    expectReplaced(view, faulty, 'ib', 'Active/LinkUp, 100 Gb/s', 'Active/LinkUp, ≥ 200 Gb/s');
    // The half-rate link also shows in the loopback bandwidth; memory bandwidth is fine.
    expect(nodeReplacements(view.timeline as never)[0].checks?.map((c) => [c.check, c.measured])).toEqual([
      ['ib', 'Active/LinkUp, 100 Gb/s'],
      ['ibbw', '97.5 Gb/s'],
    ]);
    // The kept node's figures passed (the modelled healthy HBv3).
    const kept = Object.entries(view.result!.preflight!.nodes);
    expect(kept.every(([, f]) => f.ok && (f.health ?? []).every((h) => h.ok))).toBe(true);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 420_000);

  it('a node with low memory bandwidth (STREAM) is replaced, and only that node', async () => {
    const { view, faulty } = await runWithNodeFault('health-low-stream', { streamMBps: 150_000 });
    expectReplaced(view, faulty, 'stream', '150,000 MB/s (Copy, the lowest of 4)', '≥ 320,000 MB/s each of Copy, Scale, Add, Triad');
    expect(nodeReplacements(view.timeline as never)[0].checks?.map((c) => c.check)).toEqual(['stream']);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 420_000);
});
