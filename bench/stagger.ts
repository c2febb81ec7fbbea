/**
 * Images to N nodes through the whole pipeline (HTTP API → orchestrator → Batch emulator → real `docker pull`,
 * `docker save | docker load` over the emulator's ssh → local registry limited to 10 concurrent pulls and a shared
 * bandwidth cap; every node's NIC capped for node-to-node copies), for N = 40 and 100 emulated nodes (100 is Batch's
 * limit for MPI pools), side by side in one run:
 *   - window(10):   imageDistribution registry, pullConcurrency 10 (10 nodes pulling from the registry at a time);
 *   - all at once:  imageDistribution registry, pullConcurrency = N (allowAboveTen);
 *   - tree:         imageDistribution peers (the default): 10 seeds pull, the others copy from peers;
 *   - physical:     registry schedules: N × image bytes ÷ registry bandwidth; tree: one registry pull of the 10
 *                   seeds (10 × image ÷ registry bandwidth) + ⌈log2(N/10)⌉ node-to-node copies (image ÷ node cap).
 * "Time to image on all nodes" is the span from the first pull task's start to the last successful pull task's
 * end (Batch task timestamps); the PullingImages stage time adds the orchestrator's polling around it. Failed
 * pulls are pull tasks that ended non-zero (each is retried by the pipeline with backoff, up to its attempts).
 * The job is cancelled once it leaves PullingImages: staging and MPI are not what this measures.
 * bench/registry.ts measures the same schedules for 40 nodes without the pipeline (plain docker pulls).
 * Run: node --import tsx bench/stagger.ts [--nodes 40,100] [--filler-mb 8] [--bandwidth-mb 16] [--node-mb 4]
 *        [--schedules window,all,tree]
 * The node cap (4 MiB/s) is below a seed's share of the registry (1.6 MiB/s × 10 seeds = 16 MiB/s in total) so
 * that a copy takes seconds, as on Azure where a multi-GB image crosses a NIC in seconds too: with a 2 MiB image
 * and no cap every copy is over before its process has started, and the figures would measure process start-up on
 * two shared cores, not distribution.
 */
import { stringify } from 'yaml';
import { buildDemoImage } from '../examples/images/buildDemoImage';
import { startStack, type Stack } from '../local/stack';
import { submitSpec, watchJob, type JobViewLite } from '../local/jobRunner';
import { textArg } from './lib/args';
import { treeDepth } from '../shared/core/planning/imageTree';
import { printGoal } from './lib/goal';

// Batch caps pools with inter-node communication (MPI) at 100 nodes, and so does the job spec: 100 is the most the
// pipeline can be measured with. For 200 nodes without the pipeline: bench/registry.ts --nodes 200.
const NODE_COUNTS = textArg('nodes', '40,100').split(',').map(Number);
const FILLER = Math.round(Number(textArg('filler-mb', '8')) * 1024 * 1024);
const BANDWIDTH = Math.round(Number(textArg('bandwidth-mb', '16')) * 1024 * 1024);
const NODE_BANDWIDTH = Math.round(Number(textArg('node-mb', '4')) * 1024 * 1024);
const SCHEDULES = textArg('schedules', 'window,all,tree').split(',');
const TIMELINE = textArg('timeline', 'no') === 'yes';
const REGISTRY_LIMIT = 10;

interface Outcome {
  nodes: number;
  schedule: string;
  pullSpanS: number;
  stageS: number;
  held: number;
  failedPulls: number;
  total429: number;
  maxConcurrent: number;
  registryPulls: number;
  registryMiB: number;
}

