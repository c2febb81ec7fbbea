/**
 * Intake benchmark on the local stack: throughput (jobs/s) and latency of POST /api/jobs and of the job-submissions
 * queue, beside the raw cost of inserting an equivalent Jobs row with @azure/data-tables in the same run, and the
 * issue's goals checked against them (docs/intake.md). The ratio is the control plane's own overhead (parse,
 * validate, record, start the orchestration) over the one storage write it cannot avoid.
 *   node --import tsx bench/intake.ts [--jobs 200] [--clients 16] [--layout supervised|in-process] [--busy-concurrency 2]
 * - `supervised` (default): the stack as `npm start` runs it, the Functions host and its Durable engine in a process
 *   of their own beside Azurite's; this process holds the services and the benchmark's clients.
 * - `in-process`: everything but Azurite in this process (local/stack.ts, as the tests run it); also prints who made
 *   the outgoing requests of each phase (bench/lib/requestMix.ts).
 * CPU seconds per job are read from /proc for the host, Azurite and this process: on a shared 2-core machine they,
 * not the wall clock, say what a job costs. Needs the compiled app (dist/). Accepted jobs start real mpiJob
 * orchestrations (ending fast on a pool that does not exist), so the pipelines run beside intake, as in production.
 */
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import * as path from 'node:path';
import { REPO_ROOT, startStack } from '../local/stack';
import { startSupervisedStack } from '../local/supervisor';
import { defaultKeysFile, loadOrCreateKeys } from '../local/host/keys';
import { jobToEntity } from '../shared/core/state/entityCodec';
import { parseJobSpec, specHash } from '../shared/core/spec';
import type { JobRecord } from '../shared/adapters/state';
import { enqueue, fastSpec, jobRows, jobsTable, percentile, postJob, runPool, submissionsQueue, waitAllTerminal, type Stack } from '../tests/intake/support';
import { numberArg, textArg } from './lib/args';
import type { RequestMix } from './lib/requestMix';
import { printGoal } from './lib/goal';

/** The issue's goals (issue 15, item 1). */
const GOALS = { jobsPerSecond: 150, httpP99Ms: 150, maxRatioToRaw: 2 };

interface Figures {
  label: string;
  n: number;
  seconds: number;
  latencies: number[];
  cpu: CpuUse;
}

/** CPU seconds spent during a phase by each process of the stack. */
interface CpuUse {
  host: number;
  azurite: number;
  bench: number;
}

