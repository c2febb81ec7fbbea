/**
 * One orchestration episode, as pure functions over the instance state:
 *  - selectBatch: which queued messages this episode consumes, holds back or drops;
 *  - applyOutcome: given what the orchestrator returned, the history to append, the new state and
 *    the work to send out.
 * No I/O here: the dispatcher loads, invokes, commits and sends.
 *
 * Sequence ids. The library numbers tasks as it tracks them (TaskOrchestrationExecutor.trackOpenTask):
 * new actions depth first, plus "hidden" ids its RetryableTask takes when an attempt fails (the retry
 * timer) and when that timer fires (the next attempt). Hidden ids are taken while the failure/timer
 * event is processed, after the ids of the actions user code yielded for the events before it. So an
 * episode delivers at most one retry-related event and always as its last event: then "new actions
 * first, hidden id last" is exactly the library's order.
 */
import {
  ActionType,
  actionList,
  atomsOf,
  atomsOfSignature,
  freshAtomsPerAction,
  describeAtom,
  isSupported,
  actionTypeName,
  processedInputToJson,
  rawInputToJson,
  signature,
  type OrchestratorAction,
  type OrchestratorStateJson,
} from './actions';
import { EventType, completedTaskId, events, isFailure, type HistoryEvent } from './history';
import { emptyOutbox, isTerminal, newInstanceState, type ControlMessage, type InstanceState, type Outbox, type RetryOptionsJson } from './state';

/** Messages for an instance that has not started yet are kept this long, then dropped. */
export const ORPHAN_MESSAGE_TTL_MS = 60_000;
/** A timer message that comes back earlier than this before its fire time is sent again. */
const EARLY_TIMER_TOLERANCE_MS = 250;
const MAX_CONSUMED_IDS = 500;

export interface Selection {
  /** The state to run the episode on (a fresh one when the messages start a new execution). */
  state: InstanceState | undefined;
  /** True when `state` is a new execution: committed history must be ignored (and replaced). */
  newExecution: boolean;
  /** Events for the orchestrator, in delivery order. */
  deliver: HistoryEvent[];
  /** Events appended without running the orchestrator (suspend) or before the delivered ones (resume). */
  control: 'terminate' | 'suspend' | 'resume' | 'rewind' | undefined;
  controlReason?: string;
  /** Message ids whose effect this episode records (delete after commit). */
  consumed: string[];
  /** Message ids to keep for a later episode. */
  held: string[];
  /** Message ids dropped as duplicates / stale (delete now). */
  dropped: { id: string; why: string }[];
  /** Timer messages that came back too early: send again with the remaining delay. */
  requeue: { msg: ControlMessage; delayMs: number }[];
  /** State changes that need committing even without running the orchestrator (inbox while suspended). */
  stateChanged: boolean;
}

function retryRelated(state: InstanceState, e: HistoryEvent): boolean {
  const id = completedTaskId(e);
  if (id === undefined) return false;
  const g = state.retries[String(id)];
  if (!g) return false;
  if (g.waitingOnTimer) return e.EventType === EventType.TimerFired;
  return isFailure(e);
}

function kindMatches(kind: string, e: HistoryEvent): boolean {
  switch (e.EventType) {
    case EventType.TaskCompleted:
    case EventType.TaskFailed:
      return kind === 'activity';
    case EventType.SubOrchestrationInstanceCompleted:
    case EventType.SubOrchestrationInstanceFailed:
      return kind === 'suborch';
    case EventType.TimerFired:
      return kind === 'timer';
    default:
      return false;
  }
}

