/**
 * History rows per job, counted in the History table at Azurite (as tests/calls/callBudgets.test.ts counts): the same
 * 2-node job with an MPI run of N and of 4N seconds. The MPI wait runs in the mpiWait sub-orchestration, which continues
 * as new every MPI_WAIT_POLLS_PER_GENERATION polls and keeps only its last execution's rows, so the rows of a job do
 * not grow with its run time (docs/call-budgets.md, "History rows"). Counts, never timings. The same jobs check the
 * declared per-job storage table the control plane's cost is priced from (shared/core/ops/countedBudget.ts).
 */
import { startStack, type Stack } from '../../local/stack';
import { CallCounter } from '../../local/testing/callCounter';
import { MPI_WAIT_POLLS_PER_GENERATION } from '../../shared/core/contract';
import {
  budgetSpec,
  COUNTING_SETTINGS,
  HISTORY_ROWS_PER_WAIT,
  historyRowBound,
  runCounted,
  steadyPoll,
  storageTransactions,
  warmUp,
  type JobCalls,
} from '../../bench/lib/callBudget';
import { COUNTED_BUDGET, countedStorage } from '../../shared/core/ops/countedBudget';

let stack: Stack;
const counter = new CallCounter();
let short: JobCalls;
let long: JobCalls;
const K = MPI_WAIT_POLLS_PER_GENERATION;

beforeAll(async () => {
  const hooks = counter.stackOptions();
  stack = await startStack({
    port: 0,
    demoImage: false,
    logLevel: 'warn',
    env: COUNTING_SETTINGS,
    onStorageRequest: hooks.onStorageRequest,
    onInvocation: hooks.onInvocation,
    batch: hooks.batch,
  });
  counter.bindStorage(stack.azurite.ports, stack.azurite.tableEndpoint());
  await warmUp(stack, counter);
  short = await runCounted(stack, counter, budgetSpec('history-short', 2, 5), 300_000);
  long = await runCounted(stack, counter, budgetSpec('history-long', 2, 30), 300_000);
}, 900_000);

afterAll(async () => {
  await stack?.stop();
});

/** The job's sub-orchestrations (the MPI waits): instance ids `<job>:<seq>`. */
const waits = (j: JobCalls) => Object.entries(j.historyByInstance).filter(([id]) => id !== j.id);
const timers = (types: string[]) => types.filter((t) => t === 'TimerFired').length;
/** Episode markers: each episode of an orchestration writes one OrchestratorStarted and one OrchestratorCompleted row. */
const EPISODE_ROWS = new Set(['OrchestratorStarted', 'OrchestratorCompleted']);
/** Of a wait's 8 rows, its two episodes' markers (the timer's and the poll's). */
const EPISODE_ROWS_PER_WAIT = 4;
/**
 * The rows besides the waits' (each wait: a timer and the poll after it, 8 rows) and besides the episode markers.
 * Markers are apart because the number of episodes is not the job's to decide: cleanup requests the Batch job's
 * termination and the pool's deletion together (orchestrations/stages/cleanup.ts: the deletion stops the billing and
 * must not wait a round trip), and the engine delivers the two completions in one batch of new events (one episode) or
 * in two (two episodes), as Durable does, as the messages happen to arrive. Either way the same events are recorded;
 * only one OrchestratorStarted/Completed pair more or less: the 110 vs 112 "structure" of an intermittent failure here.
 */
const structure = (j: JobCalls) =>
  Object.values(j.historyByInstance).reduce(
    (n, types) => n + types.filter((t) => !EPISODE_ROWS.has(t)).length - (HISTORY_ROWS_PER_WAIT - EPISODE_ROWS_PER_WAIT) * timers(types),
    0,
  );
/** Episodes besides the waits' two each. */
const episodes = (j: JobCalls) =>
  Object.values(j.historyByInstance).reduce(
    (n, types) => n + types.filter((t) => t === 'OrchestratorStarted').length - (EPISODE_ROWS_PER_WAIT / 2) * timers(types),
    0,
  );
/** Activities the job runs side by side whose completions may come in one episode or in two: cleanup's terminate + delete. */
const PARALLEL_PAIRS = 1;

