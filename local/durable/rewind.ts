/**
 * Rewind of a Failed instance, pure: which history events to clear and which tasks to open again.
 *
 * Azure's Storage provider (AzureTableTrackingStore.RewindHistoryAsync) overwrites the failure events of the
 * latest execution (TaskFailed, SubOrchestrationInstanceFailed, the Failed ExecutionCompleted) with
 * GenericEvents reading "Rewound: <type>", rewinds failed sub-orchestrations the same way, and sends the
 * instance a GenericEvent so it replays: the failed tasks are then scheduled again. This engine keeps each
 * task's sequence id instead of scheduling anew: it clears the failures of the action the orchestrator was
 * waiting on when it failed (its last action), opens that action's unanswered tasks again and replays.
 * Failures the orchestrator had already handled (caught, or retried before) stay in the history, so the
 * replay takes the same path as before. A last action with retry options is not supported (the API answers
 * 501): its attempts take hidden sequence ids this engine cannot reopen faithfully.
 */
import { EventType, completedTaskId, events, type HistoryEvent } from './history';
import type { InstanceState, OpenTask } from './state';

export interface ReopenedTask extends OpenTask {
  id: number;
  /** The scheduling event (TaskScheduled, TimerCreated or SubOrchestrationInstanceCreated). */
  scheduled?: HistoryEvent;
}

export type RewindPlan =
  { ok: true; state: InstanceState; history: HistoryEvent[]; reopened: ReopenedTask[] } | { ok: false; why: string; notFailed?: boolean };

const rewound = (e: HistoryEvent): HistoryEvent => ({ ...events.rewind(new Date(e.Timestamp), `Rewound: ${EventType[e.EventType]}`), IsPlayed: e.IsPlayed });

export function rewindPlan(input: InstanceState, history: HistoryEvent[]): RewindPlan {
  if (input.status !== 'Failed') return { ok: false, notFailed: true, why: 'The rewind operation is only supported on failed orchestration instances.' };
  const last = input.actions[input.actions.length - 1];
  if (last && /WithRetry/.test(last.sig)) {
    return { ok: false, why: `Rewind of an instance whose last action (${last.sig}) has retry options is not supported by the local Durable engine` };
  }
  const lastIds = new Set(last?.ids ?? []);
  const scheduling = new Map<number, HistoryEvent>();
  const answered = new Set<number>();
  for (const e of history) {
    if (e.EventType === EventType.TaskScheduled || e.EventType === EventType.TimerCreated || e.EventType === EventType.SubOrchestrationInstanceCreated) {
      scheduling.set(e.EventId, e);
    }
    const id = completedTaskId(e);
    if (id !== undefined && lastIds.has(id)) answered.add(id);
  }
  const cleared: HistoryEvent[] = history.map((e) => {
    const id = completedTaskId(e);
    const failedHere =
      (e.EventType === EventType.TaskFailed || e.EventType === EventType.SubOrchestrationInstanceFailed) && id !== undefined && lastIds.has(id);
    if (failedHere) {
      answered.delete(id);
      return rewound(e);
    }
    if (e.EventType === EventType.ExecutionCompleted && e.OrchestrationStatus === 'Failed') return rewound(e);
    return e;
  });
  const reopened: ReopenedTask[] = [];
  for (const id of last?.ids ?? []) {
    if (answered.has(id)) continue;
    const s = scheduling.get(id);
    if (!s) continue;
    if (s.EventType === EventType.TaskScheduled) reopened.push({ id, kind: 'activity', name: s.Name, scheduled: s });
    else if (s.EventType === EventType.TimerCreated) reopened.push({ id, kind: 'timer', fireAt: s.FireAt, scheduled: s });
    else reopened.push({ id, kind: 'suborch', name: s.Name, childInstanceId: s.InstanceId, scheduled: s });
  }
  const state = structuredClone(input);
  state.status = 'Running';
  state.output = undefined;
  state.open = Object.fromEntries(
    reopened.map(({ id, kind, name, fireAt, childInstanceId }) => [
      String(id),
      kind === 'suborch' ? { kind, name, childInstanceId, rewound: true } : { kind, name, fireAt },
    ]),
  );
  state.retries = {};
  state.suspended = false;
  state.inbox = [];
  return { ok: true, state, history: cleared, reopened };
}