export function selectBatch(current: InstanceState | undefined, msgs: ControlMessage[], now: Date): Selection {
  const sel: Selection = {
    state: current,
    newExecution: false,
    deliver: [],
    control: undefined,
    consumed: [],
    held: [],
    dropped: [],
    requeue: [],
    stateChanged: false,
  };
  let state = current ? structuredClone(current) : undefined;
  let cut = false; // once set, every remaining message is held for the next episode
  const deliveredIds = new Set<number>();
  const drop = (m: ControlMessage, why: string): void => {
    sel.dropped.push({ id: m.id, why });
  };
  /** A start or control message opens its own episode: when this one already has content, hold it and all after it. */
  const holdIfBusy = (m: ControlMessage): boolean => {
    if (sel.deliver.length === 0 && !sel.control) return false;
    sel.held.push(m.id);
    cut = true;
    return true;
  };
  const takeControl = (m: ControlMessage, control: NonNullable<Selection['control']>, reason: string | undefined): void => {
    sel.control = control;
    sel.controlReason = reason;
    sel.consumed.push(m.id);
  };

  for (const m of msgs) {
    if (cut) {
      sel.held.push(m.id);
      continue;
    }
    const e = m.event;
    if (e.EventType === EventType.ExecutionStarted) {
      if (!m.executionId) {
        drop(m, 'ExecutionStarted without executionId');
        continue;
      }
      const fresh = !state || (isTerminal(state.status) && state.executionId !== m.executionId);
      const pendingStart = state && state.executionId === m.executionId && state.historyLength === 0 && !sel.deliver.length;
      if (fresh || pendingStart) {
        if (holdIfBusy(m)) continue;
        if (fresh) {
          state = newInstanceState({
            instanceId: m.instanceId,
            executionId: m.executionId,
            name: e.Name ?? '',
            input: e.Input,
            parent: m.parent,
            createdTime: e.Timestamp,
          });
          sel.newExecution = true;
        }
        state!.status = 'Running';
        sel.deliver.push(e);
        sel.consumed.push(m.id);
        continue;
      }
      drop(m, state!.executionId === m.executionId ? 'duplicate start' : `instance already running execution ${state!.executionId}`);
      continue;
    }
    if (!state) {
      // An event for an instance whose start message has not been seen yet: keep it a while.
      if (now.getTime() - Date.parse(m.sentAt) > ORPHAN_MESSAGE_TTL_MS) drop(m, 'instance does not exist');
      else sel.held.push(m.id);
      continue;
    }
    if (e.EventType === EventType.GenericEvent) {
      // A rewind request: only a Failed instance takes it, in an episode of its own.
      if (state.status !== 'Failed') {
        drop(m, `rewind of an instance that is ${state.status}`);
        continue;
      }
      if (!holdIfBusy(m)) takeControl(m, 'rewind', e.Data);
      cut = true;
      continue;
    }
    if (isTerminal(state.status)) {
      drop(m, `instance is ${state.status}`);
      continue;
    }
    if (state.historyLength === 0 && sel.deliver.length === 0) {
      // Started (row written) but ExecutionStarted not processed yet: wait for it.
      sel.held.push(m.id);
      continue;
    }
    if (m.executionId && m.executionId !== state.executionId) {
      drop(m, `stale message for execution ${m.executionId}`);
      continue;
    }
    if (e.EventType === EventType.ExecutionTerminated) {
      if (!holdIfBusy(m)) takeControl(m, 'terminate', e.Input);
      cut = true;
      continue;
    }
    if (e.EventType === EventType.ExecutionSuspended) {
      if (state.suspended) {
        drop(m, 'already suspended');
        continue;
      }
      if (!holdIfBusy(m)) takeControl(m, 'suspend', e.Reason);
      cut = true;
      continue;
    }
    if (e.EventType === EventType.ExecutionResumed) {
      if (!state.suspended) {
        drop(m, 'not suspended');
        continue;
      }
      if (holdIfBusy(m)) continue;
      takeControl(m, 'resume', e.Reason);
      state.suspended = false;
      // Events parked while suspended go first, under the same one-retry-event-last rule.
      const parked = state.inbox;
      state.inbox = [];
      for (let i = 0; i < parked.length; i++) {
        if (cut) {
          state.inbox.push(parked[i]);
          continue;
        }
        sel.deliver.push(parked[i]);
        if (retryRelated(state, parked[i])) cut = true;
      }
      continue;
    }
    if (state.suspended) {
      if (e.EventType === EventType.EventRaised && state.consumedIds.includes(m.id)) {
        drop(m, 'duplicate event');
        continue;
      }
      state.inbox.push(e);
      if (e.EventType === EventType.EventRaised) rememberConsumed(state, m.id);
      sel.consumed.push(m.id);
      sel.stateChanged = true;
      continue;
    }
    if (e.EventType === EventType.EventRaised) {
      if (state.consumedIds.includes(m.id)) {
        drop(m, 'duplicate event');
        continue;
      }
      rememberConsumed(state, m.id);
      sel.deliver.push(e);
      sel.consumed.push(m.id);
      continue;
    }
    const id = completedTaskId(e);
    if (id === undefined) {
      drop(m, `unexpected event ${EventType[e.EventType]}`);
      continue;
    }
    const open = state.open[String(id)];
    if (!open || !kindMatches(open.kind, e) || deliveredIds.has(id)) {
      drop(m, `no open task #${id} for ${EventType[e.EventType]} (duplicate or stale)`);
      continue;
    }
    if (e.EventType === EventType.TimerFired && e.FireAt && Date.parse(e.FireAt) - now.getTime() > EARLY_TIMER_TOLERANCE_MS) {
      sel.requeue.push({ msg: m, delayMs: Date.parse(e.FireAt) - now.getTime() });
      continue;
    }
    deliveredIds.add(id);
    sel.deliver.push(e);
    sel.consumed.push(m.id);
    if (retryRelated(state, e)) cut = true;
  }
  sel.state = state;
  return sel;
}

