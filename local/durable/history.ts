/**
 * History events in the DTFx JSON shape the durable-functions library replays
 * (the DTFx HistoryEvent classes, serialised as the extension sends them). Field names are PascalCase because the
 * library reads them so.
 */

export enum EventType {
  ExecutionStarted = 0,
  ExecutionCompleted = 1,
  ExecutionFailed = 2,
  ExecutionTerminated = 3,
  TaskScheduled = 4,
  TaskCompleted = 5,
  TaskFailed = 6,
  SubOrchestrationInstanceCreated = 7,
  SubOrchestrationInstanceCompleted = 8,
  SubOrchestrationInstanceFailed = 9,
  TimerCreated = 10,
  TimerFired = 11,
  OrchestratorStarted = 12,
  OrchestratorCompleted = 13,
  EventSent = 14,
  EventRaised = 15,
  ContinueAsNew = 16,
  GenericEvent = 17,
  HistoryState = 18,
  ExecutionSuspended = 19,
  ExecutionResumed = 20,
}

export interface HistoryEvent {
  EventType: EventType;
  /** The task sequence id for scheduling events, -1 otherwise. */
  EventId: number;
  IsPlayed: boolean;
  Timestamp: string;
  Name?: string;
  /** JSON text of the input (ExecutionStarted, TaskScheduled, SubOrchestrationInstanceCreated, EventRaised). */
  Input?: string;
  /** JSON text of the result (TaskCompleted, SubOrchestrationInstanceCompleted, ExecutionCompleted). */
  Result?: string;
  TaskScheduledId?: number;
  TimerId?: number;
  FireAt?: string;
  Reason?: string;
  Details?: string;
  FailureDetails?: FailureDetails | null;
  InstanceId?: string;
  OrchestrationStatus?: string;
  ParentInstanceId?: string;
  /** GenericEvent: the rewind request's reason, or "Rewound: <type>" where a failure event was cleared by a rewind. */
  Data?: string;
}

export interface FailureDetails {
  ErrorType: string;
  ErrorMessage: string;
  StackTrace?: string;
  IsNonRetriable?: boolean;
}

function base(type: EventType, at: Date, eventId = -1): HistoryEvent {
  return { EventType: type, EventId: eventId, IsPlayed: false, Timestamp: at.toISOString() };
}

