/** Shared by the ops stack tests: small job specs, a sweep wired to a running stack, Batch request timestamps. */
import type { BatchServiceClient } from '@azure/batch';
import { DefaultAzureCredential } from '@azure/identity';
import { stringify } from 'yaml';
import type { Stack } from '../../local/stack';
import { STAGING_ACCOUNTS } from '../../local/azurite';
import { loadConfig, type AppConfig } from '../../shared/adapters/config';
import { createBatchContext } from '../../shared/adapters/batch';
import { JobStore } from '../../shared/adapters/state';
import { blobAccount } from '../../shared/adapters/storage/clients';
import type { OrchestrationControl, SweepDeps } from '../../shared/adapters/ops/sweep';
import type { SweepSettings } from '../../shared/core/ops/sweepRules';

/** A native Open MPI job with no input data: the MPI program is a shell command. */
export function smallSpec(
  id: string,
  opts: {
    nodes?: number;
    command: string;
    limits?: Record<string, unknown>;
    pool?: Record<string, unknown>;
    tags?: Record<string, string>;
    data?: unknown;
    container?: Record<string, unknown>;
  },
): string {
  return stringify({
    id,
    name: id,
    tags: opts.tags ?? { suite: 'ops' },
    pool: opts.pool ?? { vmSize: 'Standard_D8s_v5', nodes: opts.nodes ?? 2 },
    container: opts.container ?? { runtime: 'none' },
    data: opts.data ?? { inputs: [] },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: opts.command },
    limits: { maxWallClock: 'PT10M', ...(opts.limits ?? {}) },
  });
}

/** Batch as the operator sees it (tokens of the local tenant's admin on a keyless stack). */
export function batchClient(stack: Stack): BatchServiceClient {
  return stack.operator.batch();
}

/**
 * The job store as the app builds it from its settings (shared/services.ts): on a keyless stack with the app's
 * managed identity, whose IDENTITY_ENDPOINT the in-process host has set in this process.
 */
export function appJobStore(cfg: AppConfig): JobStore {
  const host = cfg.hostStorage;
  return host.kind === 'connectionString'
    ? JobStore.fromConnectionString(host.connectionString)
    : JobStore.fromTableEndpoint(host.tableEndpoint, new DefaultAzureCredential());
}

/** The Durable management API URL of an instance (`op`: "/terminate"...) on the stack's host, with the webhook's system key. */
export function durableInstanceUrl(stack: Pick<Stack, 'baseUrl' | 'host'>, id: string, op = '', query: Record<string, string> = {}): string {
  const url = new URL(`${stack.baseUrl}/runtime/webhooks/durabletask/instances/${encodeURIComponent(id)}${op}`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
  url.searchParams.set('code', stack.host.keys.systemKeys?.durabletask_extension ?? stack.host.keys.masterKey);
  return url.toString();
}

/**
 * The Durable client's two calls over the Durable HTTP management API of the running host. The sweep function
 * uses the real Durable client binding; tests run extra sweeps from the test process, where no binding exists.
 */
export function httpDurableControl(stack: Pick<Stack, 'baseUrl' | 'host'>): OrchestrationControl {
  return {
    async status(id) {
      const res = await fetch(durableInstanceUrl(stack, id, '', { showInput: 'false' }));
      if (res.status === 404) return undefined;
      if (!res.ok) throw new Error(`durable status of ${id}: ${res.status} ${await res.text()}`);
      const s = (await res.json()) as { runtimeStatus: string; lastUpdatedTime: string; customStatus?: { updatedAt?: string }; output?: unknown };
      return {
        runtimeStatus: s.runtimeStatus,
        lastUpdatedTime: s.lastUpdatedTime,
        progressAt: s.customStatus?.updatedAt,
        terminationReason: s.runtimeStatus === 'Terminated' && typeof s.output === 'string' ? s.output : undefined,
      };
    },
    async terminate(id, reason) {
      const res = await fetch(durableInstanceUrl(stack, id, '/terminate', { reason }), { method: 'POST' });
      if (res.status !== 202 && res.status !== 410) throw new Error(`durable terminate of ${id}: ${res.status} ${await res.text()}`);
    },
    async purge(id) {
      const res = await fetch(durableInstanceUrl(stack, id), { method: 'DELETE' });
      if (res.status !== 200 && res.status !== 404) throw new Error(`durable purge of ${id}: ${res.status} ${await res.text()}`);
    },
  };
}

export function sweepDeps(stack: Stack, settings: SweepSettings): SweepDeps {
  const cfg = loadConfig(stack.settings);
  return {
    batch: createBatchContext(cfg),
    store: appJobStore(cfg),
    orchestrations: httpDurableControl(stack),
    stagingAccounts: cfg.stagingAccounts.map(blobAccount),
    hostBlobs: blobAccount(cfg.hostStorage).service,
    settings,
  };
}

export const STAGING_NAMES = STAGING_ACCOUNTS.map((a) => a.name);

/** Records when the emulator answered each Batch request (the app's view: request sent ≈ answered on loopback). */
export class BatchRequestLog {
  readonly entries: { at: number; method: string; path: string; status: number }[] = [];
  readonly onExchange = (ex: { method: string; path: string; status: number }) => {
    this.entries.push({ at: Date.now(), method: ex.method, path: ex.path, status: ex.status });
  };
  find(method: string, path: RegExp) {
    return this.entries.filter((e) => e.method === method && path.test(e.path));
  }
}