function rememberConsumed(state: InstanceState, id: string): void {
  state.consumedIds.push(id);
  if (state.consumedIds.length > MAX_CONSUMED_IDS) state.consumedIds.splice(0, state.consumedIds.length - MAX_CONSUMED_IDS);
}

/** What invoking the orchestrator produced. */
export type Outcome =
  | { kind: 'state'; state: OrchestratorStateJson }
  /** The orchestrator threw (user error or an unparseable failure); `state` when the library embedded it. */
  | { kind: 'failed'; message: string; details?: string; state?: OrchestratorStateJson };

export interface EpisodeResult {
  state: InstanceState;
  /** Events to append after the ones the orchestrator was given. */
  appended: HistoryEvent[];
  outbox: Outbox;
  /** One entry per action the engine carried out, for logs. */
  actionsLog: { type: string; id?: number; name?: string }[];
  nonDeterminism?: string;
}

/** Retry delay after failure number `attemptNumber` (1-based), as the Durable extension computes it. */
export function retryDelayMs(o: RetryOptionsJson, attemptNumber: number): number {
  const coefficient = o.backoffCoefficient ?? 1;
  let delay = o.firstRetryIntervalInMilliseconds * Math.pow(coefficient, attemptNumber - 1);
  if (o.maxRetryIntervalInMilliseconds !== undefined && o.maxRetryIntervalInMilliseconds > 0) {
    delay = Math.min(delay, o.maxRetryIntervalInMilliseconds);
  }
  return Math.max(0, delay);
}