/** utime + stime of a process in seconds (Linux /proc; CLK_TCK is 100 on every platform Node supports here). */
function processCpu(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const rate = (f: Figures): number => f.n / f.seconds;
const sortedOf = (f: Figures): number[] => [...f.latencies].sort((a, b) => a - b);
const p = (f: Figures, q: number): number => percentile(sortedOf(f), q);

function line(f: Figures): string {
  const perJob = (s: number): string => `${((1000 * s) / f.n).toFixed(1).padStart(5)}`;
  return `${f.label.padEnd(32)} ${String(f.n).padStart(5)} in ${f.seconds.toFixed(2).padStart(6)} s ${rate(f).toFixed(1).padStart(7)} jobs/s  p50 ${p(f, 50).toFixed(0).padStart(6)} ms  p99 ${p(f, 99).toFixed(0).padStart(6)} ms   CPU ms/job: host ${perJob(f.cpu.host)}  Azurite ${perJob(f.cpu.azurite)}  bench ${perJob(f.cpu.bench)}`;
}

/** A Jobs row as intake writes it, for the raw insert baseline. */
function equivalentRow(id: string): ReturnType<typeof jobToEntity> {
  const parsed = parseJobSpec(fastSpec(id));
  if (!parsed.ok) throw new Error(`bench spec invalid: ${JSON.stringify(parsed.errors)}`);
  const at = new Date().toISOString();
  const rec: JobRecord = {
    id,
    name: parsed.spec.name,
    owner: 'bench',
    tags: {},
    specHash: specHash(parsed.spec),
    spec: parsed.spec,
    state: 'Submitted',
    stage: 'Submitted',
    progress: null,
    createdAt: at,
    updatedAt: at,
    eventSeq: 1,
    lastEvent: { jobId: id, at, kind: 'transition', seq: 1, from: null, to: 'Submitted', reason: 'submitted' },
  };
  return jobToEntity(rec);
}

interface Running {
  stack: Stack;
  hostPid: () => number;
  azuritePid: number;
  stop(): Promise<void>;
}

async function start(layout: string, busyConcurrency: number | undefined): Promise<Running> {
  const durable = busyConcurrency !== undefined ? { maxConcurrentWhileHostBusy: busyConcurrency } : undefined;
  if (layout === 'in-process') {
    const s = await startStack({ port: 0, demoImage: false, logLevel: 'warn', logDestination: 2, durable });
    return { stack: s, hostPid: () => process.pid, azuritePid: s.azurite.pid, stop: () => s.stop() };
  }
  if (layout !== 'supervised') throw new Error(`--layout must be supervised or in-process, got ${layout}`);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'bench-intake-'));
  const s = await startSupervisedStack({
    dataDir,
    appDir: REPO_ROOT,
    repoRoot: REPO_ROOT,
    port: 0,
    logLevel: 'warn',
    logFile: path.join(dataDir, 'host.log'),
    durable,
    say: () => undefined,
  });
  const keys = loadOrCreateKeys(defaultKeysFile(REPO_ROOT));
  return {
    stack: { baseUrl: s.baseUrl, host: { keys: { functionKey: s.functionKey, masterKey: keys.masterKey } }, operator: s.services.operator },
    hostPid: () => s.host()?.pid ?? NaN,
    azuritePid: s.services.azurite.pid,
    stop: async () => {
      await s.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function main(): Promise<void> {
  const jobs = numberArg('jobs', 200);
  const clients = numberArg('clients', 16);
  const layout = textArg('layout', 'supervised');
  const busyArg = textArg('busy-concurrency', '');
  const busyConcurrency = busyArg ? numberArg('busy-concurrency', 2) : undefined;
  // The profile of outgoing requests needs the stack in this process; it wraps entry points before the stack starts.
  const mix: RequestMix | undefined = layout === 'in-process' ? new (await import('./lib/requestMix')).RequestMix() : undefined;
  const client = <T>(work: () => Promise<T>): Promise<T> => (mix ? mix.client(work) : work());
  const run = await start(layout, busyConcurrency);
  const { stack } = run;
  const cpuNow = (): CpuUse => {
    const self = process.cpuUsage();
    const bench = (self.user + self.system) / 1e6;
    const host = run.hostPid() === process.pid ? 0 : processCpu(run.hostPid());
    return { host, azurite: processCpu(run.azuritePid), bench };
  };
  const phase = async (name: string, work: () => Promise<void>): Promise<{ seconds: number; cpu: CpuUse }> => {
    mix?.enter(name);
    const c0 = cpuNow();
    const t0 = performance.now();
    await work();
    const seconds = (performance.now() - t0) / 1000;
    const c1 = cpuNow();
    const cpu = { host: c1.host - c0.host, azurite: c1.azurite - c0.azurite, bench: c1.bench - c0.bench };
    // In one process the host's CPU is this process's: report it as the host's.
    if (run.hostPid() === process.pid) return { seconds, cpu: { host: cpu.bench, azurite: cpu.azurite, bench: 0 } };
    return { seconds, cpu };
  };
  try {
    // Warm up every path once (table creation, first orchestration, queue listener).
    await postJob(stack, fastSpec('bench-warm-h'));
    await submissionsQueue(stack).createIfNotExists();
    await enqueue(submissionsQueue(stack), fastSpec('bench-warm-q'));
    await waitAllTerminal(stack, 'bench-warm-', 2, 120_000);

    // Baseline: the raw insert of an equivalent row, same concurrency, into a table of its own.
    const raw = stack.operator.table('BenchRawJobs');
    await raw.createTable();
    const rows = Array.from({ length: jobs }, (_, i) => equivalentRow(`bench-raw-${i}`));
    const rawLat: number[] = [];
    const rawRun = await phase('raw insert', () =>
      client(() =>
        runPool(rows, clients, async (row) => {
          const s = performance.now();
          await raw.createEntity(row);
          rawLat.push(performance.now() - s);
        }),
      ),
    );
    const rawFig: Figures = { label: 'raw Table createEntity (baseline)', n: jobs, latencies: rawLat, ...rawRun };

    // HTTP: POST /api/jobs until every answer is in (202 each).
    const httpLat: number[] = [];
    const statuses = new Map<number, number>();
    const httpRun = await phase('HTTP door', () =>
      client(() =>
        runPool(
          Array.from({ length: jobs }, (_, i) => `bench-h-${i}`),
          clients,
          async (id) => {
            const a = await postJob(stack, fastSpec(id));
            statuses.set(a.status, (statuses.get(a.status) ?? 0) + 1);
            httpLat.push(a.ms);
          },
        ),
      ),
    );
    const httpFig: Figures = { label: 'POST /api/jobs', n: jobs, latencies: httpLat, ...httpRun };
    const endedDuringHttp = (await jobRows(stack, 'bench-h-')).filter((r) => ['Succeeded', 'Failed', 'Cancelled'].includes(r.state)).length;

    // Queue: enqueue all, then wait until the queue is empty: every message taken, its job recorded and started, and
    // deleted (the approximate count includes messages being processed). Latency: enqueue → the job's row.
    const queue = submissionsQueue(stack);
    const sentAt = new Map<string, number>();
    const queueRun = await phase('queue door', async () => {
      await client(() =>
        runPool(
          Array.from({ length: jobs }, (_, i) => `bench-q-${i}`),
          clients,
          async (id) => {
            sentAt.set(id, Date.now());
            await enqueue(queue, fastSpec(id));
          },
        ),
      );
      const deadline = performance.now() + 600_000;
      while (((await queue.getProperties()).approximateMessagesCount ?? 0) > 0) {
        if (performance.now() > deadline) throw new Error('queue intake did not finish in 10 minutes');
        await new Promise((r) => setTimeout(r, 50));
      }
    });
    const queueRows = await jobRows(stack, 'bench-q-');
    if (queueRows.length !== jobs) throw new Error(`the queue door recorded ${queueRows.length} of ${jobs} jobs`);
    const queueLat: number[] = [];
    const table = jobsTable(stack);
    for await (const e of table.listEntities<{ createdAt: string }>({
      queryOptions: { filter: "PartitionKey ge 'bench-q-' and PartitionKey lt 'bench-q-~' and RowKey eq 'job'" },
    })) {
      queueLat.push(Date.parse(e.createdAt) - (sentAt.get(String(e.partitionKey)) ?? NaN));
    }
    const queueFig: Figures = { label: 'job-submissions queue', n: jobs, latencies: queueLat, ...queueRun };

    // Not intake, but what it costs: how long until every accepted job's pipeline has ended.
    const pipelines = await phase('pipelines', async () => {
      await waitAllTerminal(stack, 'bench-', 2 + 2 * jobs, 900_000);
    });

    console.log(
      `intake bench: ${jobs} jobs per door, ${clients} concurrent clients, layout ${layout}, load average ${loadavg()[0]?.toFixed(1)} on ${cpus().length} cores`,
    );
    console.log(`HTTP answers: ${[...statuses].map(([s, n]) => `${n}x${s}`).join(', ')}`);
    for (const f of [rawFig, httpFig, queueFig]) console.log(line(f));
    console.log(
      `pipelines beside intake: ${endedDuringHttp} of ${jobs} HTTP jobs had ended when the last HTTP answer came; all ${2 * jobs} (ending Failed on a missing pool) ended ${pipelines.seconds.toFixed(1)} s after the last queue row`,
    );
    const ratio = (f: Figures): number => rate(rawFig) / rate(f);
    const cpuRatio = (f: Figures): string => {
      const ms = (x: Figures): number => x.cpu.host + x.cpu.azurite + x.cpu.bench;
      return (ms(f) / ms(rawFig)).toFixed(1);
    };
    console.log(
      `vs raw insert (same run): HTTP throughput ${ratio(httpFig).toFixed(1)}x lower, p50 ${(p(httpFig, 50) / p(rawFig, 50)).toFixed(1)}x, CPU per job ${cpuRatio(httpFig)}x; queue throughput ${ratio(queueFig).toFixed(1)}x lower, CPU per job ${cpuRatio(queueFig)}x`,
    );
    console.log(`goals (issue 15)${' '.repeat(27)}    target   measured`);
    printGoal({ name: 'intake-http-throughput', measured: rate(httpFig), target: GOALS.jobsPerSecond, compare: '>=', unit: '/s', digits: 1 });
    printGoal({ name: 'intake-queue-throughput', measured: rate(queueFig), target: GOALS.jobsPerSecond, compare: '>=', unit: '/s', digits: 1 });
    printGoal({ name: 'intake-http-p99', measured: p(httpFig, 99), target: GOALS.httpP99Ms, compare: '<=', unit: 'ms', digits: 0 });
    printGoal({ name: 'intake-http-vs-raw-insert', measured: ratio(httpFig), target: GOALS.maxRatioToRaw, compare: '<=', unit: 'x', digits: 1 });
    printGoal({ name: 'intake-queue-vs-raw-insert', measured: ratio(queueFig), target: GOALS.maxRatioToRaw, compare: '<=', unit: 'x', digits: 1 });
    if (mix) {
      console.log('outgoing requests by owner (storage, Durable RPC, Batch, webhooks):');
      for (const [name, n] of [
        ['raw insert', jobs],
        ['HTTP door', jobs],
        ['queue door', jobs],
        ['pipelines', 2 * jobs],
      ] as const) {
        console.log(`  ${name}: ${mix.describe(name, n)}`);
      }
    }
  } finally {
    await run.stop();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
