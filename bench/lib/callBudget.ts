/**
 * Running one job on a local stack with a CallCounter (local/testing/callCounter.ts) and splitting the requests it
 * caused by stage: the intake (the POST, between two barriers: exact), then the job's states as its events give them
 * (Provisioning → provision, PullingImages → pull, StagingData → stage, Running → mpi, CleaningUp and the tail after
 * the final state → cleanup). Shared by bench/calls.ts and tests/calls/callBudgets.test.ts.
 */
import type { Stack } from '../../local/stack';
import type { Call, CallCounter, Execution } from '../../local/testing/callCounter';
import { submitSpec } from '../../local/jobRunner';
import type { StorageTransactions } from '../../shared/core/ops/countedBudget';

export const STAGES = ['intake', 'provision', 'pull', 'stage', 'mpi', 'cleanup'] as const;
export type Stage = (typeof STAGES)[number];

const STAGE_OF: Record<string, Stage> = {
  Submitted: 'intake',
  Queued: 'intake',
  Provisioning: 'provision',
  PullingImages: 'pull',
  StagingData: 'stage',
  Running: 'mpi',
  CleaningUp: 'cleanup',
  Succeeded: 'cleanup',
  Failed: 'cleanup',
  Cancelled: 'cleanup',
};

/**
 * App settings of a stack that counts per job: the clock-driven timers (the sweep, the event relay's catch-up) moved
 * to once a year, so that every request in a job's window is the job's (their cost is per run, not per job).
 */
export const COUNTING_SETTINGS: Record<string, string> = {
  // The deployment's timers (functions/sweep.ts, events.ts, pricesRefresh.ts) are nobody's job: each fires at most on
  // 1 January, so none lands in a counted window (the price refresh's 03:15 daily did, on a run at 03:15).
  SWEEP_SCHEDULE: '0 0 0 1 1 *',
  EVENTS_RELAY_SCHEDULE: '0 0 0 1 1 *',
  PRICES_REFRESH_SCHEDULE: '0 0 0 1 1 *',
  // 100 emulated nodes' sshd on 2 shared cores answer the preflight's probes in more than the spec's 10 s: this is the
  // machine, not the nodes (in Azure they are separate machines and keep the spec's maxSshMs).
  PREFLIGHT_SSH_WAIT_MIN_MS: '60000',
  // The number of looks and polls follows the timing: the figures of docs/call-budgets.md were measured with these
  // (the local stack's polling before it was made faster for the suite), so the counting stacks keep them.
  POLL_INITIAL_MS: '500',
  POLL_MAX_MS: '2000',
  POLL_LOOK_MAX_MS: '30000',
};

/**
 * One job through intake and to its end first (it names a pool that does not exist, so it fails at once): the host's
 * first-use work (tables created, clients built) is then done and not counted against the measured jobs.
 */
export async function warmUp(stack: Stack, counter: CallCounter): Promise<void> {
  const id = `calls-warmup-${Date.now().toString(36)}`;
  const job = await runCounted(
    stack,
    counter,
    { id, name: 'calls-warmup', pool: { poolId: `does-not-exist-${id}`, nodes: 1 }, mpi: { runtime: 'openmpi', command: 'true' } },
    120_000,
    1000,
  );
  if (job.state !== 'Failed') throw new Error(`warm-up job ${id} ended ${job.state}`);
}

/** A job that needs no data and no image: `nodes` emulated nodes, one rank each, an MPI run of `seconds`. */
export function budgetSpec(id: string, nodes: number, seconds: number): Record<string, unknown> {
  return {
    id,
    name: `calls-${nodes}`,
    pool: { vmSize: 'Standard_D2s_v5', nodes },
    container: { runtime: 'none' },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: `sleep ${seconds}` },
    cleanup: { deletePool: 'always' },
  };
}

/**
 * The intake's own requests among those that arrived while the POST ran: not the pollers' dequeues, and nothing after
 * the Durable start's message. The handler answers right after putting it, and from then on the job's first episode
 * and its activities (the same app process: a `Jobs get` of the first activity was seen here on a loaded machine)
 * may run before the 202 leaves, so what follows the start belongs to the job, not to the intake.
 */
export function intakeRequests(window: readonly Call[]): Call[] {
  const start = window.findIndex((c) => c.service === 'queue' && c.component === 'durable' && c.operation === 'put-message');
  return window.filter((c, i) => c.component !== 'poller' && c.component !== 'node' && (start < 0 || i <= start));
}

