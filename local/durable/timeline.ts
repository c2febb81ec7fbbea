/**
 * Prints an orchestration instance's history as a readable timeline, straight from the task hub's
 * tables (works while the stack runs or after it stopped, as long as Azurite keeps the data).
 *
 *   node --import tsx local/durable/timeline.ts <instanceId> [--conn <connection string> | --data <dir>] [--hub <task hub>]
 *
 * --conn defaults to $AzureWebJobsStorage; without either, the running `npm start` stack of --data (default
 * .local/stack) is read through its supervisor.json: a keyless stack with the local tenant's operator token (from
 * its identity service) over https, a shared-key one with Azurite's development key. --hub defaults to host.json's
 * extensions.durableTask.hubName in the current directory.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { EventType, describeEvent, type HistoryEvent } from './history';
import { DurableStore, type InstanceRow } from './store';
import type { InstanceState } from './state';
import type { StorageConnection } from '../host/storageConnection';
import { readRuntime } from '../supervisor/runtime';
import { DEV_STORE_ACCOUNT, connectionStringFor } from '../azurite/accounts';
import { OPERATOR_USER } from '../identity/managedIdentities';
import { remoteTenantCredential } from '../identity/localCredential';
import { trustCertificateInProcess } from '../identity/processTrust';

/** The host storage of a running `npm start` stack, as its operator reaches it. */
export function supervisedStackStorage(dataDir: string): StorageConnection {
  const r = readRuntime(dataDir);
  if (!r) throw new Error(`No running stack in ${dataDir} (no supervisor.json): pass --conn, or --data of a running npm start`);
  if (!r.keyless) {
    const port = (u: string) => Number(new URL(u).port);
    const ports = { host: '127.0.0.1', blob: port(r.azurite.blob), queue: port(r.azurite.queue), table: port(r.azurite.table) };
    return { kind: 'connectionString', name: 'AzureWebJobsStorage', connectionString: connectionStringFor(ports, DEV_STORE_ACCOUNT) };
  }
  trustCertificateInProcess(readFileSync(r.identity.caFile, 'utf8'));
  return {
    kind: 'identity',
    name: 'AzureWebJobsStorage',
    serviceUris: { blob: r.azurite.blob, queue: r.azurite.queue, table: r.azurite.table },
    credential: remoteTenantCredential(r.identity.httpUrl, { user: OPERATOR_USER }),
  };
}

export function formatTimeline(row: InstanceRow | undefined, state: InstanceState | undefined, history: HistoryEvent[]): string {
  const out: string[] = [];
  if (row) {
    out.push(`instance ${row.instanceId}  orchestrator ${row.name}  status ${row.runtimeStatus}`);
    out.push(`created ${row.createdTime}  updated ${row.lastUpdatedTime}  execution ${row.executionId}`);
    if (row.input !== undefined) out.push(`input  ${clip(row.input, 300)}`);
    if (row.customStatus !== undefined) out.push(`custom ${clip(row.customStatus, 300)}`);
    if (row.output !== undefined) out.push(`output ${clip(row.output, 1000)}`);
  }
  if (state)
    out.push(
      `engine: ${state.episodes} episodes, next sequence id ${state.nextSeq}, ${Object.keys(state.open).length} open tasks${state.suspended ? ', suspended' : ''}`,
    );
  out.push('');
  const t0 = history.length ? Date.parse(history[0].Timestamp) : 0;
  let episode = 0;
  for (const e of history) {
    if (e.EventType === EventType.OrchestratorStarted) {
      episode += 1;
      out.push(`-- episode ${episode} --`);
      continue;
    }
    if (e.EventType === EventType.OrchestratorCompleted) continue;
    const offset = ((Date.parse(e.Timestamp) - t0) / 1000).toFixed(3).padStart(9);
    out.push(`  +${offset}s  ${describeEvent(e)}`);
  }
  return out.join('\n');
}

function clip(s: string, n: number): string {
  return s.length <= n ? s : `${s.slice(0, n)}…`;
}

function defaultHub(): string | undefined {
  try {
    const hj = JSON.parse(readFileSync(path.resolve('host.json'), 'utf8')) as { extensions?: { durableTask?: { hubName?: string } } };
    return hj.extensions?.durableTask?.hubName;
  } catch {
    return undefined;
  }
}

async function main(argv: string[]): Promise<void> {
  const program = new Command()
    .name('timeline')
    .argument('<instanceId>', 'orchestration instance id')
    .option('--conn <connectionString>', 'storage connection string (default $AzureWebJobsStorage)')
    .option('--data <dir>', 'the data folder of a running `npm start` (default .local/stack), when no connection string is given')
    .option('--hub <hubName>', 'task hub name (default from ./host.json, else TestHubName)')
    .parse(argv);
  const [instanceId] = program.args;
  const o = program.opts<{ conn?: string; data?: string; hub?: string }>();
  const conn = o.conn ?? process.env.AzureWebJobsStorage;
  const storage = conn ?? supervisedStackStorage(path.resolve(o.data ?? path.join('.local', 'stack')));
  const store = new DurableStore(storage, o.hub ?? defaultHub() ?? 'TestHubName');
  const row = await store.getInstance(instanceId);
  const loaded = await store.load(instanceId);
  if (!row && !loaded) throw new Error(`No instance '${instanceId}' in task hub '${store.hubName}'`);
  process.stdout.write(formatTimeline(row, loaded?.state, loaded?.history ?? []) + '\n');
}

if (require.main === module) {
  main(process.argv).catch((err: unknown) => {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  });
}
