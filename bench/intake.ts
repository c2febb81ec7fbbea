/**
 * Intake benchmark on the local stack: throughput (jobs/s) and latency of POST /api/jobs and of the
 * job-submissions queue, beside the raw cost of inserting an equivalent Jobs row with @azure/data-tables
 * in the same run. The ratio is the control plane's own overhead (parse, validate, record, start the
 * orchestration) over the one storage write it cannot avoid.
 *   node --import tsx bench/intake.ts [--jobs 200] [--clients 16]
 * Needs the compiled app (dist/). Accepted jobs start real mpiJob orchestrations (ending fast on a pool
 * that does not exist), so the figures include the pipelines running beside intake, as in production.
 */
import { TableClient } from '@azure/data-tables';
import { startStack } from '../local/stack';
import { jobToEntity } from '../shared/state/entityCodec';
import { parseJobSpec, specHash } from '../shared/spec';
import type { JobRecord } from '../shared/state';
import { enqueue, fastSpec, jobRows, percentile, postJob, runPool, submissionsQueue, waitAllTerminal } from '../tests/intake/support';
import { numberArg } from './lib/args';

interface Figures {
  label: string;
  n: number;
  seconds: number;
  latencies: number[];
}

function line(f: Figures): string {
  const sorted = [...f.latencies].sort((a, b) => a - b);
  const rate = f.n / f.seconds;
  return `${f.label.padEnd(34)} ${String(f.n).padStart(5)} in ${f.seconds.toFixed(2).padStart(6)} s  ${rate.toFixed(1).padStart(7)} jobs/s  p50 ${percentile(sorted, 50).toFixed(1).padStart(7)} ms  p99 ${percentile(sorted, 99).toFixed(1).padStart(7)} ms`;
}

/** A Jobs row as intake writes it, for the raw insert baseline. */
function equivalentRow(id: string): ReturnType<typeof jobToEntity> {
  const parsed = parseJobSpec(fastSpec(id));
  if (!parsed.ok) throw new Error(`bench spec invalid: ${JSON.stringify(parsed.errors)}`);
  const at = new Date().toISOString();
  const rec: JobRecord = {
    id, name: parsed.spec.name, owner: 'bench', tags: {}, specHash: specHash(parsed.spec), spec: parsed.spec,
    state: 'Submitted', stage: 'Submitted', progress: null, createdAt: at, updatedAt: at, eventSeq: 1,
    lastEvent: { jobId: id, at, kind: 'transition', seq: 1, from: null, to: 'Submitted', reason: 'submitted' },
  };
  return jobToEntity(rec);
}

async function main(): Promise<void> {
  const jobs = numberArg('jobs', 200);
  const clients = numberArg('clients', 16);
  const stack = await startStack({ port: 0, demoImage: false, logLevel: 'warn', logDestination: 2 });
  try {
    // Warm up every path once (table creation, first orchestration, queue listener).
    await postJob(stack, fastSpec('bench-warm-h'));
    await submissionsQueue(stack).createIfNotExists();
    await enqueue(submissionsQueue(stack), fastSpec('bench-warm-q'));
    await waitAllTerminal(stack, 'bench-warm-', 2, 60_000);

    // Baseline: the raw insert of an equivalent row, same concurrency, into a table of its own.
    const raw = TableClient.fromConnectionString(stack.azurite.connectionString(), 'BenchRawJobs', { allowInsecureConnection: true });
    await raw.createTable();
    const rows = Array.from({ length: jobs }, (_, i) => equivalentRow(`bench-raw-${i}`));
    const rawLat: number[] = [];
    let t0 = performance.now();
    await runPool(rows, clients, async (row) => {
      const s = performance.now();
      await raw.createEntity(row);
      rawLat.push(performance.now() - s);
    });
    const rawFig: Figures = { label: 'raw Table createEntity (baseline)', n: jobs, seconds: (performance.now() - t0) / 1000, latencies: rawLat };

    // HTTP: POST /api/jobs until every answer is in (202 each).
    const httpLat: number[] = [];
    const statuses = new Map<number, number>();
    t0 = performance.now();
    await runPool(Array.from({ length: jobs }, (_, i) => `bench-h-${i}`), clients, async (id) => {
      const a = await postJob(stack, fastSpec(id));
      statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
      httpLat.push(a.ms);
    });
    const httpFig: Figures = { label: 'POST /api/jobs', n: jobs, seconds: (performance.now() - t0) / 1000, latencies: httpLat };

    // Queue: enqueue all, then wait until every job row exists; latency = row createdAt - enqueue time.
    const queue = submissionsQueue(stack);
    const sentAt = new Map<string, number>();
    t0 = performance.now();
    await runPool(Array.from({ length: jobs }, (_, i) => `bench-q-${i}`), clients, async (id) => {
      sentAt.set(id, Date.now());
      await enqueue(queue, fastSpec(id));
    });
    const table = TableClient.fromConnectionString(stack.azurite.connectionString(), 'Jobs', { allowInsecureConnection: true });
    for (;;) {
      if ((await jobRows(stack, 'bench-q-')).length >= jobs) break;
      if (performance.now() - t0 > 600_000) throw new Error('queue intake did not finish in 10 minutes');
      await new Promise((r) => setTimeout(r, 100));
    }
    const queueSeconds = (performance.now() - t0) / 1000;
    const queueLat: number[] = [];
    for await (const e of table.listEntities<{ createdAt: string }>({ queryOptions: { filter: "PartitionKey ge 'bench-q-' and PartitionKey lt 'bench-q-~' and RowKey eq 'job'" } })) {
      queueLat.push(Date.parse(e.createdAt) - (sentAt.get(String(e.partitionKey)) ?? NaN));
    }
    const queueFig: Figures = { label: 'job-submissions queue (to row)', n: jobs, seconds: queueSeconds, latencies: queueLat };

    // Not intake, but what it costs: how long until every accepted job's pipeline has ended.
    const pipelinesT0 = performance.now();
    await waitAllTerminal(stack, 'bench-', 2 + 2 * jobs, 900_000);
    const pipelineSeconds = (performance.now() - pipelinesT0) / 1000;

    const p50 = (f: Figures) => percentile([...f.latencies].sort((a, b) => a - b), 50);
    console.log(`intake bench: ${jobs} jobs per door, ${clients} concurrent clients, load average ${(await import('node:os')).loadavg()[0]?.toFixed(1)} on ${(await import('node:os')).cpus().length} cores`);
    console.log(`HTTP answers: ${[...statuses].map(([s, n]) => `${n}x${s}`).join(', ')}`);
    for (const f of [rawFig, httpFig, queueFig]) console.log(line(f));
    console.log(`all ${2 * jobs} pipelines (ending Failed on a missing pool) terminal ${pipelineSeconds.toFixed(1)} s after the last queue row appeared`);
    console.log(`overhead vs raw insert: HTTP p50 ${(p50(httpFig) / p50(rawFig)).toFixed(1)}x, HTTP throughput ${(rawFig.n / rawFig.seconds / (httpFig.n / httpFig.seconds)).toFixed(1)}x lower, queue throughput ${(rawFig.n / rawFig.seconds / (queueFig.n / queueFig.seconds)).toFixed(1)}x lower`);
  } finally {
    await stack.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