export const events = {
  executionStarted(at: Date, name: string, input: string | undefined, parentInstanceId?: string): HistoryEvent {
    const e = { ...base(EventType.ExecutionStarted, at), Name: name };
    if (input !== undefined) e.Input = input;
    if (parentInstanceId !== undefined) e.ParentInstanceId = parentInstanceId;
    return e;
  },
  orchestratorStarted: (at: Date): HistoryEvent => base(EventType.OrchestratorStarted, at),
  orchestratorCompleted: (at: Date): HistoryEvent => base(EventType.OrchestratorCompleted, at),
  taskScheduled(at: Date, id: number, name: string, input: string | undefined): HistoryEvent {
    const e = { ...base(EventType.TaskScheduled, at, id), Name: name };
    if (input !== undefined) e.Input = input;
    return e;
  },
  taskCompleted: (at: Date, taskId: number, result: string): HistoryEvent => ({
    ...base(EventType.TaskCompleted, at),
    TaskScheduledId: taskId,
    Result: result,
  }),
  taskFailed: (at: Date, taskId: number, reason: string, details: string): HistoryEvent => ({
    ...base(EventType.TaskFailed, at),
    TaskScheduledId: taskId,
    Reason: reason,
    Details: details,
    FailureDetails: null,
  }),
  timerCreated: (at: Date, id: number, fireAt: Date): HistoryEvent => ({
    ...base(EventType.TimerCreated, at, id),
    FireAt: fireAt.toISOString(),
  }),
  timerFired: (at: Date, timerId: number, fireAt: string): HistoryEvent => ({
    ...base(EventType.TimerFired, at),
    TimerId: timerId,
    FireAt: fireAt,
  }),
  eventRaised(at: Date, name: string, input: string | undefined): HistoryEvent {
    const e = { ...base(EventType.EventRaised, at), Name: name };
    if (input !== undefined) e.Input = input;
    return e;
  },
  subOrchestrationCreated(at: Date, id: number, name: string, instanceId: string, input: string | undefined): HistoryEvent {
    const e = { ...base(EventType.SubOrchestrationInstanceCreated, at, id), Name: name, InstanceId: instanceId };
    if (input !== undefined) e.Input = input;
    return e;
  },
  subOrchestrationCompleted: (at: Date, taskId: number, result: string): HistoryEvent => ({
    ...base(EventType.SubOrchestrationInstanceCompleted, at),
    TaskScheduledId: taskId,
    Result: result,
  }),
  subOrchestrationFailed: (at: Date, taskId: number, reason: string, details: string): HistoryEvent => ({
    ...base(EventType.SubOrchestrationInstanceFailed, at),
    TaskScheduledId: taskId,
    Reason: reason,
    Details: details,
    FailureDetails: null,
  }),
  executionCompleted(at: Date, status: 'Completed' | 'Failed' | 'Terminated', result: string | undefined, failure?: FailureDetails): HistoryEvent {
    const e: HistoryEvent = { ...base(EventType.ExecutionCompleted, at), OrchestrationStatus: status };
    if (result !== undefined) e.Result = result;
    if (failure) e.FailureDetails = failure;
    return e;
  },
  /** `reason` undefined: terminated without a reason (the instance's output is then null). */
  executionTerminated: (at: Date, reason: string | undefined): HistoryEvent => ({
    ...base(EventType.ExecutionTerminated, at),
    ...(reason !== undefined ? { Input: JSON.stringify(reason) } : {}),
  }),
  executionSuspended: (at: Date, reason: string): HistoryEvent => ({ ...base(EventType.ExecutionSuspended, at), Reason: reason }),
  executionResumed: (at: Date, reason: string): HistoryEvent => ({ ...base(EventType.ExecutionResumed, at), Reason: reason }),
  /** A rewind request (the control message) and its record in the history, as Azure's GenericEvent(-1, reason). */
  rewind: (at: Date, reason: string): HistoryEvent => ({ ...base(EventType.GenericEvent, at), Data: reason }),
  continueAsNew: (at: Date, input: string | undefined): HistoryEvent => ({
    ...base(EventType.ContinueAsNew, at),
    ...(input !== undefined ? { Result: input } : {}),
  }),
};

/** The task sequence id a completion event answers, if it is one. */
export function completedTaskId(e: HistoryEvent): number | undefined {
  switch (e.EventType) {
    case EventType.TaskCompleted:
    case EventType.TaskFailed:
    case EventType.SubOrchestrationInstanceCompleted:
    case EventType.SubOrchestrationInstanceFailed:
      return e.TaskScheduledId;
    case EventType.TimerFired:
      return e.TimerId;
    default:
      return undefined;
  }
}

export function isFailure(e: HistoryEvent): boolean {
  return e.EventType === EventType.TaskFailed || e.EventType === EventType.SubOrchestrationInstanceFailed;
}

/** One line per event for logs and the timeline command. */
export function describeEvent(e: HistoryEvent): string {
  const name = EventType[e.EventType] ?? `EventType${e.EventType}`;
  const parts: string[] = [name];
  if (e.EventId >= 0) parts.push(`#${e.EventId}`);
  if (e.TaskScheduledId !== undefined) parts.push(`task #${e.TaskScheduledId}`);
  if (e.TimerId !== undefined) parts.push(`timer #${e.TimerId}`);
  if (e.Name) parts.push(e.Name);
  if (e.InstanceId) parts.push(`instance=${e.InstanceId}`);
  if (e.FireAt) parts.push(`fireAt=${e.FireAt}`);
  if (e.OrchestrationStatus) parts.push(e.OrchestrationStatus);
  if (e.Reason) parts.push(`reason=${truncate(e.Reason, 200)}`);
  if (e.Data !== undefined) parts.push(`data=${truncate(e.Data, 200)}`);
  if (e.Input !== undefined && e.EventType !== EventType.ExecutionStarted) parts.push(`input=${truncate(e.Input, 120)}`);
  if (e.Result !== undefined) parts.push(`result=${truncate(e.Result, 120)}`);
  return parts.join(' ');
}

function truncate(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n)}…`;
}