/** Instance id of a sub-orchestration the user did not name (the Durable extension's "{parent}:{seq}" form). */
export function childInstanceIdFor(parentInstanceId: string, taskId: number): string {
  return `${parentInstanceId}:${taskId.toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * The extension refuses a custom status over 16 KB of UTF-16 text (MessagePayloadDataConverter.Serialize: the size
 * in whole KB, rounded down, must not exceed 16), and the orchestration fails with this message.
 */
export function customStatusTooLarge(json: string): string | undefined {
  const kb = Math.floor((json.length * 2) / 1024);
  return kb > 16 ? `The UTF-16 size of the JSON-serialized payload must not exceed 16 KB. The current payload size is ${kb} KB.` : undefined;
}

/**
 * Turn the orchestrator's outcome into history, state and outbox. `delivered` is `sel.deliver` (the
 * events the orchestrator saw as new). `state` is the selection's state.
 */
export function applyOutcome(input: InstanceState, delivered: HistoryEvent[], outcome: Outcome, now: Date): EpisodeResult {
  const state = structuredClone(input);
  const appended: HistoryEvent[] = [];
  const outbox = emptyOutbox();
  const actionsLog: EpisodeResult['actionsLog'] = [];
  const at = now;
  state.episodes += 1;
  state.lastUpdatedTime = now.toISOString();

  // 1. Close the tasks the delivered events answer; remember the last retry-related event.
  let retryEvent: { e: HistoryEvent; id: number } | undefined;
  for (const e of delivered) {
    const id = completedTaskId(e);
    if (id === undefined) continue;
    const key = String(id);
    delete state.open[key];
    const g = state.retries[key];
    if (!g) continue;
    if (!g.waitingOnTimer && !isFailure(e)) delete state.retries[key];
    else retryEvent = { e, id };
  }

  const finish = (status: 'Completed' | 'Failed', output: string | undefined, failureText?: string): EpisodeResult => {
    state.status = status;
    state.output = output;
    state.open = {};
    state.retries = {};
    appended.push(events.orchestratorCompleted(at));
    appended.push(events.executionCompleted(at, status, output));
    notifyParent(state, outbox, now, failureText);
    return { state, appended, outbox, actionsLog };
  };

  if (outcome.kind === 'failed') {
    const status = outcome.state?.customStatus !== undefined ? JSON.stringify(outcome.state.customStatus) : undefined;
    if (status !== undefined && !customStatusTooLarge(status)) state.customStatus = status;
    const message = `Orchestrator function '${state.name}' failed: ${outcome.message}`;
    return finish('Failed', JSON.stringify(message), message);
  }

  const result = outcome.state;
  if (result.customStatus !== undefined) {
    const status = JSON.stringify(result.customStatus);
    const tooLarge = customStatusTooLarge(status);
    if (tooLarge) {
      const message = `Orchestrator function '${state.name}' failed: ${tooLarge}`;
      return finish('Failed', JSON.stringify(message), message);
    }
    state.customStatus = status;
  }
  const actions = actionList(result);

  // 2. Non-determinism: the replay must reproduce every action recorded before, in order.
  const nd = checkDeterminism(state, actions, result.isDone);
  if (nd) {
    const r = finish('Failed', JSON.stringify(nd), nd);
    r.nonDeterminism = nd;
    return r;
  }

  const known = state.actions.length;
  const fresh = actions.slice(known);
  const freshAtoms = freshAtomsPerAction(actions);
  const unsupported = fresh.flatMap(atomsOf).find((a) => !isSupported(a));
  if (unsupported) {
    const msg = `Orchestrator function '${state.name}' failed: action ${actionTypeName(unsupported.actionType)} is not supported by the local Durable engine (entities and durable HTTP are not implemented).`;
    return finish('Failed', JSON.stringify(msg), msg);
  }

  if (result.isDone) {
    const can = fresh.find((a) => a.actionType === ActionType.ContinueAsNew);
    if (can) return continueAsNew(state, appended, outbox, at, processedInputToJson(can.input));
    return finish('Completed', result.output === undefined ? undefined : JSON.stringify(result.output));
  }

  // 3. New actions take ids depth first, as trackOpenTask does.
  for (let i = known; i < actions.length; i++) {
    const record = { sig: signature(actions[i]), ids: [] as number[] };
    for (const atom of freshAtoms[i]) {
      const id = state.nextSeq++;
      record.ids.push(id);
      schedule(state, atom, id, appended, outbox, at);
      actionsLog.push({ type: actionTypeName(atom.actionType), id, name: atom.functionName });
    }
    state.actions.push(record);
  }

  // 4. Hidden ids of the retry machinery, after the new actions (see the file comment).
  if (retryEvent) {
    const g = state.retries[String(retryEvent.id)];
    delete state.retries[String(retryEvent.id)];
    const id = state.nextSeq++;
    if (!g.waitingOnTimer) {
      const fireAt = new Date(now.getTime() + retryDelayMs(g.options, g.attemptNumber));
      g.attemptNumber += 1;
      g.waitingOnTimer = true;
      state.retries[String(id)] = g;
      state.open[String(id)] = { kind: 'timer', fireAt: fireAt.toISOString() };
      appended.push(events.timerCreated(at, id, fireAt));
      outbox.timers.push({ instanceId: state.instanceId, executionId: state.executionId, timerId: id, fireAt: fireAt.toISOString() });
      actionsLog.push({ type: 'RetryTimer', id, name: g.name });
    } else if (g.attemptNumber > g.options.maxNumberOfAttempts) {
      // The library fails the task itself; the id was never taken. Undo.
      state.nextSeq -= 1;
    } else {
      g.waitingOnTimer = false;
      state.retries[String(id)] = g;
      scheduleAttempt(state, g.kind, g.name, g.input, g.childInstanceId, id, appended, outbox, at);
      actionsLog.push({ type: g.kind === 'activity' ? 'RetryActivity' : 'RetrySubOrchestrator', id, name: g.name });
    }
  }

  // 5. Timers the orchestrator no longer waits for (the losers of a Task.any) need not fire.
  dropCanceledTimers(state, actions, freshAtoms);

  state.status = 'Running';
  appended.push(events.orchestratorCompleted(at));
  return { state, appended, outbox, actionsLog };
}

function checkDeterminism(state: InstanceState, actions: OrchestratorAction[], isDone: boolean): string | undefined {
  const n = Math.min(state.actions.length, actions.length);
  for (let i = 0; i < n; i++) {
    const recorded = state.actions[i];
    const replayed = signature(actions[i]);
    if (recorded.sig === replayed) continue;
    const ra = atomsOfSignature(recorded.sig);
    const pa = atomsOfSignature(replayed);
    let j = 0;
    while (j < ra.length && j < pa.length && ra[j] === pa[j]) j++;
    const idIndex = ra.slice(0, j).filter((s) => !s.startsWith('WaitForExternalEvent')).length;
    const seq = recorded.ids[idIndex];
    const was = j < ra.length ? describeAtom(ra[j]) : 'nothing more';
    const now = j < pa.length ? describeAtom(pa[j]) : 'nothing';
    return (
      `Non-Deterministic workflow detected: a previous execution of orchestration '${state.name}' (instance '${state.instanceId}') ` +
      `scheduled ${was}${seq !== undefined && j < ra.length ? ` with sequence ID ${seq}` : ''} at action position ${i}, ` +
      `but the current replay scheduled ${now} there. Orchestrator code must be deterministic: ` +
      `was it changed while this instance was running, or does it read the clock, random numbers or the environment?`
    );
  }
  if (actions.length < state.actions.length && !isDone) {
    const missing = atomsOfSignature(state.actions[actions.length].sig)[0] ?? state.actions[actions.length].sig;
    return (
      `Non-Deterministic workflow detected: a previous execution of orchestration '${state.name}' (instance '${state.instanceId}') ` +
      `scheduled ${describeAtom(missing)} at action position ${actions.length}, but the current replay hasn't scheduled it. ` +
      `Orchestrator code must be deterministic: was it changed while this instance was running, or does it read the clock, random numbers or the environment?`
    );
  }
  return undefined;
}

