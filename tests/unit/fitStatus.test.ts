/**
 * The published pipeline status must fit Azure's custom-status limit (16 KB of UTF-16 text, 8,703 characters of
 * JSON) whatever the job's size: otherwise the orchestration fails on Azure (local/durable enforces the same limit).
 */
import fc from 'fast-check';
import { fitStatus, NODE_PROGRESS_STATES, STATUS_BUDGET_CHARS, type NodeProgress, type PipelineStatus } from '../../shared/core/contract';
import type { NodePreflight } from '../../shared/core/contract/preflight';

const AZURE_LIMIT_CHARS = 8_703;
// An Azure Batch node id: tvmps_<64 hex>_d.
const nodeId = (i: number): string => `tvmps_${i.toString(16).padStart(64, '0')}_d`;
const figures = (ok: boolean): NodePreflight => ({
  ok,
  ip: '10.0.12.34',
  sshMs: 12,
  freeGB: 512.5,
  latencyUs: 1.7,
  bandwidthMBps: 12_345.6,
  problems: ok ? [] : ['latency 900 µs > 50 µs'],
});

function status(n: number, states: NodeProgress[], failing: number, errorChars: number): PipelineStatus {
  const ids = Array.from({ length: n }, (_, i) => nodeId(i));
  return {
    stage: 'Running',
    progress: {
      nodesReady: { done: n, total: n },
      preflight: {
        state: 'passed',
        round: 1,
        pingPong: 'measured over 50 pair(s)',
        nodes: Object.fromEntries(ids.map((id, i) => [id, figures(i >= failing)])),
      },
      attempt: { current: 2, max: 3, lastFailure: 'f'.repeat(errorChars) },
      cleanup: { done: ids },
    },
    nodes: Object.fromEntries(ids.map((id, i) => [id, states[i % states.length]])),
    queue: { waitingFor: 'dependencies', pending: ids },
    resources: { poolId: 'pool-1', batchJobId: 'job-1', stagingContainers: [{ account: 'acct1', container: 'c1' }] },
    lastError: 'e'.repeat(errorChars),
    updatedAt: '2026-11-23T18:00:00.000Z',
  };
}

describe('fitStatus', () => {
  test('a status that fits is published as it is', () => {
    const small = status(4, ['ready'], 1, 10);
    expect(fitStatus(small)).toBe(small);
  });

  test("any job size fits Azure's limit; the node states become counts that add up to the nodes", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.array(fc.constantFrom(...NODE_PROGRESS_STATES), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 0, max: 1000 }),
        fc.integer({ min: 0, max: 50_000 }),
        (n, states, failing, errorChars) => {
          const s = status(n, states, failing, errorChars);
          const out = fitStatus(s);
          const size = JSON.stringify(out).length;
          expect(size).toBeLessThanOrEqual(AZURE_LIMIT_CHARS);
          if (JSON.stringify(s).length <= STATUS_BUDGET_CHARS) {
            expect(out).toBe(s);
            return;
          }
          expect(out.nodes).toBeUndefined();
          expect(Object.values(out.nodeCounts ?? {}).reduce((a, b) => a + b, 0)).toBe(n);
          // The stage, the counters and the resources cleanup needs are never cut.
          expect({ stage: out.stage, ready: out.progress.nodesReady, resources: out.resources }).toEqual({
            stage: s.stage,
            ready: s.progress.nodesReady,
            resources: s.resources,
          });
          // Failing nodes' figures are kept while they fit; passing nodes' never are.
          for (const f of Object.values(out.progress.preflight?.nodes ?? {})) expect(f.ok).toBe(false);
        },
      ),
      { numRuns: 200 },
    );
  });

  test("100 nodes: the failing node's preflight figures survive, the passing ones' give way", () => {
    const out = fitStatus(status(100, ['ready'], 1, 100));
    expect(Object.keys(out.progress.preflight?.nodes ?? {})).toEqual([nodeId(0)]);
    expect(out.nodeCounts).toEqual({ ready: 100 });
  });
});
