import type { OrchestrationContext, Task } from 'durable-functions';
import type { BatchTaskRef, MpiTaskObservation, PollSettings } from '../../shared/core/contract';
import { budgetGuard, type BudgetLimits, type NodeUsage, type PriceQuote } from '../../shared/core/ops/cost';
import { Orchestration, PipelineRun } from '../runtime/pipelineRun';

/** The sub-orchestration that waits for the MPI task (registered beside mpiJob). */
export const MPI_WAIT_ORCHESTRATION = 'mpiWait';

/**
 * What the wait needs, all of it plain JSON: the parent's deadline and budget travel as data (the child cannot see the
 * parent's closures), and the polls so far keep the backoff where the parent's loop would have it.
 */
export interface MpiWaitInput {
  jobId: string;
  ref: BatchTaskRef;
  poll: PollSettings;
  /** The observation the parent last acted on: the wait ends when Batch says something else. */
  seen: MpiTaskObservation;
  /** Polls made so far (the parent's first look is 0): the backoff's position. */
  polls: number;
  /** Polls per execution before the wait continues as new (its history is reset then). */
  pollsPerGeneration: number;
  /** Executions of this wait so far (0 for the first), for the status and the logs. */
  generation: number;
  deadline?: { at: string; limit: string };
  budget?: { limits: BudgetLimits; price: PriceQuote; usage: NodeUsage };
  /** The Batch account admission placed the job on (absent: the home account): the wait's polls go there too. */
  batchAccount?: string;
}

/**
 * Why the wait ended: Batch's answer changed (state, start time, requeues), or a check the parent makes at every wait
 * (wall-clock limit, budget) says stop: the parent runs that check itself and fails or cancels the job the usual way.
 */
export interface MpiWaitResult {
  ended: 'changed' | 'checkpoint';
  obs: MpiTaskObservation;
  polls: number;
}

/**
 * Waits for the MPI task's state to change, polling Batch on durable timers with the parent's backoff. Every
 * `pollsPerGeneration` polls it continues as new with the polls so far: the Durable extension then keeps only the new
 * execution's history (same instance id, the parent told only when the last execution returns), so the rows a long
 * run writes are bounded by the generation size, not by the run time (the eternal-orchestration pattern of the
 * Durable docs). The cancel event goes to the parent, which races this wait with it; the wait itself never ends the
 * task. Deterministic: time is the replayed clock, delays come from the input.
 */
export function* mpiWaitOrchestrator(context: OrchestrationContext): Orchestration<MpiWaitResult | undefined> {
  const input = context.df.getInput<MpiWaitInput>();
  const run = new PipelineRun(context, input.jobId, input.poll, input.deadline);
  run.placeOn(input.batchAccount);
  if (input.budget) {
    run.guardBudget(budgetGuard(input.budget.limits, input.budget.price));
    if (input.budget.usage.allocatedAt !== undefined) run.recordUsage(input.budget.usage.nodes, input.budget.usage.allocatedAt);
  }
  let polls = input.polls;
  context.df.setCustomStatus({ generation: input.generation, polls });
  for (let i = 0; i < input.pollsPerGeneration; i++) {
    if (stopsHere(run)) return { ended: 'checkpoint', obs: input.seen, polls };
    yield* run.pause(run.runningPollDelayMs(polls));
    const obs = yield* run.call('mpiTaskObserve', input.ref);
    polls++;
    if (changed(input.seen, obs)) return { ended: 'changed', obs, polls };
  }
  context.df.continueAsNew({ ...input, polls, generation: input.generation + 1 } satisfies MpiWaitInput);
  return undefined;
}

/** The parent's per-wait checks (deadline, budget), answered without throwing: the parent throws them itself. */
function stopsHere(run: PipelineRun): boolean {
  try {
    run.checkpoint('Running');
    return false;
  } catch {
    return true;
  }
}

/** What the parent acts on: the state (and when it started running), and a requeue by Batch. */
export function changed(seen: MpiTaskObservation, now: MpiTaskObservation): boolean {
  return seen.state !== now.state || seen.startTime !== now.startTime || (seen.requeueCount ?? 0) !== (now.requeueCount ?? 0);
}

/** Starts the wait as a sub-orchestration (its instance id is Durable's default: the parent's id and the call's sequence number). */
export function startMpiWait(ctx: OrchestrationContext, input: MpiWaitInput): Task {
  return ctx.df.callSubOrchestrator(MPI_WAIT_ORCHESTRATION, input);
}
