/**
 * Drives the engine's pure episode functions (selectBatch / applyOutcome) with the REAL durable-functions
 * orchestrator executor, in memory: activities are plain functions, timers fire on a simulated clock,
 * and answers can be delivered in any order and batch size. No I/O: the unit tests of the id
 * allocation and of batching use it. (The executor is the library's own, via its exported testing
 * helper createOrchestrator, which is exactly the handler df.app.orchestration registers.)
 */
import * as df from 'durable-functions';
import type { OrchestrationHandler } from 'durable-functions';
import { applyOutcome, applySuspend, applyTerminate, selectBatch, type Outcome } from '../../../local/durable/episode';
import { events, type HistoryEvent } from '../../../local/durable/history';
import { failureOutcome, MAXIMUM_SHORT_TIMER_DURATION } from '../../../local/durable/orchestrations';
import type { OrchestratorStateJson } from '../../../local/durable/actions';
import { isTerminal, type ControlMessage, type InstanceState } from '../../../local/durable/state';

export type Activity = (input: unknown, attempt: number) => unknown;

export interface SimOptions {
  /** Picks which pending message goes next (index into the pending list); default FIFO. */
  pick?: (pendingCount: number) => number;
  /** How many pending messages to offer per episode; default all. */
  batch?: (pendingCount: number) => number;
  maxEpisodes?: number;
  /** How far the clock moves per episode (default 1 h, so every timer created so far is due). */
  clockStepMs?: number;
  /** External events to raise once the given number of episodes has run. */
  raise?: { afterEpisode: number; name: string; input?: unknown }[];
  /**
   * External events to raise once, right after the first run of `activity` whose input `when` accepts (default:
   * any): the event is queued behind that activity's answer, as a user reacting to what the activity recorded.
   */
  raiseAfterActivity?: { activity: string; when?: (input: unknown) => boolean; name: string; input?: unknown }[];
  /** Sub-orchestrations the orchestrator may call, by name: they run in the same simulation, on the same clock. */
  orchestrators?: Record<string, OrchestrationHandler>;
}

export interface SimResult {
  state: InstanceState;
  history: HistoryEvent[];
  episodes: number;
  output: unknown;
  /** The sub-orchestrations, by instance id: their last state and the history of their current execution. */
  children: Record<string, { state: InstanceState; history: HistoryEvent[]; executions: number }>;
}

// An untyped deep import: the library's own testing helper, which wraps the handler the way df.app.orchestration does.
const { createOrchestrator } = require('durable-functions/lib/src/util/testingUtils') as {
  createOrchestrator: (fn: OrchestrationHandler) => (trigger: unknown, ctx: unknown) => Promise<unknown>;
};

let msgSeq = 0;

const ROOT = 'sim';

