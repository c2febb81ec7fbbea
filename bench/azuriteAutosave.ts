/**
 * What Azurite's save interval costs and what it protects (docs/local-stack.md, "Azurite's own limits"):
 *   - loss:  200 acknowledged table inserts, a SIGKILL of Azurite `d` ms after the last one, a restart on the same
 *            folder: how many inserts are still there;
 *   - speed: `--inserts` (1500) sequential inserts into a store already holding `--fill` entities of 2 KB (the Durable history
 *            of a few demo jobs is of that order), so each autosave serializes a store of that size.
 * For each interval given (default 5000, Azurite's own, and 1000, the stack's).
 * Run: node --import tsx bench/azuriteAutosave.ts [--fill 5000] [--inserts 1500] [--speed-only]
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { TableClient } from '@azure/data-tables';
import { startAzurite, type AzuriteHandle } from '../local/azurite';
import { numberArg } from './lib/args';

const FILL = numberArg('fill', 5000);
const TIMED = numberArg('inserts', 1500);
const INTERVALS = [5000, 1000];
const DELAYS = [0, 500, 1500, 6000];

const table = (a: AzuriteHandle, name: string) => TableClient.fromConnectionString(a.connectionString(), name, { allowInsecureConnection: true });

async function insert(t: TableClient, pk: string, n: number, payload = ''): Promise<void> {
  for (let i = 0; i < n; i++) await t.createEntity({ partitionKey: pk, rowKey: String(i).padStart(6, '0'), payload });
}

async function count(t: TableClient, pk: string): Promise<number> {
  let n = 0;
  for await (const _ of t.listEntities({ queryOptions: { filter: `PartitionKey eq '${pk}'` } })) n++;
  return n;
}

async function loss(autosaveMs: number, delayMs: number): Promise<number> {
  const location = await mkdtemp(path.join(tmpdir(), 'azurite-autosave-'));
  try {
    const a = await startAzurite({ location, autosaveMs });
    await table(a, 'loss').createTable();
    await insert(table(a, 'loss'), 'p', 200);
    await new Promise((r) => setTimeout(r, delayMs));
    process.kill(a.pid, 'SIGKILL');
    await new Promise((r) => setTimeout(r, 300));
    const b = await startAzurite({ location, autosaveMs });
    const kept = await count(table(b, 'loss'), 'p').catch(() => 0);
    await b.stop();
    return kept;
  } finally {
    await rm(location, { recursive: true, force: true });
  }
}

async function speed(autosaveMs: number): Promise<number> {
  const location = await mkdtemp(path.join(tmpdir(), 'azurite-autosave-'));
  try {
    const a = await startAzurite({ location, autosaveMs });
    const t = table(a, 'speed');
    await t.createTable();
    const payload = 'x'.repeat(2048);
    await Promise.all(Array.from({ length: 10 }, (_, w) => insert(t, `fill${w}`, FILL / 10, payload)));
    const started = performance.now();
    await insert(t, 'timed', TIMED);
    const ms = performance.now() - started;
    await a.stop();
    return ms;
  } finally {
    await rm(location, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  for (const interval of INTERVALS) {
    const kept: string[] = [];
    if (!process.argv.includes('--speed-only')) for (const d of DELAYS) kept.push(`${d} ms: ${await loss(interval, d)}/200`);
    const ms = await speed(interval);
    console.log(
      `autosave ${interval} ms | kept after SIGKILL ${kept.join(', ')} | ${TIMED} inserts into a ${FILL}-entity store (2 KB each): ${Math.round(ms)} ms (${Math.round((TIMED * 1000) / ms)}/s)`,
    );
  }
}

void main();
