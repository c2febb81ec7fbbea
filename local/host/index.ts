/**
 * The embedded Azure Functions host: loads the app the way the Node worker does, serves HTTP triggers,
 * polls queue triggers, fires timer triggers, writes queue output bindings, and hands the durable trigger
 * types to extensions (see ./extension.ts).
 *
 * ONE HOST PER PROCESS: function and hook registrations live in the process-wide `@azure/functions-core`
 * singleton (./coreModule), exactly as in a real worker. `stop()` clears them and unloads the app, so a
 * fresh host can be started afterwards in the same process (tests do this several times per file).
 */
import * as path from 'node:path';
import type { Logger } from 'pino';
import { loadApp, type LoadedApp } from './appLoader';
import { coreState, resetRegistrations, type HookCallback } from './coreModule';
import type { HostContext, HostExtension, RegisteredFunction } from './extension';
import { hostJsonLogLevel, readHostJson, httpRoutePrefix, type HostJson } from './hostJson';
import { startHttpListener, type HttpListener } from './http/httpServer';
import { RouteTable } from './http/routeTable';
import { HostReadiness } from './http/readiness';
import { Invoker, type OutputBindingWriter } from './invoke';
import { IngressGauge } from './ingress';
import { KeyStore, defaultKeysFile, isWebhookAuthorized, loadOrCreateKeys, webhookKeyName, type HostKeys } from './keys';
import { createHostLogger, pinoLevel, type LogDestination } from './logging';
import { installCoreModuleRequireProxy } from './requireProxy';
import { formatBanner } from './banner';
import { startTriggerListeners, createQueueOutputWriter, type TriggerListeners } from './triggers/index';
import { loadLocalSettings } from '../settings/localSettings';
import { BlobScheduleMonitor, localHostId } from './triggers/scheduleMonitor';
import { resolveStorageConnection, type StorageConnection } from './storageConnection';

export type { BindingInfo, HostContext, HostExtension, InvocationRequest, InvocationResult, RegisteredFunction, TypedData } from './extension';
export type { HostKeys } from './keys';
export type { StorageConnection } from './storageConnection';
export { formatBanner } from './banner';
export type { InvocationRecord } from './invoke';

import type { InvocationRecord } from './invoke';

export interface FunctionsHostOptions {
  /** Folder holding package.json (whose `main` globs the entry points) and host.json. */
  appDir: string;
  /** 0 = ephemeral; default 7071. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /**
   * AzureWebJobsStorage as a connection string (Azurite with shared keys), exported to the app's environment.
   * Without it the host reads its storage from the settings, as the real host does: AzureWebJobsStorage, or the
   * identity-based AzureWebJobsStorage__* settings (storageConnection.ts).
   */
  storageConnectionString?: string;
  /**
   * The platform's managed identity endpoint (App Service's IDENTITY_ENDPOINT and IDENTITY_HEADER), set in the
   * environment of the host and the app as App Service sets it: DefaultAzureCredential and ManagedIdentityCredential
   * get the app's tokens there, and so do the host's identity-based connections.
   */
  identityEndpoint?: { endpoint: string; header: string };
  extensions?: HostExtension[];
  /** Extra environment for the app (applied after local.settings.json, restored on stop). */
  env?: Record<string, string>;
  /** pino level, default "info". */
  logLevel?: string;
  /** pino destination: a stream, a file path or an fd; default stdout. */
  logDestination?: LogDestination;
  /** Use these keys instead of reading/creating the keys file (system keys missing here are created in memory). */
  keys?: HostKeys;
  /** Keys file, default `<appDir>/.local/function-keys.json` (git-ignored). */
  keysFile?: string;
  /** Read `<appDir>/local.settings.json` Values into the environment (default true). */
  loadLocalSettings?: boolean;
  /** Print the start-up banner to stdout (default false; the CLI prints it). */
  printBanner?: boolean;
  /**
   * How long an HTTP request that arrives before the host is running (extensions still starting) is held before it
   * is answered 503 "Function host is not running."; default 30 s, the real host's (http/readiness.ts).
   */
  readyTimeoutMs?: number;
  /**
   * Each function execution as it ends (HTTP, queue, timer, orchestrator episode, entity, activity): what a Flex
   * Consumption bill counts as executions. local/testing/callCounter.ts counts them per job.
   */
  onInvocation?: (record: InvocationRecord) => void;
  /**
   * How long a queue message fetched by a trigger stays invisible while its function runs (renewed at half-time);
   * default 600 s, the Storage extension's. A message held by a killed host is seen again only after it: crash
   * tests shorten it, as they shorten the Durable engine's leases.
   */
  queueHoldSeconds?: number;
}

