/**
 * Engine settings from host.json `extensions.durableTask` with the Durable extension's defaults,
 * overridable per extension instance (tests use short polling intervals).
 */
import { cpus } from 'node:os';

export interface DurableOptions {
  /** Task hub; default from host.json extensions.durableTask.hubName, else "TestHubName" (the extension's local default). */
  hubName?: string;
  /** Default 10 x processor count, as the Durable extension. */
  maxConcurrentActivityFunctions?: number;
  /** Default 10 x processor count, as the Durable extension. */
  maxConcurrentOrchestratorFunctions?: number;
  /** Longest idle wait between queue polls (default 1000 ms; the provider's own default is 30 s). */
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
    maxPollingIntervalMs: opts.maxPollingIntervalMs ?? 1000,
    controlVisibilitySeconds: opts.controlVisibilitySeconds ?? 20,
    workItemVisibilitySeconds: opts.workItemVisibilitySeconds ?? 60,
    statusPageSize: opts.statusPageSize ?? 100,
    rpcPort: opts.rpcPort ?? 0,
    maxConcurrentWhileHostBusy: opts.maxConcurrentWhileHostBusy ?? 2,
  };
}
