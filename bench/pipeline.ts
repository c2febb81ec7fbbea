/**
 * Control-plane overhead of the pipeline on the local stack: the demo job (native Open MPI, 4 nodes, staged
 * input data), timed from the outside and split into the work the "cloud" does and the time our control plane
 * adds around it:
 *   submit → MPI task start   = pool allocation (pool created → last node idle, start tasks included)
 *                             + image pulls (none for the native runtime)
 *                             + shard copy (first shardCopy activity start → last end, from the host log)
 *                             + shard downloads (first dl- task start → last end, Batch task timestamps)
 *                             + overhead (everything else: HTTP, queue, orchestration episodes, polling waits)
 *   MPI task end → pool delete requested / → job recorded final (the cleanup stage's overhead).
 * Run: node --import tsx bench/pipeline.ts [--size-mb 120] [--runs 2]
 */
import { readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../local/stack';
import type { ExchangeRecord } from '../local/batch/config';
import { checkResult, submitSpec, uploadDemoInputs, watchJob } from '../local/jobRunner';
import { numberArg } from './lib/args';

const SIZE_MB = numberArg('size-mb', 120);
const RUNS = numberArg('runs', 2);

const span = (starts: number[], ends: number[]) => (starts.length && ends.length ? (Math.max(...ends) - Math.min(...starts)) / 1000 : 0);

interface Figures {
  submitToMpiStart: number;
  allocation: number;
  pulls: number;
  shardCopy: number;
  downloads: number;
  overhead: number;
  mpiRun: number;
  taskEndToPoolDelete: number;
  taskEndToFinal: number;
  /** The job's cost record: Σ over nodes of (ready → MPI task start), node-minutes. */
  idleBeforeMpi: number;
}

/** Spans of one activity in the host's JSON log: [start, end] from each "durable activity" line's time and duration. */
function activitySpans(logFile: string, instanceId: string, activity: string): { starts: number[]; ends: number[] } {
  const starts: number[] = [];
  const ends: number[] = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"durable activity"') || !line.includes(`"instanceId":"${instanceId}"`)) continue;
    const l = JSON.parse(line) as { time: number; activity?: string; durationMs?: number };
    if (l.activity !== activity) continue;
    ends.push(l.time);
    starts.push(l.time - (l.durationMs ?? 0));
  }
  return { starts, ends };
}

