/**
 * Crash safety of the whole pipeline: the Functions host + Durable engine (the only part of the control plane
 * that runs in our process on Azure too) is SIGKILLed once in each stage of a real MPI job — Provisioning,
 * PullingImages, StagingData, Running, CleaningUp — and restarted on the same port. Azurite, the Batch
 * emulator, the registry and the identity service stand for Azure services and keep running (keyless, as the
 * stack runs by default: each new host gets its identity's tokens again from the identity endpoint). The job must
 * still end Succeeded with the verified MPI result, own exactly one pool, and leave nothing behind.
 *
 * What is deterministic: each kill happens after GET /api/jobs/{id} showed the target stage, so the host died
 * while the job was recorded in that stage (or, for short stages, at most one poll round later: CleaningUp
 * can end within a poll interval, so that kill may land just after the orchestration finished cleanup).
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import type { ExchangeRecord } from '../../local/batch/config';
import { localAppSettings, localRegistrySettings, REPO_ROOT } from '../../local/stack';
import { startServices, type Services } from '../../local/supervisor/services';
import {
  asOperator,
  checkCleanup,
  checkResult,
  mpiOutput,
  submitSpec,
  uploadDemoInputs,
  watchJob,
  type JobViewLite,
  type StackClient,
} from '../../local/jobRunner';
import { ChildHost } from '../helpers/childHost';

let services: Services | undefined;
let host: ChildHost | undefined;
let log: WriteStream | undefined;
const exchanges: ExchangeRecord[] = [];

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  log = createWriteStream(path.join(logs, 'e2e-crash-host.log'), { flags: 'w' });
  // A bandwidth cap stretches the pulls over seconds, so the PullingImages stage can be hit.
  services = await startServices({
    repoRoot: REPO_ROOT,
    registryBandwidthBytesPerSec: 2 * 1024 * 1024,
    demoImageFillerBytes: 3 * 1024 * 1024,
    batch: { onExchange: (e) => exchanges.push(e) },
  });
}, 120_000);

afterAll(async () => {
  await host?.kill();
  await services?.stop();
  await new Promise((r) => log?.end(r));
}, 60_000);

// Operator keys are at least 24 characters (shared/core/config/auth.ts).
const CHILD_KEYS = { functionKey: 'crash-test-function-key-0123456789', masterKey: 'crash-test-master-key-0123456789' };

/**
 * The real app's host as a child process (port 0 picks a free one; the previous port restarts it in place), keyless:
 * its storage from the identity-based settings, its identity from the App Service identity endpoint.
 */
const startHost = (port: number, s: Services, settings: Record<string, string>) =>
  ChildHost.start({
    appDir: REPO_ROOT,
    port,
    settings,
    keys: CHILD_KEYS,
    log: log as WriteStream,
    timeoutMs: 90_000,
    identityEndpoint: s.identity.appServiceIdentity,
    caFile: s.identity.caFile,
  });

const STAGES = ['Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp'] as const;

test('SIGKILL of the control plane once in every stage: the job still succeeds with the verified result, one pool, nothing left', async () => {
  const s = services as Services;
  const reg = s.registry;
  expect(s.keyless).toBe(true);
  // No bearer auth for the API here: the test is the operator (its function key is the app's operator key).
  const settings = { ...localAppSettings(s.azurite, s.batch), ...localRegistrySettings(reg.host), OPERATOR_API_KEYS: CHILD_KEYS.functionKey };
  host = await startHost(0, s, settings);
  const port = host.port;
  // jobRunner's helpers need only these parts of a stack; the base URL survives restarts (same port).
  const stack: StackClient = { baseUrl: host.baseUrl, host: { keys: CHILD_KEYS }, operator: s.operator };

  const expected = await uploadDemoInputs(stack, 20);
  const operator = asOperator(stack);
  const id = await submitSpec(
    stack,
    stringify({
      id: 'crash-every-stage',
      name: 'crash',
      pool: { vmSize: 'Standard_D2s_v5', nodes: 3 },
      container: { runtime: 'docker', images: [`${reg.host}/hpc/mpi-demo:1.0`], pullConcurrency: 1 },
      data: { inputs: [{ account: 'data1', container: 'inputs', prefix: 'demo/' }], recordBytes: 64 },
      // The pause keeps the Running stage long enough to be hit; the program's output is still verified.
      mpi: {
        runtime: 'openmpi',
        processesPerNode: 1,
        fabric: 'tcp',
        options: ['--mca', 'btl_tcp_if_include', 'lo'],
        command: 'sleep 4; mpi-demo run "$MPIJOB_DATA_DIR"',
      },
      cleanup: { deletePool: 'always' },
    }),
    operator,
  );

  const killedIn: string[] = [];
  for (const stage of STAGES) {
    let view: JobViewLite | undefined;
    for (const deadline = Date.now() + 150_000; Date.now() < deadline;) {
      view = (await (await fetch(`${stack.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': stack.host.keys.functionKey } })).json()) as JobViewLite;
      if (view.state === stage || ['Succeeded', 'Failed', 'Cancelled'].includes(view.state)) break;
      // Four looks a second: a look costs ~13 ms of CPU (host and Azurite), and every stage here lasts seconds (the
      // bandwidth cap, the pause) but CleaningUp, which may end between two looks (below).
      await new Promise((r) => setTimeout(r, 250));
    }
    // CleaningUp may be over between two polls; then the kill lands just after it (still a crash of a live host).
    const justAfter = stage === 'CleaningUp' && view?.state === 'Succeeded';
    if (view?.state !== stage && !justAfter) throw new Error(`job never seen in ${stage}; last state ${view?.state}: ${view?.error?.message ?? ''}`);
    await host.kill();
    killedIn.push(stage);
    if (justAfter) console.log('the CleaningUp stage ended before it was observed: the last kill landed just after it');
    host = await startHost(port, s, settings);
    expect(host.baseUrl).toBe(stack.baseUrl);
  }
  expect(killedIn).toEqual([...STAGES]);

  const view = await watchJob(stack, id, 150_000, undefined, operator);
  if (view.state !== 'Succeeded') console.log(`job ${id} ${view.state}: ${view.error?.message}\n${await mpiOutput(stack, view)}`);
  expect(view.error?.message).toBeUndefined();
  expect(view.state).toBe('Succeeded');
  expect(checkResult(view, expected)).toEqual([]);
  const transitions = (view.timeline ?? []).filter((e) => e.kind === 'transition').map((e) => e.to);
  expect(transitions).toEqual(['Submitted', 'Queued', ...STAGES, 'Succeeded']);
  // Replayed activities must not have created a second pool or Batch job: every create after the first
  // answered "exists" (409), and the account held only this job's pool.
  const created = (p: RegExp) => exchanges.filter((e) => e.method === 'POST' && p.test(e.path) && e.status === 201).length;
  expect(created(/^\/pools$/)).toBe(1);
  expect(created(/^\/jobs$/)).toBe(1);
  const poolIds = new Set(exchanges.filter((e) => e.method === 'POST' && e.path === '/pools').map((e) => (e.requestBody as { id?: string }).id));
  expect([...poolIds]).toEqual(['hpc-crash-every-stage']);
  expect(await checkCleanup(stack, view)).toEqual([]);
}, 240_000);