export async function simulate(fn: OrchestrationHandler, input: unknown, activities: Record<string, Activity>, opts: SimOptions = {}): Promise<SimResult> {
  const handlers = new Map<string, (trigger: unknown, ctx: unknown) => Promise<unknown>>([[ROOT, createOrchestrator(fn)]]);
  for (const [name, h] of Object.entries(opts.orchestrators ?? {})) handlers.set(name, createOrchestrator(h));
  const attempts = new Map<string, number>();
  let clock = Date.parse('2030-01-01T00:00:00Z');
  const pending: ControlMessage[] = [
    {
      id: 'start',
      instanceId: ROOT,
      executionId: 'e1',
      event: events.executionStarted(new Date(clock), 'Sim', input === undefined ? undefined : JSON.stringify(input)),
      sentAt: new Date(clock).toISOString(),
    },
  ];
  /** Every instance: the root ('sim') and the sub-orchestrations it started, each with its orchestrator's name. */
  const instances = new Map<string, { name: string; state?: InstanceState; history: HistoryEvent[]; executions: number }>([
    [ROOT, { name: ROOT, history: [], executions: 1 }],
  ]);
  const root = instances.get(ROOT)!;
  let episodes = 0;
  const maxEpisodes = opts.maxEpisodes ?? 2000;
  const afterActivity = [...(opts.raiseAfterActivity ?? [])];
  while (!root.state || !isTerminal(root.state.status)) {
    if (++episodes > maxEpisodes)
      throw new Error(`simulation did not finish in ${maxEpisodes} episodes; pending ${JSON.stringify(pending.map((m) => m.event))}`);
    for (const r of opts.raise ?? []) {
      if (r.afterEpisode === episodes - 1) {
        const at = new Date(clock);
        pending.push({
          id: `m${msgSeq++}`,
          instanceId: ROOT,
          event: events.eventRaised(at, r.name, r.input === undefined ? undefined : JSON.stringify(r.input)),
          sentAt: at.toISOString(),
        });
      }
    }
    if (pending.length === 0) throw new Error(`simulation stalled: nothing pending; state ${JSON.stringify(root.state)}`);
    // Choose the offered messages (order and batch size under test control), all for one instance: the first chosen's.
    const offered: ControlMessage[] = [];
    const first = pending[opts.pick ? opts.pick(pending.length) % pending.length : 0];
    const inst = instances.get(first.instanceId)!;
    const pool = pending.filter((m) => m.instanceId === first.instanceId);
    const n = Math.max(1, Math.min(pool.length, opts.batch ? opts.batch(pool.length) : pool.length));
    offered.push(pool.splice(pool.indexOf(first), 1)[0]);
    for (let i = 1; i < n; i++) offered.push(pool.splice(opts.pick ? opts.pick(pool.length) % pool.length : 0, 1)[0]);
    clock += opts.clockStepMs ?? 3_600_000;
    const now = new Date(clock);
    const sel = selectBatch(inst.state, offered, now);
    const gone = new Set([...sel.consumed, ...sel.dropped.map((d) => d.id)]);
    for (let i = pending.length - 1; i >= 0; i--) if (gone.has(pending[i].id)) pending.splice(i, 1);
    if (!sel.state) continue;
    let result;
    let prefix: HistoryEvent[] = [];
    if (sel.control === 'terminate') result = applyTerminate(sel.state, sel.controlReason, now);
    else if (sel.control === 'suspend') result = applySuspend(sel.state, sel.controlReason, now);
    else if (sel.deliver.length > 0) {
      prefix = [events.orchestratorStarted(now), ...sel.deliver];
      const base = sel.newExecution ? [] : inst.history;
      const handler = handlers.get(inst.name);
      if (!handler) throw new Error(`the simulation has no orchestrator '${inst.name}'`);
      const outcome = await invoke(handler, sel.state, base, prefix);
      result = applyOutcome(sel.state, sel.deliver, outcome, now);
    } else continue;
    const appended = [...prefix, ...result.appended];
    const sameExecution = result.state.executionId === sel.state.executionId;
    // A new execution (continue-as-new) starts from an empty history, as the extension keeps only the current one.
    inst.history = sameExecution ? (sel.newExecution ? [] : inst.history).concat(appended) : [];
    if (!sameExecution) inst.executions += 1;
    result.state.historyLength = inst.history.length;
    inst.state = result.state;
    for (const a of result.outbox.activities) {
      const key = `${a.name}:${a.input}`;
      const attempt = (attempts.get(key) ?? 0) + 1;
      attempts.set(key, attempt);
      const impl = activities[a.name];
      const activityInput: unknown = a.input === undefined ? undefined : JSON.parse(a.input);
      let event: HistoryEvent;
      try {
        if (!impl) throw new Error(`no activity ${a.name}`);
        const v = await impl(activityInput, attempt);
        event = events.taskCompleted(now, a.taskId, JSON.stringify(v ?? null));
      } catch (err) {
        event = events.taskFailed(now, a.taskId, `Activity function '${a.name}' failed: ${(err as Error).message}`, (err as Error).stack ?? '');
      }
      pending.push({ id: `m${msgSeq++}`, instanceId: a.instanceId, executionId: a.executionId, event, sentAt: now.toISOString() });
      const trigger = afterActivity.findIndex((r) => r.activity === a.name && (!r.when || r.when(activityInput)));
      if (trigger >= 0) {
        const [r] = afterActivity.splice(trigger, 1);
        const raised = events.eventRaised(now, r.name, r.input === undefined ? undefined : JSON.stringify(r.input));
        pending.push({ id: `m${msgSeq++}`, instanceId: ROOT, event: raised, sentAt: now.toISOString() });
      }
    }
    for (const t of result.outbox.timers) {
      pending.push({
        id: `m${msgSeq++}`,
        instanceId: t.instanceId,
        executionId: t.executionId,
        event: events.timerFired(new Date(t.fireAt), t.timerId, t.fireAt),
        sentAt: now.toISOString(),
      });
    }
    for (const m of result.outbox.messages) pending.push(m);
    for (const c of result.outbox.children) {
      // As the engine's startChild: a new instance, its start message naming the parent.
      if (!instances.has(c.instanceId)) instances.set(c.instanceId, { name: c.name, history: [], executions: 1 });
      const startedAt = now.toISOString();
      pending.push({
        id: `m${msgSeq++}`,
        instanceId: c.instanceId,
        executionId: `${c.instanceId}|e1`,
        event: events.executionStarted(now, c.name, c.input, c.parent.instanceId),
        parent: c.parent,
        sentAt: startedAt,
      });
    }
  }
  const children: SimResult['children'] = {};
  for (const [id, i] of instances) if (id !== ROOT && i.state) children[id] = { state: i.state, history: i.history, executions: i.executions };
  const state = root.state;
  return { state, history: root.history, episodes, output: state.output === undefined ? undefined : JSON.parse(state.output), children };
}

async function invoke(
  handler: (t: unknown, c: unknown) => Promise<unknown>,
  state: InstanceState,
  committed: HistoryEvent[],
  fresh: HistoryEvent[],
): Promise<Outcome> {
  const payload = {
    history: committed.map((e) => ({ ...e, IsPlayed: true })).concat(fresh),
    input: state.input !== undefined ? JSON.parse(state.input) : undefined,
    instanceId: state.instanceId,
    isReplaying: committed.length > 0,
    parentInstanceId: state.parent?.instanceId ?? null,
    upperSchemaVersion: 1,
    upperSchemaVersionNew: 2,
    longRunningTimerIntervalDuration: '3.00:00:00',
    maximumShortTimerDuration: MAXIMUM_SHORT_TIMER_DURATION,
    defaultHttpAsyncRequestSleepTimeMillseconds: 30000,
  };
  try {
    // The host passes the trigger as a JSON string that the library parses: do the same round trip.
    const result = await handler(JSON.parse(JSON.stringify(payload)), new df.DummyOrchestrationContext());
    return { kind: 'state', state: result as OrchestratorStateJson };
  } catch (err) {
    return failureOutcome(err as Error);
  }
}
