/**
 * The contract between the local Functions host (local/host) and the extensions plugged into it
 * (the Durable engine in local/durable). It mirrors how the real host splits work: the host owns
 * function registration, invocation through the library's programming model and the HTTP listener;
 * binding extensions own their trigger types, their input bindings and their webhook routes.
 *
 * Keep this file small and stable: both sides build against it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { StorageConnection } from './storageConnection';

/** RpcTypedData as the worker protocol defines it: exactly one field is set. */
export interface TypedData {
  string?: string;
  json?: string;
  bytes?: Uint8Array;
  stream?: Uint8Array;
  http?: unknown;
  int?: number;
  double?: number;
  collectionBytes?: { bytes: Uint8Array[] };
  collectionString?: { string: string[] };
  collectionDouble?: { double: number[] };
  collectionSint64?: { sint64: number[] };
}

/** One binding of a registered function, as `toCoreFunctionMetadata` produced it. */
export interface BindingInfo {
  name: string;
  type: string;
  direction: 'in' | 'out' | 'inout';
  [property: string]: unknown;
}

/** A function captured from `registerFunction`. */
export interface RegisteredFunction {
  name: string;
  bindings: Record<string, BindingInfo>;
  /** The binding whose type ends in "Trigger" (the library guarantees exactly one). */
  trigger: BindingInfo;
  retryOptions?: unknown;
}

export interface InvocationRequest {
  /** Trigger and extra input data, keyed by binding name (the host adds extension-provided inputs itself). */
  inputData: { name: string; data: TypedData | undefined }[];
  triggerMetadata?: Record<string, TypedData>;
  /** Absolute URL of the request that caused the invocation, when there is one (HTTP triggers). */
  requestUrl?: string;
}

export interface InvocationResult {
  invocationId: string;
  /** `response.returnValue` from the library's InvocationModel.getResponse. */
  returnValue?: TypedData;
  /** `response.outputData` (extra outputs such as queue messages). */
  outputData: { name: string; data: TypedData }[];
  /** The raw value the handler returned (before conversion), for in-process extensions. */
  rawResult?: unknown;
  /** Set when the handler (or a hook) threw; the invocation failed. */
  error?: Error;
}

/** What the host offers an extension once it starts. */
export interface HostContext {
  /** Every function registered by the app. */
  functions(): RegisteredFunction[];
  /** Invoke a function through the programming model, exactly as a trigger would. */
  invoke(functionName: string, request: InvocationRequest): Promise<InvocationResult>;
  /** Base URL of the host's HTTP listener, e.g. http://127.0.0.1:7071 (no trailing slash). */
  baseUrl(): string;
  /**
   * The extension's webhook URL with its system key, `<baseUrl>/runtime/webhooks/<name>?code=<key>` (the host's
   * IWebHookProvider.GetUrl). The key `<name>_extension` is created on first use. The host answers 401 to any
   * /runtime/webhooks/<name>/... request that presents neither this key nor the master key.
   */
  webhookUrl(extensionName: string): string;
  /** Whether a presented key opens the webhook of `extensionName` (its system key or the master key). */
  isWebhookKey(extensionName: string, presented: string | undefined): boolean;
  /** The host's storage, AzureWebJobsStorage: a connection string or an identity-based connection (storageConnection.ts). */
  storage(): StorageConnection;
  /** Parsed host.json. */
  hostJson(): Record<string, unknown>;
  /** Structured logger (pino). */
  log: import('pino').Logger;
  /**
   * HTTP requests and queue messages the host's listeners are working on (./ingress.ts): an extension doing
   * background work (the Durable engine) does less of it while this is not zero.
   */
  ingress: import('./ingress').Ingress;
}

export interface HostExtension {
  readonly name: string;
  /** Trigger binding types this extension dispatches (e.g. orchestrationTrigger, activityTrigger). */
  readonly triggerTypes: readonly string[];
  /** Input binding types this extension provides data for (e.g. durableClient). */
  readonly inputBindingTypes: readonly string[];
  /** Data for an input binding of one of `inputBindingTypes`, computed per invocation. */
  provideInputBinding?(binding: BindingInfo, invocation: { functionName: string; requestUrl?: string }): Promise<TypedData>;
  /**
   * Offered every HTTP request before function routing. Return true when the extension answered it
   * (e.g. /runtime/webhooks/durabletask/...). Requests under /runtime/webhooks/ arrive here only once the
   * host has checked their system key.
   */
  handleHttp?(req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean>;
  /** Called after the app is loaded and the HTTP listener is up. */
  start(host: HostContext): Promise<void>;
  /** Called on shutdown; must leave no timers, sockets or child processes behind. */
  stop(): Promise<void>;
}