export interface JobCalls {
  id: string;
  state: string;
  /** The intake's requests (intakeRequests); `intakeWindow`: everything that arrived while the POST ran. */
  intake: Call[];
  intakeWindow: Call[];
  /** Every call from the submission to a quiet moment after the final state, with its stage. */
  calls: (Call & { stage: Stage })[];
  /** The MPI task's polls (GET of the task while Running): how many, and the calls from one to the next (first and last gaps left out). */
  polls: number;
  pollGaps: Call[][];
  /** Rows of the job's orchestration(s) in the History table, and its Instances rows. */
  historyRows: number;
  /** The History rows' event types per instance (the job's and its sub-orchestrations', the sentinel rows aside). */
  historyByInstance: Record<string, string[]>;
  /** The job's durable timers that fired (every wait between two polls is one). */
  timersFired: number;
  instanceRows: number;
  /** The host's function executions from the submission to the quiet moment after the final state (HTTP, queue, timer, episodes, activities). */
  executions: Execution[];
  /**
   * CPU-seconds of this process (user + system, process.cpuUsage) over the same window: the Functions host, the Durable
   * engine and the in-process Batch emulator's server (not Azurite, a child process, nor the nodes' processes). An
   * upper bound of the host's own; meaningful only with one job at a time.
   */
  cpuSeconds: number;
}

/** One observation of the MPI task (mpiTaskObserve: a GET of the task). */
export function isMpiPoll(c: Call): boolean {
  return c.service === 'batch' && c.operation === 'GET' && c.resource === '/jobs/{}/tasks/{}';
}

/** The steady state of a poll: the most frequent request list between two polls (ties: the shorter), as text. */
export function steadyPoll(gaps: readonly Call[][]): string[] {
  const seen = new Map<string, number>();
  for (const g of gaps) {
    const key = g
      .filter((c) => c.component !== 'poller' && c.component !== 'node')
      .map((c) => `${c.service} ${c.resource} ${c.operation}`)
      .join('\n');
    seen.set(key, (seen.get(key) ?? 0) + 1);
  }
  const best = [...seen].sort((a, b) => b[1] - a[1] || a[0].length - b[0].length)[0];
  return best ? best[0].split('\n') : [];
}

interface Transition {
  state: string;
  at: number;
}

