/**
 * The engine's persisted view of one orchestration instance (current execution), and the messages
 * that move instances forward. Kept as plain JSON so it can be stored in the History table's sentinel
 * row and committed atomically with the history rows of an episode.
 */
import type { HistoryEvent } from './history';

export type RuntimeStatus = 'Pending' | 'Running' | 'Completed' | 'ContinuedAsNew' | 'Failed' | 'Canceled' | 'Terminated' | 'Suspended';

export const TERMINAL_STATUSES: readonly RuntimeStatus[] = ['Completed', 'Failed', 'Terminated', 'Canceled'];
export const isTerminal = (s: RuntimeStatus): boolean => TERMINAL_STATUSES.includes(s);

export interface ParentRef {
  instanceId: string;
  executionId: string;
  /** The parent's sequence id of the SubOrchestrationInstanceCreated event. */
  taskId: number;
}

/** A task the orchestrator is waiting for; keyed by its sequence id. */
export interface OpenTask {
  kind: 'activity' | 'timer' | 'suborch';
  name?: string;
  fireAt?: string;
  childInstanceId?: string;
  /** Reopened by a rewind: a Failed child is to be rewound too, not reported as failed again. */
  rewound?: boolean;
}

export interface RetryOptionsJson {
  firstRetryIntervalInMilliseconds: number;
  maxNumberOfAttempts: number;
  backoffCoefficient?: number;
  maxRetryIntervalInMilliseconds?: number;
  retryTimeoutInMilliseconds?: number;
}

/**
 * Mirrors the library's RetryableTask: `attemptNumber` starts at 1 and grows on each failure; a timer
 * follows every failure, and when it fires the task is rescheduled only while attemptNumber <= max.
 */
export interface RetryGroup {
  kind: 'activity' | 'suborch';
  name: string;
  /** JSON text of the input handed to every attempt. */
  input?: string;
  /** Sub-orchestrations only: the instance id the user chose (else one is derived per attempt). */
  childInstanceId?: string;
  options: RetryOptionsJson;
  attemptNumber: number;
  waitingOnTimer: boolean;
}

/** What the engine recorded for one top-level action, to detect non-determinism on replay. */
export interface ActionRecord {
  sig: string;
  /** Sequence ids allocated to the id-consuming atomic actions inside, depth first. */
  ids: number[];
}

export interface InstanceState {
  instanceId: string;
  executionId: string;
  name: string;
  input?: string;
  status: RuntimeStatus;
  output?: string;
  customStatus?: string;
  createdTime: string;
  lastUpdatedTime: string;
  parent?: ParentRef;
  /** Committed history events of the current execution. */
  historyLength: number;
  nextSeq: number;
  actions: ActionRecord[];
  open: Record<string, OpenTask>;
  retries: Record<string, RetryGroup>;
  /** Ids of consumed control messages that carry no natural key (raised events, suspend/resume). */
  consumedIds: string[];
  suspended: boolean;
  /** Events that arrived while suspended, delivered on resume. */
  inbox: HistoryEvent[];
  episodes: number;
}

/** A control-queue message: one history event for one instance. */
export interface ControlMessage {
  /** Unique message id (ours, not the queue's): used to de-duplicate redeliveries. */
  id: string;
  instanceId: string;
  /** Target execution; absent for events that go to whatever execution is current (raiseEvent, terminate...). */
  executionId?: string;
  event: HistoryEvent;
  /** ExecutionStarted only. */
  parent?: ParentRef;
  /** Enqueue time, to age out messages held for instances that never start. */
  sentAt: string;
}

/**
 * Several answers for one instance in one queue message (the activity dispatcher batches them to
 * save queue operations; each event is still de-duplicated on its own by its task id).
 */
export interface ControlBatch {
  id: string;
  instanceId: string;
  executionId: string;
  events: HistoryEvent[];
  sentAt: string;
}

export type ControlEnvelope = ControlMessage | ControlBatch;

export const isBatch = (m: ControlEnvelope): m is ControlBatch => Array.isArray((m as ControlBatch).events);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isEvent = (v: unknown): boolean => isRecord(v) && typeof v.EventType === 'number' && typeof v.EventId === 'number' && typeof v.Timestamp === 'string';

/**
 * What a control-queue message must be before anything acts on it (the queues are storage anyone with the account
 * key can write to): otherwise it is unreadable and deleted, never handed to the dispatcher. Undefined when it is.
 */
export function controlShapeProblem(v: unknown): string | undefined {
  if (!isRecord(v)) return 'not a control message: not a JSON object';
  if (typeof v.id !== 'string' || typeof v.instanceId !== 'string' || typeof v.sentAt !== 'string')
    return 'not a control message: id, instanceId or sentAt is not a string';
  if (Array.isArray(v.events)) {
    if (typeof v.executionId !== 'string' || !v.events.every(isEvent))
      return 'not a control message: a batch without an executionId or with an event that is not a history event';
    return undefined;
  }
  if (!isEvent(v.event)) return 'not a control message: no history event';
  if (v.executionId !== undefined && typeof v.executionId !== 'string') return 'not a control message: executionId is not a string';
  return undefined;
}

/** The same for a work-item message: one or more activity attempts. */
export function workItemShapeProblem(v: unknown): string | undefined {
  if (!isRecord(v) || !Array.isArray(v.items) || v.items.length === 0) return 'not a work item message: no items';
  const ok = v.items.every(
    (i) =>
      isRecord(i) &&
      typeof i.instanceId === 'string' &&
      typeof i.executionId === 'string' &&
      typeof i.name === 'string' &&
      Number.isSafeInteger(i.taskId) &&
      (i.input === undefined || typeof i.input === 'string'),
  );
  return ok ? undefined : 'not a work item message: an item without instanceId, executionId, name or taskId';
}

/** A work-item-queue message carries one or more activity attempts (one episode's fan-out is packed). */
export interface WorkItemMessage {
  items: ActivityWorkItem[];
}

/** One activity attempt. */
export interface ActivityWorkItem {
  instanceId: string;
  executionId: string;
  taskId: number;
  name: string;
  input?: string;
}

export interface TimerRequest {
  instanceId: string;
  executionId: string;
  timerId: number;
  fireAt: string;
}

export interface ChildStart {
  instanceId: string;
  name: string;
  input?: string;
  parent: ParentRef;
}

/** Everything an episode asks the world to do once its history is committed. */
export interface Outbox {
  activities: ActivityWorkItem[];
  timers: TimerRequest[];
  children: ChildStart[];
  /** Messages to other instances or to this one (parent notification, the next execution's start). */
  messages: ControlMessage[];
}

export const emptyOutbox = (): Outbox => ({ activities: [], timers: [], children: [], messages: [] });

export function newInstanceState(args: {
  instanceId: string;
  executionId: string;
  name: string;
  input?: string;
  parent?: ParentRef;
  createdTime: string;
}): InstanceState {
  return {
    instanceId: args.instanceId,
    executionId: args.executionId,
    name: args.name,
    input: args.input,
    status: 'Pending',
    createdTime: args.createdTime,
    lastUpdatedTime: args.createdTime,
    parent: args.parent,
    historyLength: 0,
    nextSeq: 0,
    actions: [],
    open: {},
    retries: {},
    consumedIds: [],
    suspended: false,
    inbox: [],
    episodes: 0,
  };
}
