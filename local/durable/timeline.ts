/**
 * Prints an orchestration instance's history as a readable timeline, straight from the task hub's
 * tables (works while the stack runs or after it stopped, as long as Azurite keeps the data).
 *
 *   node --import tsx local/durable/timeline.ts <instanceId> [--conn <connection string>] [--hub <task hub>]
 *
 * --conn defaults to $AzureWebJobsStorage; --hub defaults to host.json's extensions.durableTask.hubName
 * in the current directory.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Command } from 'commander';
import { EventType, describeEvent, type HistoryEvent } from './history';
import { DurableStore, type InstanceRow } from './store';
import type { InstanceState } from './state';

export function formatTimeline(row: InstanceRow | undefined, state: InstanceState | undefined, history: HistoryEvent[]): string {
  const out: string[] = [];
  if (row) {
    out.push(`instance ${row.instanceId}  orchestrator ${row.name}  status ${row.runtimeStatus}`);
    out.push(`created ${row.createdTime}  updated ${row.lastUpdatedTime}  execution ${row.executionId}`);
    if (row.input !== undefined) out.push(`input  ${clip(row.input, 300)}`);
    if (row.customStatus !== undefined) out.push(`custom ${clip(row.customStatus, 300)}`);
    if (row.output !== undefined) out.push(`output ${clip(row.output, 1000)}`);
  }
  if (state) out.push(`engine: ${state.episodes} episodes, next sequence id ${state.nextSeq}, ${Object.keys(state.open).length} open tasks${state.suspended ? ', suspended' : ''}`);
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
    .option('--hub <hubName>', 'task hub name (default from ./host.json, else TestHubName)')
    .parse(argv);
  const [instanceId] = program.args;
  const o = program.opts<{ conn?: string; hub?: string }>();
  const conn = o.conn ?? process.env.AzureWebJobsStorage;
  if (!conn) throw new Error('No storage connection string: pass --conn or set AzureWebJobsStorage');
  const store = new DurableStore(conn, o.hub ?? defaultHub() ?? 'TestHubName');
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