function schedule(state: InstanceState, a: OrchestratorAction, id: number, appended: HistoryEvent[], outbox: Outbox, at: Date): void {
  switch (a.actionType) {
    case ActionType.CallActivity:
    case ActionType.CallActivityWithRetry: {
      const input = processedInputToJson(a.input);
      if (a.actionType === ActionType.CallActivityWithRetry && a.retryOptions) {
        state.retries[String(id)] = { kind: 'activity', name: a.functionName!, input, options: a.retryOptions, attemptNumber: 1, waitingOnTimer: false };
      }
      scheduleAttempt(state, 'activity', a.functionName!, input, undefined, id, appended, outbox, at);
      return;
    }
    case ActionType.CallSubOrchestrator:
    case ActionType.CallSubOrchestratorWithRetry: {
      const input = rawInputToJson(a.input);
      if (a.actionType === ActionType.CallSubOrchestratorWithRetry && a.retryOptions) {
        state.retries[String(id)] = {
          kind: 'suborch',
          name: a.functionName!,
          input,
          childInstanceId: a.instanceId || undefined,
          options: a.retryOptions,
          attemptNumber: 1,
          waitingOnTimer: false,
        };
      }
      scheduleAttempt(state, 'suborch', a.functionName!, input, a.instanceId || undefined, id, appended, outbox, at);
      return;
    }
    case ActionType.CreateTimer: {
      const fireAt = new Date(a.fireAt ?? at.toISOString());
      appended.push(events.timerCreated(at, id, fireAt));
      if (!a.isCanceled) {
        state.open[String(id)] = { kind: 'timer', fireAt: fireAt.toISOString() };
        outbox.timers.push({ instanceId: state.instanceId, executionId: state.executionId, timerId: id, fireAt: fireAt.toISOString() });
      }
      return;
    }
    default:
      throw new Error(`schedule(): action ${actionTypeName(a.actionType)} takes no id`);
  }
}

