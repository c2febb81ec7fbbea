/**
 * Planner figures: the staging throughput model against the "1 TB in under 20 seconds" claim, shard planner speed
 * and memory on 1 TB listings of different shapes, and a simulated pull wave through the window state machine.
 * Run: node --import tsx bench/planner.ts
 */
import { performance } from 'node:perf_hooks';
import {
  CONSERVATIVE_ACCOUNT_LIMITS,
  LARGE_REGION_ACCOUNT_LIMITS,
  ListedBlob,
  MB,
  StagingModel,
  buildNodeManifests,
  deterministicRand01,
  initPullPlan,
  isDone,
  modelStagingTime,
  nextPulls,
  onPullResult,
  planShards,
  progress,
} from '../shared/core/planning';

const TB = 1e12;
const fmt = (n: number, digits = 1): string => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function printModel(label: string, m: StagingModel): void {
  console.log(
    `  ${label.padEnd(44)} copy ${fmt(m.copy.seconds).padStart(6)} s (${m.copy.bottleneck}, ${m.copy.gbps} Gbps)` +
      `  fan-out ${fmt(m.fanOut.seconds).padStart(5)} s (${m.fanOut.bottleneck}, ${m.fanOut.gbps} Gbps)` +
      `  sequential ${fmt(m.sequentialSeconds).padStart(6)} s  pipelined ${fmt(m.pipelinedSeconds).padStart(6)} s  <=20 s: ${m.claimMet ? 'yes' : 'no'}`,
  );
}

console.log('Staging model: 1 TB (10^12 bytes), 10 staging accounts, 40 nodes at 25 Gbps each, one source account');
console.log(
  `  the claim "1 TB in under 20 s" needs ${fmt(modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40 }).claimRequiredGbps, 0)} Gbps end to end`,
);
printModel(
  'conservative targets (25 in / 50 out Gbps)',
  modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40, limits: CONSERVATIVE_ACCOUNT_LIMITS }),
);
printModel(
  'large-region targets (60 in / 200 out Gbps)',
  modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40, limits: LARGE_REGION_ACCOUNT_LIMITS }),
);
printModel(
  'large-region, input spread over 10 sources',
  modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40, sourceAccounts: 10, limits: LARGE_REGION_ACCOUNT_LIMITS }),
);
printModel('conservative, data already staged', modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40, alreadyStaged: true }));
printModel('conservative, already staged, 10 nodes', modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 10, alreadyStaged: true }));

function listing(files: number, size: number, presorted = false): ListedBlob[] {
  if (presorted) {
    // As Blob Storage lists one container: name order.
    return Array.from({ length: files }, (_, i) => ({ account: 'src', container: 'input', name: `part-${String(i).padStart(8, '0')}`, size }));
  }
  // Shuffled names so the planner's sort does real work.
  return Array.from({ length: files }, (_, i) => ({
    account: `src${i % 3}`,
    container: 'input',
    name: `part-${Math.floor(deterministicRand01(`f${i}`) * 1e9)}-${i}`,
    size,
  }));
}

console.log('\nShard planner on 1 TB listings (default 80-100 MB shards, 10 staging accounts, 40 nodes)');
for (const [files, size, presorted] of [
  [100, 10_000 * MB, false],
  [10_000, 100 * MB, false],
  [100_000, 10 * MB, false],
  [1_000_000, 1 * MB, false],
  [1_000_000, 1 * MB, true],
] as const) {
  const input = listing(files, size, presorted);
  const accounts = Array.from({ length: 10 }, (_, i) => `stage${i}`);
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  const t0 = performance.now();
  const plan = planShards(input, { stagingAccounts: accounts, nodes: 40 });
  const t1 = performance.now();
  const manifests = buildNodeManifests(plan);
  const t2 = performance.now();
  const heapAfter = process.memoryUsage().heapUsed;
  const loads = Object.values(plan.byAccount);
  const manifestBytes = JSON.stringify(manifests[0]).length;
  console.log(
    `  ${String(files).padStart(9)} files x ${String(size / MB).padStart(6)} MB${presorted ? ' (listed in name order)' : ''}: ${String(plan.shards.length).padStart(6)} shards, ` +
      `plan ${fmt(t1 - t0, 0).padStart(6)} ms, manifests ${fmt(t2 - t1, 0).padStart(5)} ms, heap +${fmt((heapAfter - heapBefore) / 2 ** 20, 0)} MiB, ` +
      `account max/min ${fmt(Math.max(...loads) / Math.min(...loads), 4)}, node-0 manifest ${fmt(manifestBytes / 1024, 0)} KiB`,
  );
}

console.log('\nPull wave simulation (pure state machine, 5% throttled pulls, 60 s per pull, window 10)');
for (const nodes of [10, 40, 100, 500]) {
  let state = initPullPlan({ nodes: Array.from({ length: nodes }, (_, i) => `tvm-${i}`), images: ['hpc/app:1'], concurrency: 10 });
  let now = 0;
  let maxInFlight = 0;
  let steps = 0;
  const running: { nodeId: string; attempt: number; endsAt: number }[] = [];
  const t0 = performance.now();
  while (!isDone(state)) {
    const { state: s, work, wakeAtMs } = nextPulls(state, now);
    state = s;
    for (const w of work) running.push({ nodeId: w.nodeId, attempt: w.attempt, endsAt: now + 60_000 });
    maxInFlight = Math.max(maxInFlight, progress(state).inFlight);
    running.sort((a, b) => a.endsAt - b.endsAt);
    // Like the orchestrator: race the earliest pull completion against the backoff timer.
    if (wakeAtMs !== undefined && (running.length === 0 || wakeAtMs < running[0].endsAt)) {
      now = wakeAtMs;
      continue;
    }
    const next = running.shift();
    if (!next) throw new Error('simulation stuck: nothing running and nothing to wait for');
    now = Math.max(now, next.endsAt);
    const throttled = deterministicRand01(`${next.nodeId}:${next.attempt}`) < 0.05;
    state = onPullResult(
      state,
      {
        nodeId: next.nodeId,
        ranOnNodeId: next.nodeId,
        outcome: throttled ? 'throttled' : 'ok',
        attempt: next.attempt,
        message: throttled ? 'toomanyrequests' : undefined,
      },
      { nowMs: now, rand01: deterministicRand01(`sim:${next.nodeId}:${next.attempt}`) },
    );
    steps++;
  }
  console.log(
    `  ${String(nodes).padStart(4)} nodes: all pulled after ${fmt(now / 60_000)} simulated min, max in flight ${maxInFlight}, ` +
      `${steps} results, planner time ${fmt(performance.now() - t0, 0)} ms`,
  );
}