export interface FunctionsHostHandle {
  /** e.g. http://127.0.0.1:7071 (no trailing slash). */
  baseUrl: string;
  context: HostContext;
  functions(): RegisteredFunction[];
  /** Function, master and system keys (`systemKeys.durabletask_extension` once the Durable engine started). */
  keys: HostKeys;
  /** Human-readable list of functions with trigger and URL, like `func start` prints. */
  banner(): string;
  log: Logger;
  stop(): Promise<void>;
}

let running: string | undefined;

export async function startFunctionsHost(opts: FunctionsHostOptions): Promise<FunctionsHostHandle> {
  if (running) {
    throw new Error(`A Functions host for ${running} is already running in this process; only one host per process is supported`);
  }
  const appDir = path.resolve(opts.appDir);
  const hostJson: HostJson = readHostJson(appDir);
  running = appDir;
  const hostLogger = createHostLogger(opts.logLevel ?? hostJsonLogLevel(hostJson), opts.logDestination);
  const log = hostLogger.log;
  const envRestore = new EnvOverlay();
  const extensions = opts.extensions ?? [];
  let app: LoadedApp | undefined;
  // What has started, so teardown (also after a failed start) stops exactly that, in the host's order:
  // stop taking work (HTTP drained, trigger listeners), then extensions, then appTerminate hooks.
  let listener: HttpListener | undefined;
  let triggers: TriggerListeners | undefined;
  // The listener opens before the extensions start (they need its URL); requests wait on this until the host runs.
  const readiness = new HostReadiness();
  const startedExtensions: HostExtension[] = [];
  let appHooksStarted = false;
  const appHookData: Record<string, unknown> = {};

  const teardown = async (): Promise<void> => {
    // Requests still held for the start (or arriving while the host drains) get their 503 now.
    readiness.markStopped();
    const steps: [string, () => Promise<void> | undefined][] = [
      ['HTTP listener', () => listener?.close()],
      ['trigger listeners', () => triggers?.stop()],
      ...startedExtensions.reverse().map((ext): [string, () => Promise<void>] => [`extension ${ext.name}`, () => ext.stop()]),
      ['appTerminate hooks', () => (appHooksStarted ? runHooks('appTerminate', { hookData: appHookData, appHookData }) : undefined)],
    ];
    for (const [what, step] of steps) {
      try {
        await step();
      } catch (err) {
        log.error({ err }, `Error while stopping the Functions host (${what})`);
      }
    }
    listener = undefined;
    triggers = undefined;
    startedExtensions.length = 0;
    appHooksStarted = false;
    resetRegistrations();
    coreState().systemLog = undefined;
    app?.unload();
    envRestore.restore();
    running = undefined;
  };

  try {
    if (opts.loadLocalSettings ?? true) envRestore.apply(loadLocalSettings(appDir));
    envRestore.apply({ FUNCTIONS_WORKER_RUNTIME: 'node', ...(opts.storageConnectionString ? { AzureWebJobsStorage: opts.storageConnectionString } : {}) });
    if (opts.identityEndpoint) envRestore.apply({ IDENTITY_ENDPOINT: opts.identityEndpoint.endpoint, IDENTITY_HEADER: opts.identityEndpoint.header });
    if (opts.env) envRestore.apply(opts.env);
    // A connection string given to the host is its storage even when the app's settings name another (a test's proxy).
    const storage: StorageConnection = opts.storageConnectionString
      ? { kind: 'connectionString', name: 'AzureWebJobsStorage', connectionString: opts.storageConnectionString }
      : resolveStorageConnection('AzureWebJobsStorage', 'queue', 'The host storage (AzureWebJobsStorage)');

    installCoreModuleRequireProxy();
    resetRegistrations();
    coreState().systemLog = (level, category, message) => {
      const pl = pinoLevel(level);
      if (pl) log[pl]({ category }, message);
    };
    app = loadApp(appDir);
    const model = coreState().programmingModel;
    if (!model) throw new Error(`The app in ${appDir} did not load @azure/functions (no programming model was set)`);
    const capabilities = model.getCapabilities ? await model.getCapabilities(defaultCapabilities()) : {};
    if (capabilities.HttpUri) throw new Error('The app enabled HTTP streaming (app.setup({ enableHttpStream })); the local host does not support it');

    const keysFile = opts.keysFile ?? defaultKeysFile(appDir);
    const keyStore = opts.keys ? new KeyStore(opts.keys) : new KeyStore(loadOrCreateKeys(keysFile), keysFile);
    const keys = keyStore.keys;
    const outputWriters: Record<string, OutputBindingWriter> = { queue: createQueueOutputWriter(hostJson, log) };
    const invoker = new Invoker({ log, extensions, outputWriters, appHookData, onInvocation: opts.onInvocation });
    const functions = (): RegisteredFunction[] => invoker.functions();
    const claimed = new Set(extensions.flatMap((e) => e.triggerTypes));
    const hostDispatched = (): RegisteredFunction[] => functions().filter((f) => !claimed.has(f.trigger.type));
    const routeTable = new RouteTable(hostDispatched(), httpRoutePrefix(hostJson));
    const ingress = new IngressGauge();

    listener = await startHttpListener({
      host: opts.host ?? '127.0.0.1',
      port: opts.port ?? 7071,
      routes: () => routeTable,
      keys,
      extensions,
      invoke: (name, req) => invoker.invoke(name, req),
      log,
      ingress,
      readiness,
      readyTimeoutMs: opts.readyTimeoutMs,
    });
    // durable-functions rewrites its management URLs to localhost:7071 unless this names the real host.
    const baseUrl = listener.baseUrl;
    envRestore.apply({ WEBSITE_HOSTNAME: new URL(baseUrl).host });

    // App-level hooks share one hookData for the app's lifetime, as in the worker.
    appHooksStarted = true;
    await runHooks('appStart', { hookData: appHookData, appHookData, functionAppDirectory: appDir });

    const context: HostContext = {
      functions,
      invoke: (name, req) => invoker.invoke(name, req),
      baseUrl: () => baseUrl,
      webhookUrl: (name) => `${baseUrl}/runtime/webhooks/${name}?code=${encodeURIComponent(keyStore.systemKey(webhookKeyName(name)))}`,
      isWebhookKey: (name, presented) => isWebhookAuthorized(name, presented, keys),
      storage: () => storage,
      hostJson: () => hostJson,
      log,
      ingress,
    };
    for (const ext of extensions) {
      startedExtensions.push(ext);
      await ext.start(context);
    }

    triggers = await startTriggerListeners({
      functions: hostDispatched(),
      scheduleMonitor: new BlobScheduleMonitor(storage, localHostId(appDir)),
      hostJson,
      log,
      invoke: (name, req) => invoker.invoke(name, req),
      ingress,
      queueHoldSeconds: opts.queueHoldSeconds,
    });

    readiness.markReady();
    const banner = (): string => formatBanner(functions(), { routeTable, baseUrl, claimedTriggerTypes: claimed });
    if (opts.printBanner) process.stdout.write(banner() + '\n');
    log.info({ baseUrl, functions: functions().map((f) => f.name) }, 'Functions host started');

    let stopping: Promise<void> | undefined;
    return {
      baseUrl,
      context,
      functions,
      keys,
      banner,
      log,
      stop: () =>
        (stopping ??= teardown().then(() => {
          log.info('Functions host stopped');
          hostLogger.close();
        })),
    };
  } catch (err) {
    await teardown();
    hostLogger.close();
    throw err;
  }
}

async function runHooks(name: 'appStart' | 'appTerminate', context: Record<string, unknown>): Promise<void> {
  const hooks: HookCallback[] = [...coreState().hooks[name]];
  for (const hook of hooks) await hook(context);
}

function defaultCapabilities(): Record<string, string> {
  return {
    RawHttpBodyBytes: 'true',
    RpcHttpTriggerMetadataRemoved: 'true',
    RpcHttpBodyOnly: 'true',
    IgnoreEmptyValuedRpcHttpHeaders: 'true',
    UseNullableValueDictionaryForHttp: 'true',
    WorkerStatus: 'true',
    TypedDataCollection: 'true',
    HandlesWorkerTerminateMessage: 'true',
  };
}

/** Sets environment variables and remembers the previous values so stop() can put them back. */
class EnvOverlay {
  private readonly previous = new Map<string, string | undefined>();

  apply(values: Record<string, string>): void {
    for (const [k, v] of Object.entries(values)) {
      if (!this.previous.has(k)) this.previous.set(k, process.env[k]);
      process.env[k] = v;
    }
  }

  restore(): void {
    for (const [k, v] of this.previous) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    this.previous.clear();
  }
}