async function runOnce(stack: Stack, logFile: string, exchanges: ExchangeRecord[], run: number, expected: Parameters<typeof checkResult>[1]): Promise<Figures> {
  const spec = parse(readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8')) as Record<string, unknown>;
  const id = `bench-overhead-${run}`;
  spec.id = id;
  const submitAt = Date.now();
  await submitSpec(stack, stringify(spec));
  const view = await watchJob(stack, id, 600_000);
  // The final transition's time as the job store recorded it.
  const finalEvent = ((view.timeline ?? []) as unknown as { kind: string; to?: string; at: string }[])
    .filter((e) => e.kind === 'transition' && e.to === view.state)
    .pop();
  const finalAt = finalEvent ? Date.parse(finalEvent.at) : NaN;
  if (view.state !== 'Succeeded') throw new Error(`job ${id} ${view.state}: ${view.error?.message}`);
  const problems = checkResult(view, expected);
  if (problems.length) throw new Error(`job ${id}: wrong result: ${problems.join('; ')}`);

  const batch = stack.operator.batch();
  const tasks = await batch.task.list(view.batchJobId as string);
  const mpi = tasks.find((t) => t.id === 'mpi');
  const mpiStart = mpi?.executionInfo?.startTime?.getTime() ?? NaN;
  const mpiEnd = mpi?.executionInfo?.endTime?.getTime() ?? NaN;
  const taskSpan = (prefix: string) => {
    const ts = tasks.filter((t) => t.id?.startsWith(prefix));
    return span(
      ts.map((t) => t.executionInfo?.startTime?.getTime() ?? NaN).filter(Number.isFinite),
      ts.map((t) => t.executionInfo?.endTime?.getTime() ?? NaN).filter(Number.isFinite),
    );
  };

  // Allocation: from the pool create call to the last node becoming idle (the emulator's allocate + boot + start task).
  const poolId = view.batchPoolId as string;
  const created = exchanges.find((e) => e.method === 'POST' && e.path === '/pools' && (e.requestBody as { id?: string }).id === poolId && e.status === 201);
  const idleAt = exchanges
    .filter((e) => e.method === 'GET' && e.path.toLowerCase() === `/pools/${poolId.toLowerCase()}/nodes` && e.status === 200)
    .find((e) => {
      const nodes = (e.responseBody as { value?: { state?: string }[] })?.value ?? [];
      return nodes.length >= 4 && nodes.filter((n) => n.state === 'idle').length >= 4;
    });
  // The moment the last node was ready, as the emulator stamped it (not when the orchestrator's poll saw it).
  const readyTimes = ((idleAt?.responseBody as { value?: { stateTransitionTime?: string; startTaskInfo?: { endTime?: string } }[] })?.value ?? [])
    .map((n) => Date.parse(n.startTaskInfo?.endTime ?? n.stateTransitionTime ?? ''))
    .filter(Number.isFinite);
  const allocation = created && readyTimes.length ? (Math.max(...readyTimes) - (stamps.get(created) as number)) / 1000 : NaN;
  const del = exchanges.find((e) => e.method === 'DELETE' && e.path.toLowerCase() === `/pools/${poolId.toLowerCase()}`);

  const copy = activitySpans(logFile, id, 'shardCopy');
  const f: Figures = {
    submitToMpiStart: (mpiStart - submitAt) / 1000,
    allocation,
    pulls: taskSpan('pull-'),
    shardCopy: span(copy.starts, copy.ends),
    downloads: taskSpan('dl-'),
    overhead: 0,
    mpiRun: (mpiEnd - mpiStart) / 1000,
    taskEndToPoolDelete: del ? ((stamps.get(del) as number) - mpiEnd) / 1000 : NaN,
    taskEndToFinal: (finalAt - mpiEnd) / 1000,
    idleBeforeMpi: (view.result as { cost?: { idleNodeMinutesBeforeMpi?: number } }).cost?.idleNodeMinutesBeforeMpi ?? NaN,
  };
  // With the overlapped staging (the default) the copy and downloads run beside allocation and pulls: the parts
  // overlap and the remainder understates the overhead; bench/overlap.ts compares the two modes.
  f.overhead = f.submitToMpiStart - f.allocation - f.pulls - f.shardCopy - f.downloads;
  return f;
}

/** When the emulator answered each exchange (the hook runs as the response is sent). */
const stamps = new Map<ExchangeRecord, number>();

async function main(): Promise<void> {
  const logFile = path.join(os.tmpdir(), `bench-pipeline-host-${process.pid}.log`);
  const exchanges: ExchangeRecord[] = [];
  const stack = await startStack({
    port: 0,
    logDestination: logFile,
    demoImage: false,
    batch: {
      onExchange: (e) => {
        stamps.set(e, Date.now());
        exchanges.push(e);
      },
    },
  });
  const all: Figures[] = [];
  try {
    const expected = await uploadDemoInputs(stack, SIZE_MB);
    for (let r = 1; r <= RUNS; r++) {
      const f = await runOnce(stack, logFile, exchanges, r, expected);
      all.push(f);
      console.log(`run ${r}: ${JSON.stringify(Object.fromEntries(Object.entries(f).map(([k, v]) => [k, Math.round(v * 100) / 100])))}`);
    }
  } finally {
    await stack.stop();
    rmSync(logFile, { force: true });
  }
  const mean = (k: keyof Figures) => all.reduce((n, f) => n + f[k], 0) / all.length;
  const s = (k: keyof Figures) => mean(k).toFixed(2).padStart(7);
  console.log(`\ncontrol-plane overhead: native demo job, 4 nodes x 2 ranks, ${SIZE_MB} MB input, mean of ${all.length} run(s), seconds`);
  console.log(`submit → MPI task start        ${s('submitToMpiStart')}`);
  console.log(`  pool allocation (emulator)   ${s('allocation')}`);
  console.log(`  image pulls                  ${s('pulls')}`);
  console.log(`  shard copy (activities)      ${s('shardCopy')}`);
  console.log(`  shard downloads (nodes)      ${s('downloads')}`);
  console.log(
    `  control-plane overhead       ${s('overhead')}  (${((mean('overhead') / mean('submitToMpiStart')) * 100).toFixed(0)} % of the path to MPI start)`,
  );
  console.log(`billed idle before MPI         ${s('idleBeforeMpi')}  node-minutes (cost record)`);
  console.log(`MPI task run                   ${s('mpiRun')}`);
  console.log(`MPI task end → pool delete     ${s('taskEndToPoolDelete')}`);
  console.log(`MPI task end → job final       ${s('taskEndToFinal')}`);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
