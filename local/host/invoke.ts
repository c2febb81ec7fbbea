/**
 * Runs one invocation through the app's programming model, in the order the Node worker's
 * InvocationHandler uses: getInvocationModel → getArguments → preInvocation hooks → invokeFunction →
 * postInvocation hooks → getResponse. Output bindings the host owns (e.g. queue) are then written.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { coreState, type CoreInvocationContext, type RegisteredCallback, type RpcLogCategory, type RpcLogLevel } from './coreModule';
import type { BindingInfo, HostExtension, InvocationRequest, InvocationResult, RegisteredFunction, TypedData } from './extension';
import { pinoLevel } from './logging';

/** Writes the data of one `out` binding (e.g. a queue message) after a successful invocation. */
export type OutputBindingWriter = (binding: BindingInfo, data: TypedData, fn: RegisteredFunction) => Promise<void>;

export interface InvokerOptions {
  log: Logger;
  extensions: readonly HostExtension[];
  /** Writers by binding type (lower-case), e.g. `queue`. */
  outputWriters: Record<string, OutputBindingWriter>;
  /** Shared by every hook for the app's lifetime. */
  appHookData: Record<string, unknown>;
  /** Told of each execution as it ends (FunctionsHostOptions.onInvocation). */
  onInvocation?: (record: InvocationRecord) => void;
}

/** One function execution: which function, its trigger type and whether it succeeded. */
export interface InvocationRecord {
  functionName: string;
  trigger: string;
  ok: boolean;
}

export class Invoker {
  /** One RegisteredFunction per registration: every episode and activity looks its function up, so it is built once. */
  private readonly described = new WeakMap<RegisteredCallback, RegisteredFunction>();

  constructor(private readonly opts: InvokerOptions) {}

  functions(): RegisteredFunction[] {
    return [...coreState().functions.values()].map((r) => this.describe(r));
  }

  private describe(registered: RegisteredCallback): RegisteredFunction {
    let fn = this.described.get(registered);
    if (!fn) {
      const { metadata } = registered;
      fn = toRegisteredFunction(metadata.name, metadata.bindings, metadata.retryOptions);
      this.described.set(registered, fn);
    }
    return fn;
  }

  async invoke(functionName: string, request: InvocationRequest): Promise<InvocationResult> {
    const registered = coreState().functions.get(functionName);
    const invocationId = randomUUID();
    if (!registered) {
      return { invocationId, outputData: [], error: new Error(`No function named "${functionName}" is registered`) };
    }
    const fn = this.describe(registered);
    const log = this.opts.log.child({ invocationId, functionName });
    const started = Date.now();
    // A timer's runs are routine (the event relay fires every few seconds): their start and success lines are debug,
    // what the function itself logs keeps its level, and a failure stays an error.
    const routine = fn.trigger.type === 'timerTrigger' ? 'debug' : 'info';
    log[routine]({ trigger: fn.trigger.type }, `Executing 'Functions.${functionName}'`);
    try {
      const inputData = await this.withExtensionInputs(fn, request);
      const result = await this.runPipeline(fn, registered, invocationId, { ...request, inputData }, log);
      await this.writeOutputs(fn, result);
      log[routine]({ durationMs: Date.now() - started }, `Executed 'Functions.${functionName}' (Succeeded)`);
      this.opts.onInvocation?.({ functionName, trigger: fn.trigger.type, ok: true });
      return result;
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      log.error({ err: error, durationMs: Date.now() - started }, `Executed 'Functions.${functionName}' (Failed): ${error.message}`);
      this.opts.onInvocation?.({ functionName, trigger: fn.trigger.type, ok: false });
      return { invocationId, outputData: [], error };
    }
  }

  private async withExtensionInputs(fn: RegisteredFunction, request: InvocationRequest): Promise<InvocationRequest['inputData']> {
    const inputData = [...request.inputData];
    const given = new Set(inputData.map((i) => i.name));
    for (const binding of Object.values(fn.bindings)) {
      if (binding.direction !== 'in' || binding === fn.trigger || given.has(binding.name)) continue;
      const ext = this.opts.extensions.find((e) => e.inputBindingTypes.includes(binding.type));
      if (!ext?.provideInputBinding) continue;
      const data = await ext.provideInputBinding(binding, { functionName: fn.name, requestUrl: request.requestUrl });
      inputData.push({ name: binding.name, data });
    }
    return inputData;
  }