function scheduleAttempt(
  state: InstanceState,
  kind: 'activity' | 'suborch',
  name: string,
  input: string | undefined,
  childInstanceId: string | undefined,
  id: number,
  appended: HistoryEvent[],
  outbox: Outbox,
  at: Date,
): void {
  if (kind === 'activity') {
    appended.push(events.taskScheduled(at, id, name, input));
    state.open[String(id)] = { kind: 'activity', name };
    outbox.activities.push({ instanceId: state.instanceId, executionId: state.executionId, taskId: id, name, input });
    return;
  }
  const child = childInstanceId ?? childInstanceIdFor(state.instanceId, id);
  appended.push(events.subOrchestrationCreated(at, id, name, child, input));
  state.open[String(id)] = { kind: 'suborch', name, childInstanceId: child };
  outbox.children.push({
    instanceId: child,
    name,
    input,
    parent: { instanceId: state.instanceId, executionId: state.executionId, taskId: id },
  });
}

function dropCanceledTimers(state: InstanceState, actions: OrchestratorAction[], freshAtoms: OrchestratorAction[][]): void {
  const n = Math.min(state.actions.length, actions.length);
  for (let i = 0; i < n; i++) {
    const ids = state.actions[i].ids;
    let k = 0;
    for (const atom of freshAtoms[i]) {
      const id = ids[k++];
      if (atom.actionType === ActionType.CreateTimer && atom.isCanceled && id !== undefined) delete state.open[String(id)];
    }
  }
}

function continueAsNew(state: InstanceState, appended: HistoryEvent[], outbox: Outbox, at: Date, input: string | undefined): EpisodeResult {
  appended.push(events.continueAsNew(at, input));
  appended.push(events.orchestratorCompleted(at));
  const next = newInstanceState({
    instanceId: state.instanceId,
    executionId: nextExecutionId(state.executionId),
    name: state.name,
    input,
    parent: state.parent,
    createdTime: state.createdTime,
  });
  next.status = 'Running';
  next.customStatus = state.customStatus;
  next.lastUpdatedTime = at.toISOString();
  next.episodes = state.episodes;
  outbox.messages.push({
    id: `${next.executionId}:start`,
    instanceId: state.instanceId,
    executionId: next.executionId,
    event: events.executionStarted(at, state.name, input, state.parent?.instanceId),
    parent: state.parent,
    sentAt: at.toISOString(),
  });
  return { state: next, appended, outbox, actionsLog: [{ type: 'ContinueAsNew' }] };
}

/** Deterministic so a re-run of the same episode after a crash names the same next execution. */
export function nextExecutionId(executionId: string): string {
  const m = /^(.*)~(\d+)$/.exec(executionId);
  return m ? `${m[1]}~${Number(m[2]) + 1}` : `${executionId}~1`;
}

function notifyParent(state: InstanceState, outbox: Outbox, now: Date, failureText?: string): void {
  const m = parentNotification(state, now, failureText);
  if (m) outbox.messages.push(m);
}

