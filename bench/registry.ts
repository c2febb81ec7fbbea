/**
 * How long 40 emulated nodes take to hold the demo image, pulling with real `docker pull` processes from the local
 * registry (limit 10 concurrent pulls, bandwidth cap), compared with the physical limit (bytes / bandwidth):
 *   - burst:         all nodes at once, one attempt each (what an image preload on every node does);
 *   - burst+retry:   all at once, failed nodes retry after Retry-After with jitter until they hold it;
 *   - window(W):     W pulls in flight at a time (the orchestrator's staggered pulls).
 * Run: node --import tsx bench/registry.ts [--nodes 40] [--limit 10] [--window 10] [--filler-mb 4] [--bandwidth-mb 32]
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buildDemoImage } from '../examples/images/buildDemoImage';
import { RegistryHandle, startRegistry } from '../local/registry';
import { numberArg } from './lib/args';

const BIN = path.resolve(__dirname, '../local/batch/nodetools/bin');

const NODES = numberArg('nodes', 40);
const LIMIT = numberArg('limit', 10);
const WINDOW = numberArg('window', 10);
const FILLER = Math.round(numberArg('filler-mb', 4) * 1024 * 1024);
const BANDWIDTH = Math.round(numberArg('bandwidth-mb', 32) * 1024 * 1024);

function pull(root: string, id: string, ref: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(
      path.join(BIN, 'docker'),
      ['pull', '-q', ref],
      {
        env: {
          ...process.env,
          PATH: `${BIN}:${process.env.PATH}`,
          AZ_BATCH_NODE_ROOT_DIR: path.join(root, id),
          AZ_BATCH_NODE_ID: id,
          AZ_BATCH_POOL_ID: 'bench',
        },
      },
      (err) => resolve(!err),
    );
  });
}

interface Outcome {
  scenario: string;
  seconds: number;
  held: number;
  failedPulls: number;
  total429: number;
  maxConcurrent: number;
  mbServed: number;
}

async function scenario(name: string, registry: RegistryHandle, run: (ids: string[], root: string) => Promise<boolean[]>): Promise<Outcome> {
  const root = await mkdtemp(path.join(tmpdir(), 'bench-registry-'));
  try {
    const ids = Array.from({ length: NODES }, (_, i) => `node-${i}`);
    for (const id of ids) await mkdir(path.join(root, id), { recursive: true });
    registry.resetStats();
    const t0 = performance.now();
    const held = await run(ids, root);
    const seconds = (performance.now() - t0) / 1000;
    const s = registry.stats();
    const failedPulls = Object.values(s.perClient).reduce((n, c) => n + c.rejected429, 0);
    return {
      scenario: name,
      seconds,
      held: held.filter(Boolean).length,
      failedPulls: Math.min(failedPulls, s.total429),
      total429: s.total429,
      maxConcurrent: s.maxConcurrentObserved,
      mbServed: s.bytesServed / 1024 / 1024,
    };
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const image = await buildDemoImage({ fillerBytes: FILLER });
  const imageBytes = image.manifestBytes.length + [...image.blobs.values()].reduce((n, b) => n + b.length, 0);
  const registry = await startRegistry({ images: [image], maxConcurrentPulls: LIMIT, bandwidthBytesPerSec: BANDWIDTH });
  const ref = `${registry.host}/hpc/mpi-demo:1.0`;
  // Warm the node tools' bundle so that the first scenario does not pay for building it.
  const warm = await mkdtemp(path.join(tmpdir(), 'bench-warm-'));
  await pull(warm, 'warm', `${registry.host}/hpc/none:0`);
  await rm(warm, { recursive: true, force: true });
  registry.resetStats();
  const out: Outcome[] = [];
  try {
    out.push(await scenario('burst (1 attempt)', registry, (ids, root) => Promise.all(ids.map((id) => pull(root, id, ref)))));
    out.push(
      await scenario('burst + retry', registry, (ids, root) =>
        Promise.all(
          ids.map(async (id) => {
            for (let attempt = 0; attempt < 50; attempt++) {
              if (await pull(root, id, ref)) return true;
              await new Promise((r) => setTimeout(r, 1000 + Math.random() * 2000));
            }
            return false;
          }),
        ),
      ),
    );
    out.push(
      await scenario(`window(${WINDOW})`, registry, async (ids, root) => {
        const held: boolean[] = [];
        let next = 0;
        await Promise.all(
          Array.from({ length: WINDOW }, async () => {
            while (next < ids.length) {
              const i = next++;
              held[i] = await pull(root, ids[i], ref);
            }
          }),
        );
        return held;
      }),
    );
  } finally {
    await registry.stop();
  }
  const physical = (NODES * imageBytes) / BANDWIDTH;
  console.log(
    `registry bench: ${NODES} nodes, image ${(imageBytes / 1024 / 1024).toFixed(2)} MiB, limit ${LIMIT} concurrent pulls, bandwidth ${(BANDWIDTH / 1024 / 1024).toFixed(0)} MiB/s`,
  );
  console.log(`physical limit (all bytes / bandwidth): ${physical.toFixed(2)} s`);
  console.log('scenario            seconds  x-limit  nodes-holding  429s  max-concurrent  MiB-served');
  for (const o of out) {
    console.log(
      `${o.scenario.padEnd(19)} ${o.seconds.toFixed(2).padStart(7)}  ${(o.seconds / physical).toFixed(2).padStart(7)}  ${`${o.held}/${NODES}`.padStart(13)}  ${String(o.total429).padStart(4)}  ${String(o.maxConcurrent).padStart(14)}  ${o.mbServed.toFixed(1).padStart(10)}`,
    );
  }
}

main().catch((err: Error) => {
  console.error(err.stack ?? err.message);
  process.exit(1);
});