test('both jobs succeeded, the long one polling through several generations of the wait', () => {
  expect([short.state, long.state]).toEqual(['Succeeded', 'Succeeded']);
  // More polls than one generation holds (the first look is the job's own): the wait continued as new at least once.
  expect(long.polls).toBeGreaterThan(K + 1);
  if (process.env.HISTORY_BOUND_VERBOSE) {
    for (const j of [short, long]) {
      const types = Object.fromEntries(
        Object.entries(j.historyByInstance).map(([k, v]) => [k, Object.fromEntries([...new Set(v)].sort().map((t) => [t, v.filter((x) => x === t).length]))]),
      );
      const execs = new Map<string, number>();
      for (const e of j.executions) execs.set(e.functionName, (execs.get(e.functionName) ?? 0) + 1);
      console.log(
        j.id,
        j.polls,
        j.historyRows,
        j.timersFired,
        structure(j),
        episodes(j),
        JSON.stringify(types),
        `executions ${j.executions.length} ${JSON.stringify(Object.fromEntries(execs))} cpu ${j.cpuSeconds.toFixed(2)}`,
      );
    }
  }
  expect(waits(long).length).toBeGreaterThan(0);
});

test('the waits keep at most one generation of polls: K timers per wait instance, whatever the run time', () => {
  for (const j of [short, long]) {
    for (const [, types] of waits(j)) {
      expect(timers(types)).toBeLessThanOrEqual(K);
      expect(types.filter((t) => t === 'TaskScheduled').length).toBeLessThanOrEqual(K);
    }
    // The job's own history holds no MPI poll but its first look.
    expect(j.historyByInstance[j.id].length).toBeGreaterThan(0);
  }
});

test('the same rows besides the waits for N and 4N seconds, and both within the documented bound', () => {
  // Every row of a job is either a wait's (8 per timer fired) or the structure's, which is the same for both runs
  // when they took the same path (same number of wait calls).
  expect(waits(long).length).toBe(waits(short).length);
  expect(structure(long)).toBe(structure(short));
  // The episodes besides the waits': the same but for the parallel pair's completions, which may share an episode.
  expect(Math.abs(episodes(long) - episodes(short))).toBeLessThanOrEqual(PARALLEL_PAIRS);
  for (const j of [short, long]) expect(j.historyRows).toBeLessThanOrEqual(historyRowBound(j.timersFired, 2));
  // In all: the two differ by the polls of the waits' last generations only, at most K − 1 polls' rows per wait.
  expect(Math.abs(long.historyRows - short.historyRows)).toBeLessThanOrEqual(waits(long).length * (K - 1) * HISTORY_ROWS_PER_WAIT);
  // And the waits' rows present in the table: not more than K polls' worth per wait instance.
  const mpiWaitRows = (j: JobCalls) => waits(j).reduce((n, [, types]) => n + HISTORY_ROWS_PER_WAIT * timers(types), 0);
  expect(mpiWaitRows(long)).toBeLessThanOrEqual(waits(long).length * K * HISTORY_ROWS_PER_WAIT);
});

describe('the declared per-job storage transactions (shared/core/ops/countedBudget.ts) are the counted ones', () => {
  test("intake: exactly the table's", () => {
    for (const j of [short, long]) expect(storageTransactions(j.intake)).toEqual(COUNTED_BUDGET.intake);
  });

  test("a steady-state MPI poll: exactly the table's (inside the mpiWait sub-orchestration as before)", () => {
    const poll = steadyPoll(long.pollGaps);
    const byService = { table: 0, queue: 0, blobWrite: 0, blobRead: 0 };
    for (const r of poll) {
      if (r.startsWith('table ')) byService.table++;
      else if (r.startsWith('queue ')) byService.queue++;
      else if (r.startsWith('blob ')) byService.blobWrite++;
    }
    expect(byService).toEqual(COUNTED_BUDGET.perMpiPoll);
  });

  test('a whole job: within 10% of intake + fixed + per node + per poll, each price class', () => {
    // Not exact: the waits of provisioning and of the node tasks follow the emulator's timing, and the MPI wait adds
    // its continue-as-new every K polls; the table's fixed part was counted at 2 nodes with 5 polls.
    for (const j of [short, long]) {
      const counted = storageTransactions(j.calls);
      const table = countedStorage({ nodes: 2, mpiPolls: j.polls });
      if (process.env.HISTORY_BOUND_VERBOSE) console.log(JSON.stringify({ counted, table }));
      expect(Math.abs(counted.table - table.table)).toBeLessThanOrEqual(0.1 * table.table);
      expect(Math.abs(counted.queue - table.queue)).toBeLessThanOrEqual(0.1 * table.queue);
      // The default logs (every task's stdout and stderr) are blobs: writes by Batch, reads by the verification.
      expect(Math.abs(counted.blobWrite - table.blobWrite)).toBeLessThanOrEqual(Math.max(1, 0.1 * table.blobWrite));
      expect(Math.abs(counted.blobRead - table.blobRead)).toBeLessThanOrEqual(Math.max(1, 0.1 * table.blobRead));
    }
  });
});
