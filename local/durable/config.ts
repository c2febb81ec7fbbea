/**
 * Engine settings from host.json `extensions.durableTask` with the Durable extension's defaults,
 * overridable per extension instance (tests use short polling intervals).
 */
import { cpus } from 'node:os';
import { parseTimeSpan } from '../host/hostJson';

export interface DurableOptions {
  /** Task hub; default from host.json extensions.durableTask.hubName, else "TestHubName" (the extension's local default). */
  hubName?: string;
  /** Default 10 x processor count, as the Durable extension. */
  maxConcurrentActivityFunctions?: number;
  /** Default 10 x processor count, as the Durable extension. */
  maxConcurrentOrchestratorFunctions?: number;
  /**
   * Longest idle wait between queue polls: host.json extensions.durableTask.storageProvider.maxQueuePollingInterval,
   * else the provider's own default of 30 s. Work this process sends wakes the pollers at once (./poller.ts), so the
   * idle polls only find what another process sent or a message whose lease ran out (a host killed mid-episode).
   */
  maxPollingIntervalMs?: number;
  /** How long a received control message stays invisible (default 20 s). */
  controlVisibilitySeconds?: number;
  /** How long a received work item stays invisible; renewed while the activity runs (default 60 s). */
  workItemVisibilitySeconds?: number;
  /** Instances per page of GET /instances when the caller gives no `top` (default 100, as the extension). */
  statusPageSize?: number;
  /** Port of the loopback RPC endpoint (the extension's LocalHttpListener; Azure uses 17071). Default 0: any free port. */
  rpcPort?: number;
  /**
   * The fewest episodes, and separately activities, the engine keeps running however busy the host's listeners are
   * (local only, default 2). Below the limits above, the engine gives up two slots of each per HTTP request or queue
   * message in flight (HostContext.ingress, ./hostLoad.ts): the whole stack shares one machine and one Azurite, and a
   * submission should cost its own writes, not wait behind the pipelines earlier submissions started.
   */
  maxConcurrentWhileHostBusy?: number;
}

export type ResolvedOptions = Required<DurableOptions>;

export function resolveOptions(hostJson: Record<string, unknown>, opts: DurableOptions = {}): ResolvedOptions {
  const extensions = (hostJson.extensions ?? {}) as Record<string, unknown>;
  const dt = (extensions.durableTask ?? {}) as Record<string, unknown>;
  const cores = Math.max(1, cpus().length);
  const num = (v: unknown, fallback: number, what: string): number => {
    if (v === undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
      throw new Error(`host.json extensions.durableTask.${what} must be a positive integer, got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const hubName = opts.hubName ?? (typeof dt.hubName === 'string' ? dt.hubName : 'TestHubName');
  return {
    hubName,
    maxConcurrentActivityFunctions: opts.maxConcurrentActivityFunctions ?? num(dt.maxConcurrentActivityFunctions, 10 * cores, 'maxConcurrentActivityFunctions'),
    maxConcurrentOrchestratorFunctions:
      opts.maxConcurrentOrchestratorFunctions ?? num(dt.maxConcurrentOrchestratorFunctions, 10 * cores, 'maxConcurrentOrchestratorFunctions'),
    maxPollingIntervalMs: opts.maxPollingIntervalMs ?? maxQueuePollingIntervalMs(dt),
    controlVisibilitySeconds: opts.controlVisibilitySeconds ?? 20,
    workItemVisibilitySeconds: opts.workItemVisibilitySeconds ?? 60,
    statusPageSize: opts.statusPageSize ?? 100,
    rpcPort: opts.rpcPort ?? 0,
    maxConcurrentWhileHostBusy: opts.maxConcurrentWhileHostBusy ?? 2,
  };
}

/** The Azure Storage provider's default for maxQueuePollingInterval (Durable Functions docs, host.json reference). */
const PROVIDER_MAX_QUEUE_POLLING_MS = 30_000;

function maxQueuePollingIntervalMs(durableTask: Record<string, unknown>): number {
  const provider = (durableTask.storageProvider ?? {}) as Record<string, unknown>;
  const value = provider.maxQueuePollingInterval;
  if (value === undefined) return PROVIDER_MAX_QUEUE_POLLING_MS;
  const ms = parseTimeSpan(value, 'host.json extensions.durableTask.storageProvider.maxQueuePollingInterval');
  if (!(ms > 0)) throw new Error(`host.json extensions.durableTask.storageProvider.maxQueuePollingInterval must be positive, got ${JSON.stringify(value)}`);
  return ms;
}
