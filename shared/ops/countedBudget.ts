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
}

const t = (table: number, queue: number, blobWrite = 0, blobRead = 0): StorageTransactions => ({ table, queue, blobWrite, blobRead });

/**
 * Counted on the local stack: `npm run bench -- calls --nodes 2,8 --mpi-seconds 6` (2026-11-27), no data and no image
 * (a job with data adds its staging blobs and the shard copies' rows, which these figures do not include). Budgeted
 * requests (the pollers' dequeues apart): 2 nodes, 5 MPI polls: 195 table, 160 queue; 8 nodes, 6 polls: 220 table,
 * 196 queue. Less the intake and the polls, that is 166 + 3.5 × nodes table and 119 + 5 × nodes queue transactions
 * (the per-node part: the node tasks' activity round trips in the staging window and preflight).
 */
export const COUNTED_BUDGET: CountedBudget = {
  countedAt: '2026-11-27',
  source: 'counted at Azurite by bench/calls.ts (2 and 8 nodes), asserted by tests/calls/historyBound.test.ts',
  intake: t(2, 1),
  perMpiPoll: t(4, 6),
  fixed: t(166, 119),
  perNode: t(3.5, 5),
  mpiPollsPerMinute: 2,
};

export function addTransactions(a: StorageTransactions, b: StorageTransactions, times = 1): StorageTransactions {
  return { table: a.table + times * b.table, queue: a.queue + times * b.queue, blobWrite: a.blobWrite + times * b.blobWrite, blobRead: a.blobRead + times * b.blobRead };
}

/** A job's storage transactions from the table: intake + fixed + per node × nodes + per poll × polls. */
export function countedStorage(shape: { nodes: number; mpiPolls: number }, b: CountedBudget = COUNTED_BUDGET): StorageTransactions {
  let s = addTransactions(b.intake, b.fixed);
  s = addTransactions(s, b.perNode, shape.nodes);
  return addTransactions(s, b.perMpiPoll, shape.mpiPolls);
}
