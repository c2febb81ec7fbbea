/**
 * Staggered image pulls through the whole pipeline (HTTP API → orchestrator → Batch emulator → real `docker pull`
 * processes → local registry limited to 10 concurrent pulls and a shared bandwidth cap), for N = 40 and 100
 * emulated nodes (100 is Batch's limit for MPI pools), side by side in one run:
 *   - window(10):   the default pullConcurrency (10 nodes pulling at a time);
 *   - all at once:  pullConcurrency = N (allowAboveTen);
 *   - physical:     N × image bytes ÷ registry bandwidth, the floor any schedule can reach.
 * "Time to image on all nodes" is the span from the first pull task's start to the last successful pull task's
 * end (Batch task timestamps); the PullingImages stage time adds the orchestrator's polling around it. Failed
 * pulls are pull tasks that ended non-zero (each is retried by the pipeline with backoff, up to its attempts).
 * The job is cancelled once it leaves PullingImages: staging and MPI are not what this measures.
 * bench/registry.ts measures the same schedules for 40 nodes without the pipeline (plain docker pulls).
 * Run: node --import tsx bench/stagger.ts [--nodes 40,100] [--filler-mb 2] [--bandwidth-mb 16]
 */
import { BatchServiceClient, BatchSharedKeyCredentials } from '@azure/batch';
import { stringify } from 'yaml';
import { buildDemoImage } from '../examples/images/buildDemoImage';
import { startStack, type Stack } from '../local/stack';
import { submitSpec, watchJob, type JobViewLite } from '../local/jobRunner';
import { textArg } from './lib/args';

// Batch caps pools with inter-node communication (MPI) at 100 nodes, and so does the job spec: 100 is the most the
// pipeline can be measured with. For 200 nodes without the pipeline: bench/registry.ts --nodes 200.
const NODE_COUNTS = textArg('nodes', '40,100').split(',').map(Number);
const FILLER = Math.round(Number(textArg('filler-mb', '2')) * 1024 * 1024);
const BANDWIDTH = Math.round(Number(textArg('bandwidth-mb', '16')) * 1024 * 1024);
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
}

async function getJob(stack: Stack, id: string): Promise<JobViewLite> {
  return (await (await fetch(`${stack.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': stack.host.keys.functionKey } })).json()) as JobViewLite;
}

async function measure(stack: Stack, nodes: number, concurrency: number, label: string): Promise<Outcome> {
  const id = `bench-stagger-${nodes}-${concurrency}`;
  stack.registry.resetStats();
  await submitSpec(stack, stringify({
    id,
    name: 'bench-stagger',
    pool: { vmSize: 'Standard_D2s_v5', nodes },
    container: { runtime: 'docker', images: [`${stack.registry.host}/hpc/mpi-demo:1.0`], pullConcurrency: concurrency, allowAboveTen: concurrency > 10 },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: 'true' },
  }));
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

  const batch = new BatchServiceClient(new BatchSharedKeyCredentials(stack.batch.accountName, stack.batch.accountKey), stack.batch.url);
  const tasks = (await batch.task.list(final.batchJobId as string)).filter((t) => t.id?.startsWith('pull-'));
  const ok = tasks.filter((t) => t.executionInfo?.exitCode === 0);
  const failed = tasks.filter((t) => t.executionInfo?.exitCode !== undefined && t.executionInfo.exitCode !== 0);
  const starts = tasks.map((t) => t.executionInfo?.startTime?.getTime()).filter((x): x is number => !!x);
  const ends = ok.map((t) => t.executionInfo?.endTime?.getTime()).filter((x): x is number => !!x);
  const timing = final.result?.timings?.PullingImages ?? (final as { timings?: Record<string, { startedAt: string; endedAt?: string }> }).timings?.PullingImages;
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
  });
  const out: Outcome[] = [];
  try {
    for (const n of NODE_COUNTS) {
      for (const [concurrency, label] of [[10, 'window(10)'], [n, 'all at once']] as const) {
        const o = await measure(stack, n, concurrency, label);
        out.push(o);
        console.log(`  measured: ${JSON.stringify(o)}`);
      }
    }
  } finally {
    await stack.stop();
  }
  console.log(`\nstagger bench: image ${(imageBytes / 1024 / 1024).toFixed(2)} MiB, registry limit ${REGISTRY_LIMIT} concurrent pulls, bandwidth ${(BANDWIDTH / 1024 / 1024).toFixed(0)} MiB/s`);
  console.log('nodes  schedule                     pull-span-s  x-physical  stage-s  nodes-holding  failed-pulls  429s  max-concurrent');
  for (const n of NODE_COUNTS) {
    const physical = (n * imageBytes) / BANDWIDTH;
    console.log(`${String(n).padStart(5)}  ${'physical limit'.padEnd(27)}  ${physical.toFixed(2).padStart(11)}  ${'1.00'.padStart(10)}`);
    for (const o of out.filter((x) => x.nodes === n)) {
      console.log(
        `${String(n).padStart(5)}  ${o.schedule.padEnd(27)}  ${o.pullSpanS.toFixed(2).padStart(11)}  ${(o.pullSpanS / physical).toFixed(2).padStart(10)}  ${o.stageS.toFixed(1).padStart(7)}  ${`${o.held}/${n}`.padStart(13)}  ${String(o.failedPulls).padStart(12)}  ${String(o.total429).padStart(4)}  ${String(o.maxConcurrent).padStart(14)}`,
      );
    }
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
