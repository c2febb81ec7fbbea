/**
 * Durable engine benchmark: fan-out/fan-in of 1,000 no-op activities and a sequential chain of 100,
 * on the local stack (Azurite + local host + engine, this process). Prints activities/s, episodes/s
 * and the engine's peak RSS beside the published Azure Storage provider targets.
 *   node --import tsx bench/durable.ts [--fanout 1000] [--chain 100]
 */
import * as path from 'node:path';
import { startAzurite } from '../local/azurite';
import { startFunctionsHost } from '../local/host';
import { createDurableExtension } from '../local/durable';
import { numberArg } from './lib/args';

const APP = path.resolve(__dirname, '../tests/fixtures/durable-app');

async function main(): Promise<void> {
  const fanout = numberArg('fanout', 1000);
  const chain = numberArg('chain', 100);
  const azurite = await startAzurite();
  const durable = createDurableExtension({ maxPollingIntervalMs: 200 });
  const host = await startFunctionsHost({
    appDir: APP,
    port: 0,
    storageConnectionString: azurite.connectionString(),
    keys: { functionKey: 'k', masterKey: 'm' },
    logLevel: process.env.BENCH_LOG_LEVEL ?? 'warn',
    logDestination: 2,
    extensions: [durable],
  });
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peakRss = Math.max(peakRss, process.memoryUsage().rss);
  }, 50);
  // The management API as a client outside the app calls it: the webhook, with the master key.
  const api = `${host.baseUrl}/runtime/webhooks/durabletask`;
  const code = `code=${host.keys.masterKey}`;

  async function run(name: string, input: number): Promise<{ totalMs: number; activitiesDoneMs: number; episodes: number }> {
    const before = durable.stats()!;
    const t0 = performance.now();
    const res = await fetch(`${api}/orchestrators/${name}?${code}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(input),
    });
    const { id } = (await res.json()) as { id: string };
    let activitiesDoneMs = 0;
    for (;;) {
      const st = durable.stats()!;
      if (!activitiesDoneMs && st.activitiesCompleted - before.activitiesCompleted >= input) activitiesDoneMs = performance.now() - t0;
      const s = (await (await fetch(`${api}/instances/${id}?${code}`)).json()) as { runtimeStatus: string; output: unknown };
      if (s.runtimeStatus === 'Completed') break;
      if (s.runtimeStatus === 'Failed' || s.runtimeStatus === 'Terminated') throw new Error(`${name} ${s.runtimeStatus}: ${JSON.stringify(s.output)}`);
      await new Promise((r) => setTimeout(r, 20));
    }
    const totalMs = performance.now() - t0;
    return { totalMs, activitiesDoneMs: activitiesDoneMs || totalMs, episodes: durable.stats()!.episodes - before.episodes };
  }

  try {
    const opts = durable.options()!;
    const f = await run('FanOutNoop', fanout);
    const c = await run('SequenceNoop', chain);
    const rate = (n: number, ms: number): string => (n / (ms / 1000)).toFixed(1);
    const lines = [
      `Durable engine benchmark (local stack: Azurite + local host + engine in one Node ${process.version} process; ${opts.maxConcurrentActivityFunctions} concurrent activities, ${opts.maxConcurrentOrchestratorFunctions} orchestrator episodes)`,
      '',
      `| Scenario | Measured here | Azure Storage provider target (A1 VM, per instance) |`,
      `|---|---|---|`,
      `| Fan-out/fan-in of ${fanout} no-op activities | ${rate(fanout, f.totalMs)} activities/s end to end (${(f.totalMs / 1000).toFixed(2)} s); all activities done after ${(f.activitiesDoneMs / 1000).toFixed(2)} s = ${rate(fanout, f.activitiesDoneMs)} fan-out activities/s; ${f.episodes} episodes = ${rate(f.episodes, f.totalMs)} episodes/s | 100 fan-out activities/s, 150 fan-in responses/s |`,
      `| Sequential chain of ${chain} no-op activities | ${rate(chain, c.totalMs)} activities/s (${(c.totalMs / 1000).toFixed(2)} s); ${c.episodes} episodes = ${rate(c.episodes, c.totalMs)} episodes/s | 5 sequential activities/s |`,
      `| Engine peak RSS (host + engine process; Azurite is a separate process) | ${(peakRss / 1024 / 1024).toFixed(0)} MiB | - |`,
      '',
      `Aim on this 2-core machine: >= 200 fan-out activities/s and >= 20 sequential activities/s.`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
  } finally {
    clearInterval(sampler);
    await host.stop();
    await azurite.stop();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