/** The message that tells a parent orchestration its sub-orchestration ended (deterministic id: re-sends de-duplicate). */
export function parentNotification(state: InstanceState, now: Date, failureText?: string): ControlMessage | undefined {
  if (!state.parent || !isTerminal(state.status)) return undefined;
  if (failureText === undefined && state.status !== 'Completed') failureText = outputText(state.output);
  const p = state.parent;
  const event =
    state.status === 'Completed'
      ? events.subOrchestrationCompleted(now, p.taskId, state.output ?? 'null')
      : events.subOrchestrationFailed(
          now,
          p.taskId,
          `Sub-orchestration '${state.name}' (instance '${state.instanceId}') ${state.status === 'Terminated' ? 'was terminated' : 'failed'}: ${failureText ?? ''}`,
          failureText ?? '',
        );
  return {
    id: `${state.instanceId}|${state.executionId}|done`,
    instanceId: p.instanceId,
    executionId: p.executionId,
    event,
    sentAt: now.toISOString(),
  };
}

function outputText(output: string | undefined): string {
  if (output === undefined) return '';
  try {
    const v: unknown = JSON.parse(output);
    return typeof v === 'string' ? v : output;
  } catch {
    return output;
  }
}

/** Terminate: no replay; the instance ends with the reason as output. */
export function applyTerminate(input: InstanceState, reason: string | undefined, now: Date): EpisodeResult {
  const state = structuredClone(input);
  // `reason` is the ExecutionTerminated event's Input (JSON text), absent when the caller gave none.
  const text = reason !== undefined ? safeParseString(reason) : undefined;
  const output = text !== undefined ? JSON.stringify(text) : undefined;
  // In the history the event holds the reason itself, as DTFx's ExecutionTerminatedEvent(-1, reason) does.
  const terminated = events.executionTerminated(now, undefined);
  if (text !== undefined) terminated.Input = text;
  const appended = [terminated, events.executionCompleted(now, 'Terminated', output)];
  state.status = 'Terminated';
  state.output = output;
  state.open = {};
  state.retries = {};
  state.suspended = false;
  state.inbox = [];
  state.lastUpdatedTime = now.toISOString();
  const outbox = emptyOutbox();
  notifyParent(state, outbox, now, `terminated: ${text ?? ''}`);
  return { state, appended, outbox, actionsLog: [{ type: 'Terminate' }] };
}

/**
 * The episode's results cannot be stored (tableSafe.UnstorableError): the instance fails with the reason,
 * recording only small things, so this instance ends and no other is held up. `input` is the state before
 * the episode. The input is kept when it is small enough to store.
 */
export function applyUnstorable(input: InstanceState, why: string, now: Date): EpisodeResult {
  const state = structuredClone(input);
  const message = `The local Durable engine could not store the state of orchestration '${state.name}' (instance '${state.instanceId}'): ${why}`;
  state.status = 'Failed';
  state.output = JSON.stringify(message);
  state.customStatus = undefined;
  if (state.input !== undefined && state.input.length > MAX_KEPT_INPUT_CHARS) state.input = undefined;
  state.open = {};
  state.retries = {};
  state.suspended = false;
  state.inbox = [];
  state.lastUpdatedTime = now.toISOString();
  const appended = [events.executionCompleted(now, 'Failed', state.output)];
  const outbox = emptyOutbox();
  notifyParent(state, outbox, now, message);
  return { state, appended, outbox, actionsLog: [{ type: 'Unstorable' }] };
}

const MAX_KEPT_INPUT_CHARS = 64 * 1024;

export function applySuspend(input: InstanceState, reason: string | undefined, now: Date): EpisodeResult {
  const state = structuredClone(input);
  state.suspended = true;
  state.status = 'Suspended';
  state.lastUpdatedTime = now.toISOString();
  return { state, appended: [events.executionSuspended(now, reason ?? '')], outbox: emptyOutbox(), actionsLog: [{ type: 'Suspend' }] };
}

function safeParseString(jsonText: string): string {
  try {
    const v: unknown = JSON.parse(jsonText);
    return typeof v === 'string' ? v : jsonText;
  } catch {
    return jsonText;
  }
}
