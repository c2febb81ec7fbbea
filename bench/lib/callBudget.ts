/**
 * Running one job on a local stack with a CallCounter (local/testing/callCounter.ts) and splitting the requests it
 * caused by stage: the intake (the POST, between two barriers: exact), then the job's states as its events give them
 * (Provisioning → provision, PullingImages → pull, StagingData → stage, Running → mpi, CleaningUp and the tail after
 * the final state → cleanup). Shared by bench/calls.ts and tests/calls/callBudgets.test.ts.
 */
import type { Stack } from '../../local/stack';
import type { Call, CallCounter } from '../../local/testing/callCounter';
import { submitSpec } from '../../local/jobRunner';

export const STAGES = ['intake', 'provision', 'pull', 'stage', 'mpi', 'cleanup'] as const;
export type Stage = (typeof STAGES)[number];

const STAGE_OF: Record<string, Stage> = {
  Submitted: 'intake', Queued: 'intake', Provisioning: 'provision', PullingImages: 'pull', StagingData: 'stage', Running: 'mpi',
  CleaningUp: 'cleanup', Succeeded: 'cleanup', Failed: 'cleanup', Cancelled: 'cleanup',
};

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

export interface JobCalls {
  id: string;
  state: string;
  intake: Call[];
  /** Every call from the submission to a quiet moment after the final state, with its stage. */
  calls: (Call & { stage: Stage })[];
  /** The MPI task's polls (GET of the task) and the calls between consecutive ones (first and last gaps left out). */
  pollGaps: Call[][];
  /** Rows of the job's orchestration(s) in the History table, and its Instances rows. */
  historyRows: number;
  instanceRows: number;
}

interface Transition { state: string; at: number }

function transitions(stack: Stack, id: string): Transition[] {
  return stack.webhooks
    .deliveries()
    .map((d) => d.event?.data as { jobId?: string; state?: string; time?: string } | undefined)
    .filter((d): d is { jobId: string; state: string; time: string } => d?.jobId === id && typeof d.state === 'string')
    .map((d) => ({ state: d.state, at: Date.parse(d.time) }))
    .sort((a, b) => a.at - b.at);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Submits `spec` and waits for its final state (from the webhook deliveries: the watch itself makes no request). */
export async function runCounted(stack: Stack, counter: CallCounter, spec: Record<string, unknown>, timeoutMs = 900_000, quietMs = 3000): Promise<JobCalls> {
  const id = String(spec.id);
  await counter.mark();
  const from = counter.position();
  const { calls: intake } = await counter.during(() => submitSpec(stack, JSON.stringify(spec)));
  const deadline = Date.now() + timeoutMs;
  let final: Transition | undefined;
  while (!final) {
    if (Date.now() > deadline) throw new Error(`job ${id} not final within ${timeoutMs} ms`);
    await sleep(250);
    final = transitions(stack, id).find((t) => ['Succeeded', 'Failed', 'Cancelled'].includes(t.state));
  }
  // The orchestration's last episode and the pool's deletion follow the final transition.
  await sleep(quietMs);
  await counter.mark();
  const all = counter.since(from);
  const ts = transitions(stack, id);
  const intakeSet = new Set(intake);
  const stageAt = (at: number): Stage => {
    let s: Stage = 'intake';
    for (const t of ts) if (t.at <= at) s = STAGE_OF[t.state] ?? s;
    return s;
  };
  const calls = all.map((c) => ({ ...c, stage: intakeSet.has(c) ? 'intake' : stageAt(c.at) }) as Call & { stage: Stage });
  const polls = calls.map((c, i) => [c, i] as const).filter(([c]) => c.service === 'batch' && c.operation === 'GET' && c.resource === '/jobs/{}/tasks/{}');
  const pollGaps: Call[][] = [];
  for (let k = 1; k + 2 < polls.length; k++) pollGaps.push(calls.slice(polls[k][1], polls[k + 1][1]));

  const rows = async (table: string, filter: string) => {
    let n = 0;
    for await (const _ of stack.operator.table(table).listEntities({ queryOptions: { filter, select: ['PartitionKey'] } })) n++;
    return n;
  };
  // Sub-orchestrations' ids start with the job's (instanceIds.ts); the bounds of a prefix range.
  const range = `PartitionKey ge '${id}' and PartitionKey lt '${id}~'`;
  const historyRows = await rows('HpcMpiHubHistory', range);
  const instanceRows = await rows('HpcMpiHubInstances', range);
  await counter.mark();
  return { id, state: final.state, intake, calls, pollGaps, historyRows, instanceRows };
}

/** The documented bound of History rows per job (docs/call-budgets.md); set from the measured figures. */
export function historyRowBound(_nodes: number): number {
  return 1000;
}
