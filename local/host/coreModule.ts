/**
 * The `@azure/functions-core` module that `@azure/functions` v4 talks to, as the Node worker serves it
 * (the worker answers `require('@azure/functions-core')` with its own object; the library registers functions and
 * hooks on it). Under jest it is reached through `moduleNameMapper`; in plain
 * node through the `Module.prototype.require` proxy in ./requireProxy.
 *
 * The registration state is a per-process (per-realm) singleton kept on `globalThis`, so every copy of
 * this file that a module registry may load (jest isolates, tsx vs compiled) shares it. That is also why
 * only ONE host can run per process: a second host would see the first one's functions and hooks.
 */
import type { BindingInfo, TypedData } from './extension';

export type RpcLogLevel = 'trace' | 'debug' | 'information' | 'warning' | 'error' | 'critical' | 'none';
export type RpcLogCategory = 'user' | 'system' | 'customMetric';
export type HookName = 'preInvocation' | 'postInvocation' | 'appStart' | 'appTerminate' | 'log';
// The library calls hooks with plain mutable objects and may return a promise (except log hooks).
export type HookCallback = (context: Record<string, unknown>) => unknown;
export type FunctionCallback = (...args: unknown[]) => unknown;

export interface RpcDuration {
  seconds?: number | Long;
  nanos?: number;
}
type Long = { toNumber(): number };

export interface RpcRetryOptions {
  maxRetryCount?: number;
  delayInterval?: RpcDuration;
  minimumInterval?: RpcDuration;
  maximumInterval?: RpcDuration;
  retryStrategy?: 'exponentialBackoff' | 'fixedDelay';
}

export interface FunctionMetadata {
  name: string;
  functionId?: string;
  bindings: Record<string, BindingInfo>;
  retryOptions?: RpcRetryOptions;
}

export interface RpcInvocationRequest {
  invocationId: string;
  functionId: string;
  inputData: { name: string; data: TypedData | undefined }[];
  triggerMetadata: Record<string, TypedData>;
  traceContext?: { traceParent?: string; traceState?: string; attributes?: Record<string, string> };
  retryContext?: { retryCount?: number; maxRetryCount?: number };
}

export interface RpcInvocationResponse {
  invocationId?: string;
  outputData?: { name: string; data: TypedData }[];
  returnValue?: TypedData | null;
}

export interface CoreInvocationContext {
  invocationId: string;
  request: RpcInvocationRequest;
  metadata: FunctionMetadata & { directory?: string; scriptFile?: string };
  state?: 'preInvocationHooks' | 'postInvocationHooks' | 'invocation';
  log(level: RpcLogLevel, category: RpcLogCategory, message: string): void;
}

export interface InvocationModel {
  getArguments(): Promise<{ context: unknown; inputs: unknown[] }>;
  invokeFunction(context: unknown, inputs: unknown[], callback: FunctionCallback): Promise<unknown>;
  getResponse(context: unknown, result: unknown): Promise<RpcInvocationResponse>;
}

export interface ProgrammingModel {
  name: string;
  version: string;
  getInvocationModel(coreCtx: CoreInvocationContext): InvocationModel | Promise<InvocationModel>;
  getCapabilities?(capabilities: Record<string, string>): Record<string, string> | Promise<Record<string, string>>;
}

export interface RegisteredCallback {
  metadata: FunctionMetadata;
  callback: FunctionCallback;
}

/** Where `log()` (system logs outside an invocation) goes; set by the running host. */
export type SystemLogSink = (level: RpcLogLevel, category: RpcLogCategory, message: string) => void;

export interface CoreState {
  functions: Map<string, RegisteredCallback>;
  hooks: Record<HookName, HookCallback[]>;
  programmingModel?: ProgrammingModel;
  systemLog?: SystemLogSink;
}

const STATE_KEY = Symbol.for('hpc-mpi.local-host.functions-core.state');

/** The shared registration state (host side; not part of the core API the library sees). */
export function coreState(): CoreState {
  const holder = globalThis as unknown as Record<symbol, CoreState | undefined>;
  let state = holder[STATE_KEY];
  if (!state) {
    state = { functions: new Map(), hooks: emptyHooks() };
    holder[STATE_KEY] = state;
  }
  return state;
}

function emptyHooks(): Record<HookName, HookCallback[]> {
  return { preInvocation: [], postInvocation: [], appStart: [], appTerminate: [], log: [] };
}

/** Forget every function and hook (the programming model stays: the library sets it once per load). */
export function resetRegistrations(): void {
  const state = coreState();
  state.functions.clear();
  state.hooks = emptyHooks();
}

class SystemError extends Error {
  readonly isAzureFunctionsSystemError = true;
}

export class Disposable {
  static from(...items: { dispose(): unknown }[]): Disposable {
    let pending: { dispose(): unknown }[] | undefined = items;
    return new Disposable(() => {
      for (const item of pending ?? []) item?.dispose?.();
      pending = undefined;
    });
  }

  #onDispose?: () => unknown;

  constructor(callOnDispose: () => unknown) {
    this.#onDispose = callOnDispose;
  }

  dispose(): unknown {
    const fn = this.#onDispose;
    this.#onDispose = undefined;
    return fn?.();
  }
}

/** Version of the worker we impersonate (the library only logs it). */
export const version = '3.10.1';

/** Host version; 4.34+ makes the library accept log hooks. */
export const hostVersion = '4.1037.0';

export function registerFunction(metadata: FunctionMetadata, callback: FunctionCallback): Disposable {
  const state = coreState();
  if (state.functions.has(metadata.name)) {
    throw new SystemError(`A function with name "${metadata.name}" has already been registered.`);
  }
  state.functions.set(metadata.name, { metadata, callback });
  return new Disposable(() => {
    if (state.functions.get(metadata.name)?.callback === callback) state.functions.delete(metadata.name);
  });
}

export function registerHook(hookName: string, callback: HookCallback): Disposable {
  const hooks = coreState().hooks;
  if (!(hookName in hooks)) {
    const err = new RangeError(`Unrecognized hook "${hookName}"`) as RangeError & { isAzureFunctionsSystemError: boolean };
    err.isAzureFunctionsSystemError = true;
    throw err;
  }
  const list = hooks[hookName as HookName];
  list.push(callback);
  return new Disposable(() => {
    // Look the list up again: a reset in between replaced it.
    const current = coreState().hooks[hookName as HookName];
    const i = current.indexOf(callback);
    if (i >= 0) current.splice(i, 1);
  });
}

export function setProgrammingModel(programmingModel: ProgrammingModel): void {
  coreState().programmingModel = programmingModel;
}

export function getProgrammingModel(): ProgrammingModel {
  const model = coreState().programmingModel;
  if (!model) throw new SystemError('No programming model was set: the app did not load @azure/functions.');
  return model;
}

export function log(level: RpcLogLevel, category: RpcLogCategory, message: string): void {
  const sink = coreState().systemLog;
  if (sink) sink(level, category, message);
  else if (level === 'error' || level === 'critical' || level === 'warning') process.stderr.write(`[functions-core ${level}] ${message}\n`);
}