  private async runPipeline(
    fn: RegisteredFunction,
    registered: RegisteredCallback,
    invocationId: string,
    request: InvocationRequest,
    log: Logger,
  ): Promise<InvocationResult> {
    const state = coreState();
    const model = state.programmingModel;
    if (!model) throw new Error('No programming model is set: the app never loaded @azure/functions');
    // The library's InvocationContext object, once getArguments created it (the log hook reports it).
    const current: { invocationContext?: unknown } = {};
    const coreCtx: CoreInvocationContext = {
      invocationId,
      request: {
        invocationId,
        functionId: fn.name,
        inputData: request.inputData,
        triggerMetadata: request.triggerMetadata ?? {},
        traceContext: { traceParent: undefined, traceState: undefined, attributes: {} },
        retryContext: undefined,
      },
      metadata: { ...registered.metadata, functionId: fn.name, bindings: fn.bindings },
      state: undefined,
      log: (level: RpcLogLevel, category: RpcLogCategory, message: string) => this.emitLog(log, level, category, message, current.invocationContext),
    };

    const invocationModel = await model.getInvocationModel(coreCtx);
    const { context, inputs } = await invocationModel.getArguments();
    current.invocationContext = context;
    const hookData: Record<string, unknown> = {};
    const pre = { hookData, appHookData: this.opts.appHookData, invocationContext: context, inputs, functionCallback: registered.callback };
    coreCtx.state = 'preInvocationHooks';
    try {
      for (const hook of [...state.hooks.preInvocation]) await hook(pre);
    } finally {
      coreCtx.state = undefined;
    }

    const post: Record<string, unknown> & { result: unknown; error: unknown } = {
      hookData,
      appHookData: this.opts.appHookData,
      invocationContext: context,
      inputs: pre.inputs,
      result: null,
      error: null,
    };
    coreCtx.state = 'invocation';
    try {
      post.result = await invocationModel.invokeFunction(context, pre.inputs, pre.functionCallback);
    } catch (err) {
      post.error = err;
    }
    coreCtx.state = 'postInvocationHooks';
    try {
      for (const hook of [...state.hooks.postInvocation]) await hook(post);
    } finally {
      coreCtx.state = undefined;
    }
    if (post.error) throw post.error;

    const response = await invocationModel.getResponse(context, post.result);
    return {
      invocationId,
      returnValue: response.returnValue ?? undefined,
      outputData: response.outputData ?? [],
      rawResult: post.result,
    };
  }

  private emitLog(log: Logger, level: RpcLogLevel, category: RpcLogCategory, message: string, invocationContext: unknown): void {
    const pl = pinoLevel(level);
    if (pl) log[pl]({ category }, message);
    for (const hook of [...coreState().hooks.log]) {
      try {
        // Log hooks are synchronous in the worker; a returned promise is not awaited.
        hook({ hookData: {}, appHookData: this.opts.appHookData, level, message, category, invocationContext });
      } catch (err) {
        log.warn({ err }, 'A log hook threw');
      }
    }
  }

  private async writeOutputs(fn: RegisteredFunction, result: InvocationResult): Promise<void> {
    const outputs = [...result.outputData];
    const ret = fn.bindings['$return'];
    // A non-http `$return` binding (e.g. return: output.storageQueue(...)) is an ordinary output.
    if (ret && ret.type.toLowerCase() !== 'http' && result.returnValue) outputs.push({ name: '$return', data: result.returnValue });
    for (const { name, data } of outputs) {
      const binding = fn.bindings[name];
      if (!binding || data === undefined || data === null) continue;
      const writer = this.opts.outputWriters[binding.type.toLowerCase()];
      if (writer) {
        await writer(binding, data, fn);
      } else if (!this.opts.extensions.some((e) => e.inputBindingTypes.includes(binding.type) || e.triggerTypes.includes(binding.type))) {
        this.opts.log.warn({ functionName: fn.name, binding: name, type: binding.type }, 'Output binding type not supported locally; value dropped');
      }
    }
  }
}

export function toRegisteredFunction(name: string, bindings: Record<string, BindingInfo>, retryOptions?: unknown): RegisteredFunction {
  const named: Record<string, BindingInfo> = {};
  for (const [key, b] of Object.entries(bindings)) named[key] = { ...b, name: key };
  const trigger = Object.values(named).find((b) => /trigger$/i.test(b.type));
  if (!trigger) throw new Error(`Function "${name}" has no trigger binding (bindings: ${Object.keys(bindings).join(', ')})`);
  return { name, bindings: named, trigger, retryOptions };
}
