/**
 * Chaos: the Functions host + Durable engine is SIGKILLed at random points while several jobs run at once, with the
 * Batch API throttling (429/503 with Retry-After) the whole time. Azurite, the Batch emulator and the registry stand
 * for Azure services and keep running; the host is restarted on the same port after each kill, as the Functions
 * runtime restarts a worker.
 *
 * Kills: right after a POST returned 202 (and a job was put on the job-submissions queue: the queue door), once in
 * each stage some job is in (Provisioning, PullingImages, StagingData, Running, CleaningUp), twice in a row (the
 * second as soon as the restarted host serves), and at a few random moments; one of the stage stops, at random, is
 * graceful (SIGTERM: the host's shutdown runs mid-pipeline) instead of a kill. Which job a kill hits, and the random moments, come from a seeded generator: the seed is printed,
 * and CHAOS_SEED=<seed> replays the same schedule (the machine's timing still varies).
 *
 * Required afterwards: every accepted job reaches a truthful final state (the good ones Succeeded with their
 * output, the failing program Failed with its exit code, the cancelled one Cancelled); a job seen in a final state
 * never shows another one later; no job's pool or Batch job was created twice (the emulator records every create);
 * nothing is left behind. A SIGKILL of the whole stack (Azurite and the emulator too) is tests/e2e/chaosWholeStack.test.ts.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startAzurite, DATA_ACCOUNT, type AzuriteHandle } from '../../local/azurite';
import { uploadDataset } from '../../examples/data/upload';
import { shapeForSize } from '../../examples/data/dataset';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import type { ExchangeRecord } from '../../local/batch/config';
import { seededRandom } from '../../local/batch/faults/faultConfig';
import { startRegistry, type RegistryHandle } from '../../local/registry';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { localAppSettings, localRegistrySettings, REPO_ROOT } from '../../local/stack';
import { operatorAccess } from '../../local/operatorAccess';
import { checkCleanup, mpiOutput, type JobViewLite, type StackClient } from '../../local/jobRunner';
import { isTerminal } from '../../shared/core/state/states';
import { ChildHost } from '../helpers/childHost';

const SEED = Number(process.env.CHAOS_SEED ?? Date.now() % 2_147_483_647);
const KEYS = { functionKey: 'chaos-test-function-key-0123456789', masterKey: 'chaos-test-master-key-0123456789' };

let azurite: AzuriteHandle | undefined;
let batch: BatchEmulatorHandle | undefined;
let registry: RegistryHandle | undefined;
let host: ChildHost | undefined;
let log: WriteStream | undefined;
const exchanges: ExchangeRecord[] = [];

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  log = createWriteStream(path.join(logs, 'e2e-chaos-host.log'), { flags: 'w' });
  azurite = await startAzurite();
  registry = await startRegistry({
    maxConcurrentPulls: 10,
    bandwidthBytesPerSec: 4 * 1024 * 1024,
    images: [await buildDemoImage({ fillerBytes: 2 * 1024 * 1024 })],
  });
  batch = await startBatchEmulator({ nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')], onExchange: (e) => exchanges.push(e) });
  console.log(`chaos seed ${SEED} (replay with CHAOS_SEED=${SEED})`);
}, 120_000);

afterAll(async () => {
  await host?.kill();
  await batch?.stop();
  await registry?.stop();
  await azurite?.stop();
  await new Promise((r) => log?.end(r));
}, 120_000);

interface JobCase {
  id: string;
  spec: Record<string, unknown>;
  expect: 'Succeeded' | 'Failed' | 'Cancelled';
  /** How it is submitted: POST /api/jobs (default) or a message on the job-submissions queue. */
  door?: 'queue';
}

