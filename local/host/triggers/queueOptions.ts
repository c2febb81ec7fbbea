/** host.json `extensions.queues` with the Storage extension's defaults (v5). */
import { cpus } from 'node:os';
import { extensionSection, parseTimeSpan, type HostJson } from '../hostJson';

export interface QueueOptions {
  maxPollingIntervalMs: number;
  /** Visibility given back to a message after a failed invocation. */
  visibilityTimeoutMs: number;
  batchSize: number;
  newBatchThreshold: number;
  maxDequeueCount: number;
  messageEncoding: 'base64' | 'none';
}

export const MIN_POLLING_INTERVAL_MS = 100;

export function queueOptions(hostJson: HostJson): QueueOptions {
  const q = extensionSection(hostJson, 'queues');
  const int = (key: string, def: number, min: number, max: number): number => {
    const v = q[key];
    if (v === undefined) return def;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      throw new Error(`host.json extensions.queues.${key} must be an integer in [${min}, ${max}], got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const batchSize = int('batchSize', 16, 1, 32);
  const encoding = q.messageEncoding === undefined ? 'base64' : String(q.messageEncoding).toLowerCase();
  if (encoding !== 'base64' && encoding !== 'none') {
    throw new Error(`host.json extensions.queues.messageEncoding must be "base64" or "none", got ${JSON.stringify(q.messageEncoding)}`);
  }
  const maxPollingIntervalMs =
    q.maxPollingInterval === undefined ? 60_000 : parseTimeSpan(q.maxPollingInterval, 'host.json extensions.queues.maxPollingInterval');
  return {
    maxPollingIntervalMs: Math.max(MIN_POLLING_INTERVAL_MS, maxPollingIntervalMs),
    visibilityTimeoutMs: q.visibilityTimeout === undefined ? 0 : parseTimeSpan(q.visibilityTimeout, 'host.json extensions.queues.visibilityTimeout'),
    batchSize,
    // Default as documented: N * batchSize / 2, N = number of vCPUs.
    newBatchThreshold: int('newBatchThreshold', Math.floor((cpus().length * batchSize) / 2), 0, 10_000),
    maxDequeueCount: int('maxDequeueCount', 5, 1, 10_000),
    messageEncoding: encoding,
  };
}