function transitions(stack: Stack, id: string): Transition[] {
  return stack.webhooks
    .deliveries()
    .map((d) => d.event?.data as { jobId?: string; state?: string; time?: string } | undefined)
    .filter((d): d is { jobId: string; state: string; time: string } => d?.jobId === id && typeof d.state === 'string')
    .map((d) => ({ state: d.state, at: Date.parse(d.time) }))
    .sort((a, b) => a.at - b.at);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until `quietMs` pass without a request other than the pollers' dequeues (at most `maxMs`): the last job's
 * late work (its final event's delivery off the `job-events` queue, the pool's deletion) then lands in its own
 * window, not in the next job's intake.
 */
export async function settle(counter: CallCounter, quietMs: number, maxMs = 60_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  for (;;) {
    await counter.mark();
    const from = counter.position();
    await sleep(quietMs);
    await counter.mark();
    if (!counter.since(from).some((c) => c.component !== 'poller')) return;
    if (Date.now() > deadline) return;
  }
}

/** Submits `spec` and waits for its final state (from the webhook deliveries: the watch itself makes no request). */
export async function runCounted(stack: Stack, counter: CallCounter, spec: Record<string, unknown>, timeoutMs = 900_000, quietMs = 3000): Promise<JobCalls> {
  const id = String(spec.id);
  await settle(counter, Math.min(quietMs, 2000));
  const from = counter.position();
  const fromExecution = counter.executionPosition();
  const cpuFrom = process.cpuUsage();
  const { calls: intakeWindow } = await counter.during(() => submitSpec(stack, JSON.stringify(spec)));
  const intake = intakeRequests(intakeWindow);
  const deadline = Date.now() + timeoutMs;
  let final: Transition | undefined;
  while (!final) {
    if (Date.now() > deadline) throw new Error(`job ${id} not final within ${timeoutMs} ms`);
    await sleep(250);
    final = transitions(stack, id).find((t) => ['Succeeded', 'Failed', 'Cancelled'].includes(t.state));
  }
  // The orchestration's last episode, the final event's delivery and the pool's deletion follow the final transition.
  await sleep(quietMs);
  await settle(counter, Math.min(quietMs, 2000));
  const cpu = process.cpuUsage(cpuFrom);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  const executions = counter.executionsSince(fromExecution);
  const all = counter.since(from);
  const ts = transitions(stack, id);
  const intakeSet = new Set(intake);
  const stageAt = (at: number): Stage => {
    let s: Stage = 'intake';
    for (const t of ts) if (t.at <= at) s = STAGE_OF[t.state] ?? s;
    return s;
  };
  const calls = all.map((c) => ({ ...c, stage: intakeSet.has(c) ? 'intake' : stageAt(c.at) }) as Call & { stage: Stage });
  const polls = calls.map((c, i) => [c, i] as const).filter(([c]) => c.stage === 'mpi' && isMpiPoll(c));
  const pollGaps: Call[][] = [];
  for (let k = 1; k + 2 < polls.length; k++) pollGaps.push(calls.slice(polls[k][1], polls[k + 1][1]));

  const byInstance: Record<string, string[]> = {};
  const rows = async (table: string, filter: string) => {
    const types: string[] = [];
    for await (const e of stack.operator
      .table(table)
      .listEntities<{ EventType?: string }>({ queryOptions: { filter, select: ['PartitionKey', 'RowKey', 'EventType'] } })) {
      types.push(e.EventType ?? '');
      if (table === 'HpcMpiHubHistory' && !String(e.rowKey).startsWith('~')) (byInstance[String(e.partitionKey)] ??= []).push(String(e.EventType ?? ''));
    }
    return types;
  };
  // Sub-orchestrations' ids start with the job's (instanceIds.ts); the bounds of a prefix range.
  const range = `PartitionKey ge '${id}' and PartitionKey lt '${id}~'`;
  const history = await rows('HpcMpiHubHistory', range);
  const historyRows = history.length;
  const timersFired = history.filter((t) => t === 'TimerFired').length;
  const instanceRows = (await rows('HpcMpiHubInstances', range)).length;
  await counter.mark();
  return {
    id,
    state: final.state,
    intake,
    intakeWindow,
    calls,
    polls: polls.length,
    pollGaps,
    historyRows,
    historyByInstance: byInstance,
    timersFired,
    instanceRows,
    executions,
    cpuSeconds,
  };
}

/**
 * The documented bound of History rows per job (docs/call-budgets.md): a fixed part for the pipeline's steps, a part
 * per node (the node-task windows' and the default logs' upload tasks' activity round trips), and per wait still in
 * the history (one durable timer between two polls) the timer's and the next poll's rows: TimerCreated, TimerFired,
 * TaskScheduled, TaskCompleted and two episodes' OrchestratorStarted/Completed. The MPI wait runs in a
 * sub-orchestration that continues as new every MPI_WAIT_POLLS_PER_GENERATION polls and keeps only its last
 * execution's rows, so its timers in the history are at most that many per wait, whatever the run time. Counted with
 * full logs on (the default, 2026-11-27): beyond the waits, 142 rows at 2 nodes and 160 at 8.
 */
export const HISTORY_ROWS_FIXED = 150;
export const HISTORY_ROWS_PER_NODE = 3;
export const HISTORY_ROWS_PER_WAIT = 8;
export function historyRowBound(timersFired: number, nodes: number): number {
  return HISTORY_ROWS_FIXED + HISTORY_ROWS_PER_NODE * nodes + HISTORY_ROWS_PER_WAIT * timersFired;
}

/** The History rows of a job's MPI waits (its sub-orchestrations: instance ids `<job>:<seq>`) and how many waits. */
export function mpiWaitRows(job: Pick<JobCalls, 'id' | 'historyByInstance'>): { waits: number; rows: number } {
  const waits = Object.entries(job.historyByInstance).filter(([id]) => id !== job.id);
  return { waits: waits.length, rows: waits.reduce((n, [, types]) => n + types.length, 0) };
}

/**
 * Storage requests by the price class they are billed in (the pollers' dequeues apart: not a job's). The nodes' own
 * transfers (component `node`: the default logs' uploads) are kept: the priced table (shared/core/ops/countedBudget.ts)
 * bills the job's logs as blob writes.
 */
export function storageTransactions(calls: readonly Call[]): StorageTransactions {
  const out: StorageTransactions = { table: 0, queue: 0, blobWrite: 0, blobRead: 0 };
  for (const c of calls) {
    if (c.component === 'poller') continue;
    if (c.service === 'table') out.table++;
    else if (c.service === 'queue') out.queue++;
    else if (c.service === 'blob') {
      if (['read', 'properties', 'list-blobs', 'list-containers'].includes(c.operation) || c.operation.startsWith('container-get')) out.blobRead++;
      else out.blobWrite++;
    }
  }
  return out;
}
