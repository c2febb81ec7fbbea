/**
 * The actions an orchestrator returns in its OrchestratorState (durable-functions lib/src/actions),
 * their signatures for non-determinism checks, and the depth-first walk that mirrors how the library's
 * TaskOrchestrationExecutor hands out sequence ids: one id per scheduled action in the order the generator yields
 * them, Task.all/any children depth-first, and a retry timer of callActivityWithRetry taking an id of its own.
 */
import type { RetryOptionsJson } from './state';

export enum ActionType {
  CallActivity = 0,
  CallActivityWithRetry = 1,
  CallSubOrchestrator = 2,
  CallSubOrchestratorWithRetry = 3,
  ContinueAsNew = 4,
  CreateTimer = 5,
  WaitForExternalEvent = 6,
  CallEntity = 7,
  CallHttp = 8,
  SignalEntity = 9,
  WhenAny = 11,
  WhenAll = 12,
  LockEntities = 13,
  ReleaseEntities = 14,
}

export interface OrchestratorAction {
  actionType: ActionType;
  functionName?: string;
  input?: unknown;
  instanceId?: string;
  retryOptions?: RetryOptionsJson;
  fireAt?: string;
  isCanceled?: boolean;
  externalEventName?: string;
  compoundActions?: OrchestratorAction[];
  [k: string]: unknown;
}

/** The OrchestratorState the library returns (or embeds in its failure error). */
export interface OrchestratorStateJson {
  isDone: boolean;
  actions: OrchestratorAction[][];
  output?: unknown;
  error?: string;
  customStatus?: unknown;
  schemaVersion?: number;
  failureDetails?: unknown;
}

/** Action types this engine carries out; the others fail the instance with a clear message. */
const SUPPORTED = new Set<ActionType>([
  ActionType.CallActivity,
  ActionType.CallActivityWithRetry,
  ActionType.CallSubOrchestrator,
  ActionType.CallSubOrchestratorWithRetry,
  ActionType.ContinueAsNew,
  ActionType.CreateTimer,
  ActionType.WaitForExternalEvent,
  ActionType.WhenAny,
  ActionType.WhenAll,
]);

export function isSupported(a: OrchestratorAction): boolean {
  return SUPPORTED.has(a.actionType);
}

export function actionTypeName(t: ActionType): string {
  return ActionType[t] ?? `ActionType${t}`;
}

/** Whether the action takes a sequence id when first tracked (WaitForExternalEvent and ContinueAsNew do not). */
export function consumesId(t: ActionType): boolean {
  return t !== ActionType.WaitForExternalEvent && t !== ActionType.ContinueAsNew && t !== ActionType.WhenAll && t !== ActionType.WhenAny;
}

/**
 * JSON text of an activity / continue-as-new input. The library's Utils.processInput stringifies
 * string inputs a second time, so a string action input is already JSON text; other values are raw.
 */
export function processedInputToJson(input: unknown): string | undefined {
  if (input === undefined) return undefined;
  if (typeof input === 'string') return input;
  return JSON.stringify(input);
}

/** JSON text of a raw (unprocessed) input: sub-orchestrations. */
export function rawInputToJson(input: unknown): string | undefined {
  return input === undefined ? undefined : JSON.stringify(input);
}

/** Type and name: what must match between the recorded history and a replay. */
export function signature(a: OrchestratorAction): string {
  switch (a.actionType) {
    case ActionType.WhenAll:
    case ActionType.WhenAny:
      return `${actionTypeName(a.actionType)}[${(a.compoundActions ?? []).map(signature).join(',')}]`;
    case ActionType.WaitForExternalEvent:
      return `WaitForExternalEvent:${a.externalEventName ?? ''}`;
    case ActionType.CreateTimer:
    case ActionType.ContinueAsNew:
      return actionTypeName(a.actionType);
    default:
      return `${actionTypeName(a.actionType)}:${a.functionName ?? ''}`;
  }
}

/** The atomic actions of a signature, depth first ("WhenAll[CallActivity:A,CreateTimer]" -> two atoms). */
export function atomsOfSignature(sig: string): string[] {
  return sig.split(/[[\],]/).filter((s) => s !== '' && s !== 'WhenAll' && s !== 'WhenAny');
}

/** Depth-first atomic actions, the order the library's trackOpenTask assigns ids in. */
export function atomsOf(a: OrchestratorAction): OrchestratorAction[] {
  if (a.actionType === ActionType.WhenAll || a.actionType === ActionType.WhenAny) {
    return (a.compoundActions ?? []).flatMap(atomsOf);
  }
  return [a];
}

/** Human text for one atomic action, used in non-determinism errors and logs. */
export function describeAtom(sig: string): string {
  const [type, name] = sig.split(':', 2);
  switch (type) {
    case 'CallActivity':
    case 'CallActivityWithRetry':
      return `an activity task named '${name}'`;
    case 'CallSubOrchestrator':
    case 'CallSubOrchestratorWithRetry':
      return `a sub-orchestration named '${name}'`;
    case 'CreateTimer':
      return 'a durable timer';
    case 'WaitForExternalEvent':
      return `a wait for external event '${name}'`;
    case 'ContinueAsNew':
      return 'continue-as-new';
    default:
      return sig;
  }
}

/** The single cumulative action list (schema V2+), flattening V1's one-group-per-action layout. */
export function actionList(state: OrchestratorStateJson): OrchestratorAction[] {
  const groups = Array.isArray(state.actions) ? state.actions : [];
  if (groups.length <= 1) return groups[0] ?? [];
  return groups.flat();
}

/**
 * For each top-level action, the atomic actions that take a NEW sequence id there. A task yielded
 * again inside a later Task.any/Task.all (the sliding-window pattern) re-emits its action object in the
 * new compound action, but the library does not give it a new id (`alreadyScheduled`, trackOpenTask
 * skips ids already set). With the in-process result the action objects keep their identity, so an
 * object seen before is skipped. From JSON (no identity) every atom counts as new.
 */
export function freshAtomsPerAction(actions: OrchestratorAction[]): OrchestratorAction[][] {
  const seen = new Set<OrchestratorAction>();
  return actions.map((a) => {
    const fresh: OrchestratorAction[] = [];
    for (const atom of atomsOf(a)) {
      if (seen.has(atom)) continue;
      seen.add(atom);
      if (consumesId(atom.actionType)) fresh.push(atom);
    }
    return fresh;
  });
}