async function getJob(stack: Stack, id: string): Promise<JobViewLite> {
  return (await (await fetch(`${stack.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': stack.host.keys.functionKey } })).json()) as JobViewLite;
}

async function measure(stack: Stack, nodes: number, concurrency: number, label: string, distribution: 'peers' | 'registry'): Promise<Outcome> {
  const id = `bench-stagger-${nodes}-${concurrency}-${distribution}`;
  stack.registry.resetStats();
  await submitSpec(
    stack,
    stringify({
      id,
      name: 'bench-stagger',
      pool: { vmSize: 'Standard_D2s_v5', nodes },
      container: {
        runtime: 'docker',
        images: [`${stack.registry.host}/hpc/mpi-demo:1.0`],
        pullConcurrency: concurrency,
        allowAboveTen: concurrency > 10,
        imageDistribution: distribution,
      },
      mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: 'true' },
    }),
  );
  // Leave the job alone until it is past the pulls, then cancel it (cleanup still runs and is waited for).
  let view = await getJob(stack, id);
  const started = Date.now();
  while (['Submitted', 'Queued', 'Provisioning', 'PullingImages'].includes(view.state) && Date.now() - started < 1_200_000) {
    await new Promise((r) => setTimeout(r, 500));
    view = await getJob(stack, id);
  }
  const pullStats = stack.registry.stats();
  if (!['Succeeded', 'Failed', 'Cancelled'].includes(view.state)) {
    await fetch(`${stack.baseUrl}/api/jobs/${id}?reason=bench`, { method: 'DELETE', headers: { 'x-functions-key': stack.host.keys.functionKey } });
  }
  const final = await watchJob(stack, id, 600_000);
  if (final.state === 'Failed') console.log(`  (${label}, ${nodes} nodes: job failed: ${final.error?.message})`);

  // The stack is keyless (as in Azure): the operator's Entra ID client, not the account key.
  const batch = stack.operator.batch();
  const tasks = (await batch.task.list(final.batchJobId as string)).filter((t) => t.id?.startsWith('pull-'));
  const ok = tasks.filter((t) => t.executionInfo?.exitCode === 0);
  const failed = tasks.filter((t) => t.executionInfo?.exitCode !== undefined && t.executionInfo.exitCode !== 0);
  const starts = tasks.map((t) => t.executionInfo?.startTime?.getTime()).filter((x): x is number => !!x);
  const ends = ok.map((t) => t.executionInfo?.endTime?.getTime()).filter((x): x is number => !!x);
  if (TIMELINE) {
    // Per node: when its task started and ended (s after the first start) and where it got the image from.
    const t0 = Math.min(...starts);
    const rows = tasks.map((t) => ({
      id: t.id,
      from: /ConnectTimeout=20 (\S+) /.exec(t.commandLine ?? '')?.[1] ?? 'registry',
      start: ((t.executionInfo?.startTime?.getTime() ?? NaN) - t0) / 1000,
      end: ((t.executionInfo?.endTime?.getTime() ?? NaN) - t0) / 1000,
      ip: tasks.length ? t.nodeInfo?.nodeId : '',
    }));
    for (const r of rows.sort((a, b) => a.end - b.end)) console.log(`    ${r.id} on ${r.ip} from ${r.from}: ${r.start.toFixed(1)} → ${r.end.toFixed(1)} s`);
  }
  const timing =
    final.result?.timings?.PullingImages ?? (final as { timings?: Record<string, { startedAt: string; endedAt?: string }> }).timings?.PullingImages;
  const stageS = timing?.endedAt ? (Date.parse(timing.endedAt) - Date.parse(timing.startedAt)) / 1000 : NaN;
  return {
    nodes,
    schedule: label,
    pullSpanS: starts.length && ends.length ? (Math.max(...ends) - Math.min(...starts)) / 1000 : NaN,
    stageS,
    held: new Set(ok.map((t) => t.nodeInfo?.nodeId)).size,
    failedPulls: failed.length,
    total429: pullStats.total429,
    maxConcurrent: pullStats.maxConcurrentObserved,
    registryPulls: pullStats.totalPulls,
    registryMiB: pullStats.bytesServed / 1024 / 1024,
  };
}

async function main(): Promise<void> {
  const image = await buildDemoImage({ fillerBytes: FILLER });
  const imageBytes = image.manifestBytes.length + [...image.blobs.values()].reduce((n, b) => n + b.length, 0);
  const stack = await startStack({
    port: 0,
    logDestination: `/tmp/bench-stagger-host-${process.pid}.log`,
    registryMaxConcurrentPulls: REGISTRY_LIMIT,
    registryBandwidthBytesPerSec: BANDWIDTH,
    demoImageFillerBytes: FILLER,
    batch: { nodeBandwidthBytesPerSec: NODE_BANDWIDTH },
  });
  const out: Outcome[] = [];
  try {
    for (const n of NODE_COUNTS) {
      const schedules = [
        [10, 'window(10)', 'registry', 'window'],
        [n, 'all at once', 'registry', 'all'],
        [10, 'tree', 'peers', 'tree'],
      ] as const;
      for (const [concurrency, label, distribution] of schedules.filter((x) => SCHEDULES.includes(x[3]))) {
        const o = await measure(stack, n, concurrency, label, distribution);
        out.push(o);
        console.log(`  measured: ${JSON.stringify(o)}`);
      }
    }
  } finally {
    await stack.stop();
  }
  console.log(
    `\nimage bench: image ${(imageBytes / 1024 / 1024).toFixed(2)} MiB, registry limit ${REGISTRY_LIMIT} concurrent pulls, registry bandwidth ${(BANDWIDTH / 1024 / 1024).toFixed(0)} MiB/s, node-to-node ${(NODE_BANDWIDTH / 1024 / 1024).toFixed(0)} MiB/s per node`,
  );
  console.log(
    'nodes  schedule                     ready-s  x-own-physical  stage-s  nodes-holding  failed-pulls  429s  max-concurrent  registry-pulls  registry-MiB',
  );
  for (const n of NODE_COUNTS) {
    const physical = (n * imageBytes) / BANDWIDTH;
    const seeds = Math.min(n, REGISTRY_LIMIT);
    const treePhysical = (seeds * imageBytes) / BANDWIDTH + treeDepth(n, seeds) * (imageBytes / NODE_BANDWIDTH);
    console.log(`${String(n).padStart(5)}  ${'physical limit (registry)'.padEnd(27)}  ${physical.toFixed(2).padStart(7)}`);
    console.log(`${String(n).padStart(5)}  ${'physical limit (tree)'.padEnd(27)}  ${treePhysical.toFixed(2).padStart(7)}`);
    for (const o of out.filter((x) => x.nodes === n)) {
      const own = o.schedule === 'tree' ? treePhysical : physical;
      console.log(
        `${String(n).padStart(5)}  ${o.schedule.padEnd(27)}  ${o.pullSpanS.toFixed(2).padStart(7)}  ${(o.pullSpanS / own).toFixed(2).padStart(14)}  ${o.stageS.toFixed(1).padStart(7)}  ${`${o.held}/${n}`.padStart(13)}  ${String(o.failedPulls).padStart(12)}  ${String(o.total429).padStart(4)}  ${String(o.maxConcurrent).padStart(14)}  ${String(o.registryPulls).padStart(14)}  ${o.registryMiB.toFixed(1).padStart(12)}`,
      );
    }
    const tree = out.find((x) => x.nodes === n && x.schedule === 'tree');
    const window = out.find((x) => x.nodes === n && x.schedule === 'window(10)');
    if (tree && window) {
      printGoal({ name: `stagger-tree-vs-window.nodes-${n}`, measured: tree.pullSpanS / window.pullSpanS, target: 0.5, compare: '<=' });
      printGoal({ name: `stagger-tree-vs-physical.nodes-${n}`, measured: tree.pullSpanS / treePhysical, target: 1.3, compare: '<=' });
      printGoal({ name: `stagger-registry-pulls.nodes-${n}`, measured: tree.registryPulls, target: 10, compare: '<=' });
      printGoal({ name: `stagger-failed-pulls.nodes-${n}`, measured: tree.failedPulls, target: 0, compare: '==' });
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
