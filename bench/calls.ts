/**
 * Call budgets, counted per job where the requests arrive (Azurite's request tap, the Batch emulator's exchanges;
 * local/testing/callCounter.ts): the same job (no data, no image, `sleep` as the MPI command) at several node counts,
 * every request it causes split by stage and by service/component, with the goals of issue 30:
 *  - intake = the protocol minimum: one Jobs insert + the Durable start's writes (the Instances row, the start message);
 *  - steady-state polling: requests per MPI-task poll equal at every node count;
 *  - History rows per job ≤ the documented bound (docs/call-budgets.md);
 *  - total requests of the largest job within 2× of the smallest's.
 * Queue dequeues (`get-messages`) are the pollers' (host queue triggers, Durable dispatchers): clock-driven, shown
 * apart and left out of the budgets. Run: node --import tsx bench/calls.ts [--nodes 4,40,100] [--mpi-seconds 20]
 */
import { startStack } from '../local/stack';
import { CallCounter, type Call } from '../local/testing/callCounter';
import {
  budgetSpec,
  COUNTING_SETTINGS,
  HISTORY_ROWS_PER_WAIT,
  historyRowBound,
  mpiWaitRows,
  runCounted,
  STAGES,
  steadyPoll,
  warmUp,
  type JobCalls,
} from './lib/callBudget';
import { MPI_WAIT_POLLS_PER_GENERATION } from '../shared/core/contract';
import { numberArg, textArg } from './lib/args';
import { printGoal } from './lib/goal';

const NODES = textArg('nodes', '4,40,100').split(',').map(Number);
if (NODES.some((n) => !Number.isInteger(n) || n < 1)) throw new Error('--nodes must be a comma-separated list of node counts');
const MPI_SECONDS = numberArg('mpi-seconds', 20);

/** Rows of one MPI wait execution besides its polls' 8 each: ExecutionStarted and ExecutionCompleted, its first episode's start and end. */
const MPI_WAIT_FIXED_ROWS = 4;

/**
 * The control plane's requests: not the pollers' dequeues (clock-driven), nor the nodes' own transfers (each node's
 * agent uploads its logs: per node by nature, made by Batch's node agent, shown apart).
 */
const budget = (c: Call) => c.component !== 'poller' && c.component !== 'node';
const byNodes = (c: Call) => c.component === 'node';
const group = (c: Call) => (c.service === 'batch' || c.service === 'arm' ? c.service : `${c.service}:${c.component}`);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
}

