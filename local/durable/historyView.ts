/**
 * The `historyEvents` of the status API, shaped as DurableClient.GetDurableOrchestrationStatusAsync shapes
 * the Durable Task history: event types as names; EventId, IsPlayed, TaskScheduledId and TimerId removed;
 * OrchestratorStarted/Completed removed; a TaskScheduled or SubOrchestrationInstanceCreated that was
 * answered is folded into its answer (FunctionName, ScheduledTime and, with showInput, Input); Result only
 * with showHistoryOutput (then parsed as JSON); Input (JSON text, unparsed) only with showInput. Pure.
 */
import { EventType, type HistoryEvent } from './history';

export interface HistoryViewOptions {
  showHistoryOutput: boolean;
  showInput: boolean;
}

/** ParseToJToken: JSON text to a value; text that is not JSON stays a string. */
export function parseJsonText(text: string | undefined): unknown {
  if (text === undefined) return null;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The fields of the Durable Task event class of `e` (what the history JSON carries before shaping). */
function taskEventFields(e: HistoryEvent): Record<string, unknown> {
  const item: Record<string, unknown> = { EventType: EventType[e.EventType] ?? String(e.EventType) };
  const put = (k: keyof HistoryEvent): void => {
    if (e[k] !== undefined) item[k] = e[k];
  };
  switch (e.EventType) {
    case EventType.ExecutionStarted:
      put('Input');
      item.FunctionName = e.Name;
      break;
    case EventType.ExecutionCompleted:
      put('OrchestrationStatus');
      put('Result');
      put('FailureDetails');
      break;
    case EventType.ExecutionTerminated:
      put('Input');
      break;
    case EventType.TaskScheduled:
    case EventType.EventRaised:
      put('Name');
      put('Input');
      break;
    case EventType.SubOrchestrationInstanceCreated:
      put('Name');
      put('InstanceId');
      put('Input');
      break;
    case EventType.TaskCompleted:
    case EventType.SubOrchestrationInstanceCompleted:
      put('Result');
      break;
    case EventType.TaskFailed:
    case EventType.SubOrchestrationInstanceFailed:
      put('Reason');
      put('Details');
      put('FailureDetails');
      break;
    case EventType.TimerCreated:
    case EventType.TimerFired:
      put('FireAt');
      break;
    case EventType.ContinueAsNew:
      put('Result');
      break;
    case EventType.ExecutionSuspended:
    case EventType.ExecutionResumed:
      put('Reason');
      break;
    case EventType.GenericEvent:
      item.Data = e.Data ?? null;
      break;
    default:
      break;
  }
  item.Timestamp = e.Timestamp;
  return item;
}

export function formatHistory(history: HistoryEvent[], opts: HistoryViewOptions): Record<string, unknown>[] {
  const scheduled = new Map<string, { index: number; e: HistoryEvent }>();
  const dropped = new Set<number>();
  const out: (Record<string, unknown> | undefined)[] = [];
  history.forEach((e, i) => {
    const item = taskEventFields(e);
    const fold = (prefix: 'task' | 'suborch'): void => {
      const s = scheduled.get(`${prefix}_${e.TaskScheduledId}`);
      if (!s) return;
      item.ScheduledTime = s.e.Timestamp;
      item.FunctionName = s.e.Name;
      if (opts.showInput) item.Input = s.e.Input ?? null;
      dropped.add(s.index);
    };
    switch (e.EventType) {
      case EventType.OrchestratorStarted:
      case EventType.OrchestratorCompleted:
        dropped.add(i);
        break;
      case EventType.TaskScheduled:
        scheduled.set(`task_${e.EventId}`, { index: i, e });
        break;
      case EventType.SubOrchestrationInstanceCreated:
        scheduled.set(`suborch_${e.EventId}`, { index: i, e });
        break;
      case EventType.TaskCompleted:
      case EventType.TaskFailed:
        fold('task');
        break;
      case EventType.SubOrchestrationInstanceCompleted:
      case EventType.SubOrchestrationInstanceFailed:
        fold('suborch');
        break;
      default:
        break;
    }
    const completes =
      e.EventType === EventType.TaskCompleted || e.EventType === EventType.SubOrchestrationInstanceCompleted || e.EventType === EventType.ExecutionCompleted;
    if (completes) {
      if (!opts.showHistoryOutput) delete item.Result;
      else item.Result = parseJsonText(e.Result);
    }
    if (!opts.showInput) delete item.Input;
    out.push(item);
  });
  return out.filter((item, i): item is Record<string, unknown> => item !== undefined && !dropped.has(i));
}
