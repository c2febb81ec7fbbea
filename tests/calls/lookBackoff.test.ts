/**
 * The looks at work in flight back off (PipelineRun.lookDelayMs, docs/call-budgets.md "Looks back off"): a wait of T
 * seconds costs O(log T) looks up to the cap, then one per cap, instead of one per base interval; the delays come
 * from the project's one backoff with deterministic jitter (the same on replay), and a run started before the change
 * (no poll.lookMaxMs) keeps its looks. Pure: a PipelineRun over a stand-in context that only the constructor touches.
 */
import type { OrchestrationContext } from 'durable-functions';
import { PipelineRun } from '../../orchestrations/runtime/pipelineRun';
import { backoffCeilingMs } from '../../shared/core/planning/backoff';
import type { PollSettings } from '../../shared/core/contract';

const ctx = { df: { waitForExternalEvent: () => ({ isCompleted: false }) } } as unknown as OrchestrationContext;
const runWith = (poll: PollSettings, jobId = 'job-1') => new PipelineRun(ctx, jobId, poll, undefined);

/** The looks a wait of `totalMs` makes (the work ends just after `totalMs`), with the delays used. */
function looksFor(run: PipelineRun, totalMs: number, key: string, legacyMs: number): { looks: number; delays: number[] } {
  const delays: number[] = [];
  let waited = 0;
  while (waited <= totalMs) {
    const d = run.lookDelayMs(delays.length, key, legacyMs);
    delays.push(d);
    waited += d;
  }
  return { looks: delays.length, delays };
}

const LOCAL: PollSettings = { initialMs: 500, maxMs: 2_000, factor: 2, lookMaxMs: 30_000 };
const AZURE: PollSettings = { initialMs: 5_000, maxMs: 60_000, factor: 2, lookMaxMs: 30_000 };

test('a 7-minute stage on the local stack: 24 looks, not 841; each delay within its backoff ceiling and the cap', () => {
  const run = runWith(LOCAL);
  const { looks, delays } = looksFor(run, 420_000, 'dl:0', 500);
  expect(looks).toBe(24);
  delays.forEach((d, n) => {
    const ceiling = backoffCeilingMs(n + 1, { baseMs: 500, maxMs: 30_000, factor: 2 });
    expect(d).toBeGreaterThanOrEqual(ceiling / 2);
    expect(d).toBeLessThanOrEqual(ceiling);
  });
  // The old looks: one per base interval.
  expect(looksFor(runWith({ initialMs: 500, maxMs: 2_000, factor: 2 }), 420_000, 'dl:0', 500).looks).toBe(841);
});

test('the looks grow with the log of the wait until the cap: 10 s, 1 min and 2 min', () => {
  const run = runWith(LOCAL);
  expect([10_000, 60_000, 120_000].map((t) => looksFor(run, t, 'dl:0', 500).looks)).toEqual([5, 8, 10]);
});

test('in Azure (5 s base): a 20-minute wait costs 55 looks instead of 241; the end is seen at most 30 s late', () => {
  const run = runWith(AZURE);
  const { looks, delays } = looksFor(run, 1_200_000, 'dl:0', 5_000);
  expect(looks).toBe(55);
  expect(Math.max(...delays)).toBeLessThanOrEqual(30_000);
});

test('deterministic: the same job, key and look give the same delay; other keys spread', () => {
  const a = runWith(LOCAL);
  const b = runWith(LOCAL);
  const seq = (r: PipelineRun, key: string) => Array.from({ length: 12 }, (_, n) => r.lookDelayMs(n, key, 500));
  expect(seq(a, 'dl:0')).toEqual(seq(b, 'dl:0'));
  expect(seq(a, 'dl:0')).not.toEqual(seq(a, 'preflight-1-1'));
  expect(seq(runWith(LOCAL, 'job-2'), 'dl:0')).not.toEqual(seq(a, 'dl:0'));
});

test("a run started before (no lookMaxMs) looks as it did: the caller's interval", () => {
  const run = runWith({ initialMs: 500, maxMs: 2_000, factor: 2 });
  expect([0, 5, 40].map((n) => run.lookDelayMs(n, 'dl:0', 1_234))).toEqual([1_234, 1_234, 1_234]);
});