test('SIGKILLs of the host at random points of several concurrent jobs under Batch throttling: truthful ends, nothing created twice, nothing left', async () => {
  const rand = seededRandom(SEED);
  const az = azurite as AzuriteHandle;
  const emu = batch as BatchEmulatorHandle;
  const reg = registry as RegistryHandle;
  const settings = {
    ...localAppSettings(az, emu),
    ...localRegistrySettings(reg.host),
    OPERATOR_API_KEYS: KEYS.functionKey,
    BATCH_RETRY_INITIAL_MS: '200',
    BATCH_RETRY_MAX_MS: '2000',
  };
  const storage = az.connectionString();
  const start = (port: number) => ChildHost.start({ appDir: REPO_ROOT, storage, port, settings, keys: KEYS, log: log as WriteStream, timeoutMs: 90_000 });
  host = await start(0);
  const port = host.port;
  const baseUrl = host.baseUrl;
  // A shared-key stack (the keyless gate is the stack's, not this test's subject): the operator uses the keys.
  const stack: StackClient = { baseUrl, host: { keys: KEYS }, operator: operatorAccess({ batch: emu, storage: az }, undefined) };
  const headers = { 'x-functions-key': KEYS.functionKey };
  const kills: string[] = [];
  const restart = async (why: string, graceful = false) => {
    await (graceful ? (host as ChildHost).stop() : (host as ChildHost).kill());
    kills.push(graceful ? `graceful stop ${why}` : why);
    host = await start(port);
  };

  const mpi = (command: string) => ({ runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command });
  const jobs: JobCase[] = [
    // With input data, so the StagingData stage lasts long enough to be hit.
    {
      id: 'chaos-native',
      expect: 'Succeeded',
      spec: {
        pool: { vmSize: 'Standard_D2s_v5', nodes: 2 },
        data: { inputs: [{ account: DATA_ACCOUNT.name, container: 'inputs', prefix: 'chaos/' }], recordBytes: 64 },
        mpi: mpi('sleep 3; echo "native done with $(ls "$MPIJOB_DATA_DIR" | wc -l) shard(s)"'),
      },
    },
    {
      id: 'chaos-docker',
      expect: 'Succeeded',
      spec: {
        pool: { vmSize: 'Standard_D2s_v5', nodes: 2 },
        container: { runtime: 'docker', images: [`${reg.host}/hpc/mpi-demo:1.0`], pullConcurrency: 1 },
        mpi: mpi('sleep 3; echo "docker done"'),
      },
    },
    { id: 'chaos-exit3', expect: 'Failed', spec: { pool: { vmSize: 'Standard_D2s_v5', nodes: 2 }, mpi: mpi('sleep 2; exit 3') } },
    { id: 'chaos-cancel', expect: 'Cancelled', spec: { pool: { vmSize: 'Standard_D2s_v5', nodes: 2 }, mpi: mpi('sleep 300') } },
    { id: 'chaos-queue', expect: 'Succeeded', door: 'queue', spec: { pool: { vmSize: 'Standard_D2s_v5', nodes: 1 }, mpi: mpi('sleep 1; echo "queue done"') } },
  ];
  const submissions = stack.operator.queue('job-submissions');

  await uploadDataset(az.connectionString(DATA_ACCOUNT.name), 'inputs', 'chaos/', shapeForSize(40));
  // Throttling from here on; the adapter retries it (429 and 503 with Retry-After).
  emu.setFaults({ seed: SEED, throttle: { rate429: 0.08, rate503: 0.04, retryAfterSeconds: 1 } });

  // Every state each job is seen in, in order, whatever the host's state: a final state may never change afterwards.
  const seen = new Map<string, string[]>(jobs.map((j) => [j.id, []]));
  let watching = true;
  const get = async (id: string): Promise<JobViewLite | undefined> => {
    try {
      const res = await fetch(`${baseUrl}/api/jobs/${id}`, { headers });
      return res.status === 200 ? ((await res.json()) as JobViewLite) : undefined;
    } catch {
      return undefined; // the host is down between a kill and its restart
    }
  };
  const watcher = (async () => {
    while (watching) {
      for (const j of jobs) {
        const v = await get(j.id);
        const states = seen.get(j.id) as string[];
        if (v && states[states.length - 1] !== v.state) states.push(v.state);
      }
      // A round of five looks about every 0.4 s: each look costs ~13 ms of CPU (host and Azurite) and the watch lasts
      // the whole file; the shortest stage watched for (a 2-node pull of the 2 MB image at 4 MB/s) lasts about a second.
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
  const stateOf = (id: string) => (seen.get(id) as string[]).at(-1);
  const until = async (what: string, ok: () => boolean, timeoutMs = 120_000) => {
    for (const end = Date.now() + timeoutMs; !ok();) {
      if (Date.now() > end) throw new Error(`chaos: timed out waiting for ${what}; seen ${JSON.stringify(Object.fromEntries(seen))}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const post = async (j: JobCase) => {
    if (j.door === 'queue') {
      // host.json: messageEncoding base64. The queue keeps the message across host kills; intake is idempotent.
      await submissions.createIfNotExists();
      await submissions.sendMessage(Buffer.from(JSON.stringify({ id: j.id, name: j.id, ...j.spec }), 'utf8').toString('base64'));
      return;
    }
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(`${baseUrl}/api/jobs`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/yaml' },
        body: stringify({ id: j.id, name: j.id, ...j.spec }),
      }).catch(() => undefined);
      if (res && (res.status === 202 || res.status === 200)) return;
      if (attempt > 20) throw new Error(`POST ${j.id} never accepted: ${res?.status} ${res ? await res.text() : ''}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  try {
    // A kill right after a POST returns: the job was accepted, so it must still run to its end.
    const http = jobs.filter((j) => j.door === undefined);
    const first = http[Math.floor(rand() * http.length)];
    const queued = jobs.filter((j) => j.door === 'queue');
    for (const j of queued) await post(j);
    await post(first);
    await restart(`right after POST ${first.id} (and ${queued.map((j) => j.id).join(', ')} queued)`);
    for (const j of http) if (j !== first) await post(j);

    // Once in each stage some job is in (the first job seen there), and twice in a row once, at a random stage.
    const twiceAt = Math.floor(rand() * 5);
    const gracefulAt = Math.floor(rand() * 5);
    const stages = ['Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp'];
    for (const [i, stage] of stages.entries()) {
      await until(`a job in ${stage}`, () => jobs.some((j) => (seen.get(j.id) as string[]).includes(stage)), 150_000);
      const inStage = jobs.filter((j) => stateOf(j.id) === stage).map((j) => j.id);
      await restart(`in ${stage}${inStage.length ? ` (${inStage.join(', ')})` : ' (just after)'}`, i === gracefulAt);
      if (i === twiceAt) await restart('again, as soon as the restarted host served');
      // Cancel the long job once it runs (through a restart or two: the DELETE is retried while the host is down).
      if (stage === 'Running' || stage === 'CleaningUp') {
        for (let attempt = 0; attempt < 40 && !isTerminal(stateOf('chaos-cancel') ?? ''); attempt++) {
          const res = await fetch(`${baseUrl}/api/jobs/chaos-cancel?reason=chaos`, { method: 'DELETE', headers }).catch(() => undefined);
          if (res && (res.status === 202 || res.status === 200)) break;
          await new Promise((r) => setTimeout(r, 500));
        }
      }
      // And at a random moment of up to 2 s after the stage kill.
      if (rand() < 0.5) {
        await new Promise((r) => setTimeout(r, Math.floor(rand() * 2000)));
        await restart(`at random after ${stage}`);
      }
    }
    await until('every job to end', () => jobs.every((j) => isTerminal(stateOf(j.id) ?? '')), 200_000);
    // Watch a little longer: a final state must stay what it is.
    await new Promise((r) => setTimeout(r, 3000));
  } finally {
    watching = false;
    await watcher;
    emu.setFaults({ throttle: undefined });
    console.log(`chaos kills (${kills.length}): ${kills.join('; ')}`);
    console.log(`chaos states: ${JSON.stringify(Object.fromEntries(seen))}`);
  }

  for (const j of jobs) {
    const states = seen.get(j.id) as string[];
    const firstFinal = states.findIndex((s) => isTerminal(s));
    expect({ id: j.id, afterFinal: states.slice(firstFinal + 1) }).toEqual({ id: j.id, afterFinal: [] });
    const view = (await get(j.id)) as JobViewLite;
    if (view.state !== j.expect) console.log(`chaos job ${j.id} ${view.state}: ${view.error?.message}\n${await mpiOutput(stack, view)}`);
    expect({ id: j.id, state: view.state }).toEqual({ id: j.id, state: j.expect });
    if (j.expect === 'Failed') expect(view.error?.message).toMatch(/MPI task exited with code 3/);
    if (j.expect === 'Succeeded') expect(view.result?.mpi?.stdoutTail).toMatch(/done/);
    if (j.expect === 'Cancelled') expect(view.error?.message).toMatch(/chaos/);
    expect(await checkCleanup(stack, view)).toEqual([]);
    // Nothing created twice: one pool and one Batch job per job, however many times its activities ran.
    const creates = (p: string) =>
      exchanges.filter((e) => e.method === 'POST' && e.path === p && e.status === 201 && (e.requestBody as { id?: string } | undefined)?.id === `hpc-${j.id}`)
        .length;
    expect({ id: j.id, pools: creates('/pools'), batchJobs: creates('/jobs') }).toEqual({ id: j.id, pools: 1, batchJobs: 1 });
  }
  expect(kills.length).toBeGreaterThanOrEqual(5);
}, 600_000);