async function main(): Promise<void> {
  const counter = new CallCounter();
  const hooks = counter.stackOptions();
  const stack = await startStack({
    port: 0,
    demoImage: false,
    logLevel: 'warn',
    env: COUNTING_SETTINGS,
    onStorageRequest: hooks.onStorageRequest,
    onInvocation: hooks.onInvocation,
    batch: hooks.batch,
  });
  counter.bindStorage(stack.azurite.ports, stack.azurite.tableEndpoint());
  const runs: { nodes: number; job: JobCalls; seconds: number }[] = [];
  let longer: (typeof runs)[number] | undefined;
  try {
    await warmUp(stack, counter);
    for (const nodes of NODES) {
      const started = Date.now();
      const job = await runCounted(stack, counter, budgetSpec(`calls-${nodes}-${Date.now().toString(36)}`, nodes, MPI_SECONDS));
      runs.push({ nodes, job, seconds: (Date.now() - started) / 1000 });
      console.log(`${nodes} nodes: ${job.state} in ${((Date.now() - started) / 1000).toFixed(0)} s`);
    }
    // The smallest job again with an MPI run twice as long: how History grows with run time.
    const longId = `calls-${NODES[0]}-long-${Date.now().toString(36)}`;
    const longJob = await runCounted(stack, counter, budgetSpec(longId, NODES[0], 2 * MPI_SECONDS));
    longer = { nodes: NODES[0], job: longJob, seconds: 0 };
  } finally {
    await stack.stop();
  }

  const groups = [...new Set(runs.flatMap((r) => r.job.calls.filter(budget).map(group)))].sort();
  console.log(`\nrequests per job by stage and service (pollers' dequeues and the nodes' own transfers apart), MPI run ${MPI_SECONDS} s`);
  for (const r of runs) {
    console.log(`\n${r.nodes} nodes (${r.job.state}, ${r.seconds.toFixed(0)} s)`);
    console.log(`  ${'stage'.padEnd(10)}${groups.map((g) => g.padStart(15)).join('')}${'total'.padStart(8)}`);
    for (const st of STAGES) {
      const cs = r.job.calls.filter((c) => c.stage === st && budget(c));
      console.log(
        `  ${st.padEnd(10)}${groups.map((g) => String(cs.filter((c) => group(c) === g).length).padStart(15)).join('')}${String(cs.length).padStart(8)}`,
      );
    }
    const total = r.job.calls.filter(budget);
    console.log(
      `  ${'total'.padEnd(10)}${groups.map((g) => String(total.filter((c) => group(c) === g).length).padStart(15)).join('')}${String(total.length).padStart(8)}`,
    );
    console.log(
      `  dequeues by pollers ${r.job.calls.filter((c) => c.component === 'poller').length}; the nodes' own transfers ${r.job.calls.filter(byNodes).length}; History rows ${r.job.historyRows} (${r.job.timersFired} timers fired), Instances rows ${r.job.instanceRows}; MPI polls ${r.job.polls}`,
    );
  }
  // Per node: what grows between the smallest and the largest run, per stage.
  if (runs.length > 1) {
    const a = runs[0];
    const b = runs[runs.length - 1];
    console.log(`\nper node (difference ${a.nodes} → ${b.nodes} nodes, divided by ${b.nodes - a.nodes}):`);
    for (const st of STAGES) {
      const diff = (r: typeof a) => r.job.calls.filter((c) => c.stage === st && budget(c));
      const byKey = (cs: Call[]) => {
        const m = new Map<string, number>();
        for (const c of cs) m.set(`${c.service} ${c.resource} ${c.operation}`, (m.get(`${c.service} ${c.resource} ${c.operation}`) ?? 0) + 1);
        return m;
      };
      const ma = byKey(diff(a));
      const mb = byKey(diff(b));
      const grown = [...mb].map(([k, v]) => [k, (v - (ma.get(k) ?? 0)) / (b.nodes - a.nodes)] as const).filter(([, v]) => v >= 0.5);
      if (grown.length) console.log(`  ${st}: ${grown.map(([k, v]) => `${k} ${v.toFixed(2)}`).join('; ')}`);
    }
  }

  if (process.argv.includes('--verbose')) {
    for (const r of runs) {
      console.log(`\n${r.nodes} nodes, intake:\n  ${r.job.intake.map((c) => `${c.service} ${c.component} ${c.resource} ${c.operation}`).join('\n  ')}`);
      r.job.pollGaps.forEach((g, i) =>
        console.log(
          `gap ${i}: ${g
            .filter(budget)
            .map((c) => `${c.service}:${c.resource}:${c.operation}`)
            .join(' ')}`,
        ),
      );
    }
  }
  console.log('');
  const intakeMinimum = 3; // Jobs insert + Instances insert + start message (docs/call-budgets.md)
  for (const r of runs) {
    const intake = r.job.intake.filter(budget).length;
    printGoal({ name: `intake-requests-${r.nodes}-nodes`, measured: intake, target: intakeMinimum, compare: '==' });
  }
  const perPoll = runs.map((r) => steadyPoll(r.job.pollGaps).length);
  runs.forEach((r, i) =>
    console.log(
      `steady-state requests per MPI poll, ${r.nodes} nodes: ${perPoll[i]} (${steadyPoll(r.job.pollGaps).join(', ')}; the most frequent of ${r.job.pollGaps.length} gaps, median ${median(r.job.pollGaps.map((g) => g.filter(budget).length))})`,
    ),
  );
  if (runs.length > 1) printGoal({ name: 'poll-requests-largest-vs-smallest', measured: perPoll[perPoll.length - 1], target: perPoll[0], compare: '==' });
  for (const r of runs)
    printGoal({ name: `history-rows-${r.nodes}-nodes`, measured: r.job.historyRows, target: historyRowBound(r.job.timersFired, r.nodes), compare: '<=' });
  // Independent of run time: the same job with a run twice as long writes the same rows but for the residue of the MPI
  // wait's last generation (at most K − 1 polls' rows per wait: the wait continues as new every K polls).
  if (longer) {
    const a = runs[0];
    const b = longer;
    const K = MPI_WAIT_POLLS_PER_GENERATION;
    console.log(
      `History rows, ${a.nodes} nodes: ${a.job.historyRows} (${a.job.polls} MPI polls) with a ${MPI_SECONDS} s run, ${b.job.historyRows} (${b.job.polls} MPI polls) with ${2 * MPI_SECONDS} s`,
    );
    const w = mpiWaitRows(b.job);
    const wa = mpiWaitRows(a.job);
    // Only the MPI wait depends on run time; the parent's rows vary with how Durable batches completions into episodes
    // and with the other stages' looks, so they are printed, not compared.
    console.log(`History rows outside the MPI wait: ${a.job.historyRows - wa.rows} and ${b.job.historyRows - w.rows}`);
    printGoal({
      name: 'history-rows-growth-with-run-time',
      measured: Math.max(0, w.rows - wa.rows),
      target: w.waits * (K - 1) * HISTORY_ROWS_PER_WAIT,
      compare: '<=',
    });
  }
  for (const r of runs) {
    const w = mpiWaitRows(r.job);
    // Per wait: at most K polls of 8 rows in its last execution, and 4 more.
    printGoal({
      name: `history-rows-mpi-wait-${r.nodes}-nodes`,
      measured: w.rows,
      target: w.waits * (MPI_WAIT_POLLS_PER_GENERATION * HISTORY_ROWS_PER_WAIT + MPI_WAIT_FIXED_ROWS),
      compare: '<=',
    });
  }
  if (runs.length > 1) {
    const total = (r: (typeof runs)[number]) => r.job.calls.filter(budget).length;
    printGoal({ name: 'total-requests-largest-over-smallest', measured: total(runs[runs.length - 1]) / total(runs[0]), target: 2, compare: '<=' });
    // The issue's goal by its name: a 100-node job's requests within 2× of a 4-node job's.
    const four = runs.find((r) => r.nodes === 4);
    const hundred = runs.find((r) => r.nodes === 100);
    if (four && hundred) printGoal({ name: 'requests-100n-vs-4n', measured: total(hundred) / total(four), target: 2, compare: '<=' });
    // Beside it, not a goal: with the nodes' own transfers counted too (their log uploads grow with the nodes).
    const all = (r: (typeof runs)[number]) => r.job.calls.filter((c) => budget(c) || byNodes(c)).length;
    const [small, large] = [runs[0], runs[runs.length - 1]];
    console.log(
      `with the nodes' own transfers: ${all(small)} requests at ${small.nodes} nodes, ${all(large)} at ${large.nodes} nodes, ratio ${(all(large) / all(small)).toFixed(2)}`,
    );
  }
  // The control plane's own work per job, counted (shared/core/ops/countedBudget.ts takes these figures, dated).
  console.log('');
  for (const r of runs) {
    const byTrigger = new Map<string, number>();
    for (const e of r.job.executions) byTrigger.set(e.trigger, (byTrigger.get(e.trigger) ?? 0) + 1);
    const split = [...byTrigger]
      .sort()
      .map(([t, n]) => `${t} ${n}`)
      .join(', ');
    console.log(
      `${r.nodes} nodes: ${r.job.executions.length} function executions (${split}); ${r.job.cpuSeconds.toFixed(2)} CPU-s of this process (host, Durable engine, Batch emulator server) over ${r.job.polls} MPI polls`,
    );
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
