/**
 * Sequential vs overlapped staging (PIPELINE_OVERLAP, docs/pipeline.md#overlapped-staging), side by side in one run:
 * the docker demo job (examples/demo/docker-openmpi.yaml: 12 nodes, the demo image pulled at most 10 nodes at a time)
 * over 300 MB of input, on two local stacks that differ only in PIPELINE_OVERLAP (false, true). Rounds alternate
 * between them, so both see the same machine load. Per run:
 *   submit → MPI start      submission (client clock) → the MPI task's start (the emulator's task record)
 *   idle node-min (record)  the job's cost record: Σ over nodes of (ready → MPI task added), as the orchestrator saw it
 *   idle node-min (Batch)   the same sum from the emulator's own times: each node's start task end → MPI task start
 * Goals (issue 15): overlapped submit → MPI start ≤ 0.7× sequential; billed idle node-minutes ≤ 0.5× sequential.
 * Run: node --import tsx bench/overlap.ts [--size-mb 300] [--rounds 2] [--nodes 12]
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../local/stack';
import type { ExchangeRecord } from '../local/batch/config';
import { checkResult, submitSpec, uploadDemoInputs, watchJob } from '../local/jobRunner';
import { numberArg } from './lib/args';

const SIZE_MB = numberArg('size-mb', 300);
const ROUNDS = numberArg('rounds', 2);
const NODES = numberArg('nodes', 12);

interface Figures {
  submitToMpiStart: number;
  idleRecord: number;
  idleBatch: number;
}

interface Bench {
  name: 'sequential' | 'overlapped';
  stack: Stack;
  exchanges: ExchangeRecord[];
  expected: Parameters<typeof checkResult>[1];
  runs: Figures[];
}

async function open(name: Bench['name']): Promise<Bench> {
  const exchanges: ExchangeRecord[] = [];
  const stack = await startStack({
    port: 0,
    logLevel: 'warn',
    env: { PIPELINE_OVERLAP: name === 'overlapped' ? 'true' : 'false' },
    batch: { onExchange: (e) => exchanges.push(e) },
  });
  const expected = await uploadDemoInputs(stack, SIZE_MB);
  return { name, stack, exchanges, expected, runs: [] };
}

async function runOnce(b: Bench, round: number): Promise<Figures> {
  const text = readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'docker-openmpi.yaml'), 'utf8').replace(/localhost:5000\//g, `${b.stack.registry.host}/`);
  const spec = parse(text) as Record<string, unknown> & { pool: { nodes: number } };
  const id = `bench-${b.name}-${round}`;
  spec.id = id;
  spec.pool.nodes = NODES;
  const submitAt = Date.now();
  await submitSpec(b.stack, stringify(spec));
  const view = await watchJob(b.stack, id, 900_000);
  if (view.state !== 'Succeeded') throw new Error(`job ${id} ${view.state}: ${view.error?.message}`);
  const problems = checkResult(view, b.expected);
  if (problems.length) throw new Error(`job ${id}: wrong result: ${problems.join('; ')}`);

  const batch = b.stack.operator.batch();
  const tasks = await batch.task.list(view.batchJobId as string);
  const mpiStart = tasks.find((t) => t.id === 'mpi')?.executionInfo?.startTime?.getTime() ?? NaN;
  // Each node's readiness as the emulator stamped it: its start task's end, from the node lists the pipeline read.
  const poolPath = `/pools/${(view.batchPoolId as string).toLowerCase()}/nodes`;
  const readyAt = new Map<string, number>();
  for (const e of b.exchanges) {
    if (e.method !== 'GET' || e.path.toLowerCase() !== poolPath || e.status !== 200) continue;
    for (const n of (e.responseBody as { value?: { id: string; state?: string; stateTransitionTime?: string; startTaskInfo?: { endTime?: string } }[] })?.value ?? []) {
      const t = Date.parse(n.startTaskInfo?.endTime ?? n.stateTransitionTime ?? '');
      if (n.state === 'idle' && Number.isFinite(t) && !readyAt.has(n.id)) readyAt.set(n.id, t);
    }
  }
  const cost = (view.result as { cost?: { idleNodeMinutesBeforeMpi?: number } }).cost;
  return {
    submitToMpiStart: (mpiStart - submitAt) / 1000,
    idleRecord: cost?.idleNodeMinutesBeforeMpi ?? NaN,
    idleBatch: [...readyAt.values()].reduce((s, t) => s + Math.max(0, mpiStart - t), 0) / 60_000,
  };
}

async function main(): Promise<void> {
  const benches: Bench[] = [];
  try {
    // One stack at a time does work; the other sits idle between its runs.
    benches.push(await open('sequential'));
    benches.push(await open('overlapped'));
    for (let r = 1; r <= ROUNDS; r++) {
      for (const b of r % 2 ? benches : [...benches].reverse()) {
        const f = await runOnce(b, r);
        b.runs.push(f);
        console.log(`round ${r} ${b.name.padEnd(10)} submit→MPI ${f.submitToMpiStart.toFixed(2)} s, idle ${f.idleRecord.toFixed(3)} node-min (record), ${f.idleBatch.toFixed(3)} (Batch times)`);
      }
    }
  } finally {
    for (const b of benches) await b.stack.stop();
  }
  const mean = (b: Bench, k: keyof Figures) => b.runs.reduce((n, f) => n + f[k], 0) / b.runs.length;
  const [seq, ov] = benches;
  const row = (label: string, k: keyof Figures, unit: string, goal: number) => {
    const ratio = mean(ov, k) / mean(seq, k);
    console.log(`${label.padEnd(34)} ${mean(seq, k).toFixed(3).padStart(9)} ${mean(ov, k).toFixed(3).padStart(11)} ${unit.padEnd(9)} ${ratio.toFixed(2).padStart(6)}  ≤ ${goal.toFixed(1)}  ${ratio <= goal ? 'met' : 'NOT met'}`);
  };
  console.log(`\nstaging overlap: docker demo job, ${NODES} nodes, ${SIZE_MB} MB input, mean of ${ROUNDS} run(s) each, rounds alternating`);
  console.log(`${''.padEnd(34)} ${'sequential'.padStart(9)} ${'overlapped'.padStart(11)} ${''.padEnd(9)} ${'ratio'.padStart(6)}  goal`);
  row('submit → MPI task start', 'submitToMpiStart', 's', 0.7);
  row('billed idle before MPI (record)', 'idleRecord', 'node-min', 0.5);
  row('billed idle before MPI (Batch)', 'idleBatch', 'node-min', 0.5);
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
