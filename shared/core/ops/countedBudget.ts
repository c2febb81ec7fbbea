/**
 * The storage transactions one job costs, as counted where they arrive (Azurite's request tap; bench/calls.ts and
 * tests/calls/*), kept as one declared table so the control plane's cost per job (controlPlaneCost.ts) is priced from
 * counts rather than a model. The parts the tests count exactly (the intake, a steady-state MPI poll) are asserted
 * against this table by tests/calls/historyBound.test.ts, and the rest (fixed and per node) is checked there against
 * counted jobs, so the table cannot drift from what the code does. Pure data and arithmetic.
 */

/** Storage transactions by the price class they are billed in (controlPlanePrices.ts). */
export interface StorageTransactions {
  table: number;
  queue: number;
  blobWrite: number;
  blobRead: number;
}

/** The host's own work: function executions (exact counts) and CPU-seconds (measured, process.cpuUsage). */
export interface HostWork {
  executions: number;
  cpuSeconds: number;
}

/**
 * The Functions host's work per job, counted on the local stack (bench/calls.ts, tests/calls/historyBound.test.ts):
 * executions as the host ran them (each HTTP, queue, timer, orchestrator episode and activity; FunctionsHostOptions.
 * onInvocation), CPU-seconds of the host's process around one job at a time (process.cpuUsage, user + system: the
 * host, the Durable engine and the in-process Batch emulator's server, so an upper bound of the host's own).
 */
export interface CountedHostWork {
  countedAt: string;
  source: string;
  /** A job apart from its MPI polls (intake, provisioning, node tasks, MPI task, cleanup). */
  fixed: HostWork;
  perNode: HostWork;
  /** One steady-state MPI poll: the poll activity and the wait's two episodes (the timer's and the activity's). */
  perMpiPoll: HostWork;
}

export interface CountedBudget {
  /** Day of the count (YYYY-MM-DD) and what counted it. */
  countedAt: string;
  source: string;
  /** The intake: one Jobs insert, the Durable start's Instances insert and start message (exact). */
  intake: StorageTransactions;
  /**
   * One steady-state poll of the running MPI task: the activity's and the timer's round trips (control message put and
   * delete, History batch and Instances replace each; work item put and delete), exact.
   */
  perMpiPoll: StorageTransactions;
  /** The rest of a job, apart from the intake and its MPI polls: its fixed part and its part per node (counted). */
  fixed: StorageTransactions;
  perNode: StorageTransactions;
  /**
   * MPI polls per minute of a long run in a deployment: one per POLL_MAX_MS / 2 (the default POLL_MAX_MS of 60 s: 2),
   * plus the MPI wait's continue-as-new every MPI_WAIT_POLLS_PER_GENERATION polls (its start message and history
   * clean-up: counted into perMpiPoll's share below).
   */
  mpiPollsPerMinute: number;
  host: CountedHostWork;
}

const t = (table: number, queue: number, blobWrite = 0, blobRead = 0): StorageTransactions => ({ table, queue, blobWrite, blobRead });

/**
 * Counted on the local stack: `npm run bench -- calls --nodes 2,8 --mpi-seconds 6` (2026-11-27, after full logs became
 * the default), no data and no image (a job with data adds its staging blobs and the shard copies' rows, which these
 * figures do not include). Budgeted requests (the pollers' dequeues apart), 8 MPI polls each: 2 nodes 218 table, 206
 * queue, 25 blob; 8 nodes 241 table, 238 queue, 73 blob. Less the intake and the polls, that is 176 + 3.8 × nodes
 * table and 146 + 5.3 × nodes queue transactions (the per-node part: the node tasks' activity round trips in the
 * staging window and preflight), and the default logs' blobs: 6 + 4 × nodes writes (every task's stdout and stderr,
 * uploaded by Batch) and 3 + 4 × nodes reads (the upload's verification and the log index).
 */
export const COUNTED_BUDGET: CountedBudget = {
  countedAt: '2026-11-27',
  source: 'counted at Azurite by bench/calls.ts (2 and 8 nodes), asserted by tests/calls/historyBound.test.ts',
  intake: t(2, 1),
  perMpiPoll: t(4, 6),
  // Blob reads: the uploads' checks are three listings since 2026-11-28 (docs/call-budgets.md, "The master's uploads
  // check by a listing"), not 4 lookups per node.
  fixed: t(176, 146, 6, 3),
  perNode: t(3.8, 5.3, 4, 0),
  mpiPollsPerMinute: 2,
  // Fixed and per node from the bench's 4- and 40-node jobs (97 and 185 executions, 4.46 and 9.13 CPU-s, 9 and 17 MPI
  // polls), less their polls at the per-poll figures; per poll from the 2-node jobs of 5 and 20 polls. The per-node
  // part is the staging stage's looks, which here follow the stage's wall clock on 2 shared cores (2 and 8 nodes, run
  // back to back by tests/calls/callBudgets.test.ts, showed none: 90 and 113 executions, 5.33 and 5.03 CPU-s, the
  // difference all looks and polls): an upper bound for Azure's separate machines.
  host: {
    countedAt: '2026-11-27',
    source:
      'bench/calls.ts (4 and 40 nodes: 97 and 185 executions, 4.46 and 9.13 CPU-s) and tests/calls/historyBound.test.ts ' +
      '(2 nodes, 5 and 20 MPI polls: 83 and 129 executions, 5.28 and 7.21 CPU-s)',
    fixed: { executions: 63, cpuSeconds: 2.9 },
    perNode: { executions: 1.8, cpuSeconds: 0.1 },
    perMpiPoll: { executions: 3, cpuSeconds: 0.13 },
  },
};

/** A job's host work from the table: fixed + per node × nodes + per poll × polls. */
export function countedHostWork(shape: { nodes: number; mpiPolls: number }, b: CountedBudget = COUNTED_BUDGET): HostWork {
  const { fixed, perNode, perMpiPoll } = b.host;
  return {
    executions: fixed.executions + shape.nodes * perNode.executions + shape.mpiPolls * perMpiPoll.executions,
    cpuSeconds: fixed.cpuSeconds + shape.nodes * perNode.cpuSeconds + shape.mpiPolls * perMpiPoll.cpuSeconds,
  };
}

export function addTransactions(a: StorageTransactions, b: StorageTransactions, times = 1): StorageTransactions {
  return {
    table: a.table + times * b.table,
    queue: a.queue + times * b.queue,
    blobWrite: a.blobWrite + times * b.blobWrite,
    blobRead: a.blobRead + times * b.blobRead,
  };
}

/** A job's storage transactions from the table: intake + fixed + per node × nodes + per poll × polls. */
export function countedStorage(shape: { nodes: number; mpiPolls: number }, b: CountedBudget = COUNTED_BUDGET): StorageTransactions {
  let s = addTransactions(b.intake, b.fixed);
  s = addTransactions(s, b.perNode, shape.nodes);
  return addTransactions(s, b.perMpiPoll, shape.mpiPolls);
}
