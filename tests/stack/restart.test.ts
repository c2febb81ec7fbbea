/**
 * `npm start` keeps its word: a real MPI job (docker, 2 emulated nodes, real mpirun) submitted to the supervised
 * stack (local/start.ts) reaches Succeeded with its result verified when
 *  1. the whole stack is stopped cleanly (SIGTERM to the supervisor) while the job's MPI task is running, and
 *     started again on the same data folder: the services come back on their recorded ports with their state,
 *     the Batch emulator requeues the task its stop killed (a node reboot: requeueCount 1), and the job's
 *     timeline never goes back;
 *  2. only the Functions host is SIGKILLed mid-job: the supervisor starts it again on the same port while Azurite,
 *     the Batch emulator and the registry keep running (same pids), and the job goes on.
 * Both fail on the old one-process stack: its Batch emulator forgot every pool and job on restart (the job failed
 * `pool is missing`), and its host could not die alone.
 */
import type { BatchServiceClient } from '@azure/batch';
import { stringify } from 'yaml';
import { checkCleanup, checkResult, mpiOutput, submitSpec, uploadDemoInputs, type JobViewLite, type StackClient } from '../../local/jobRunner';
import { readPorts } from '../../local/supervisor/ports';
import { isRunning, readRuntime } from '../../local/supervisor/runtime';
import { StackFixture, waitGone } from './supervisedStack';

// Queued shows only when admission did not grant the job at once (the pass that would has not run yet, e.g. under load).
const ORDER = ['Submitted', 'Queued', 'Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp', 'Succeeded'];
const fx = new StackFixture('restart');

beforeAll(() => fx.setUp(), 180_000);
afterAll(() => fx.tearDown(), 180_000);

/** A cheap docker job: 2 nodes, one node pulling at a time, a few MB of input; the pause keeps Running observable. */
function spec(id: string, registryHost: string, pauseSeconds: number): string {
  return stringify({
    id,
    name: id,
    pool: { vmSize: 'Standard_D2s_v5', nodes: 2 },
    container: { runtime: 'docker', images: [`${registryHost}/hpc/mpi-demo:1.0`], pullConcurrency: 1 },
    data: { inputs: [{ account: 'data1', container: 'inputs', prefix: 'demo/' }], recordBytes: 64 },
    mpi: {
      runtime: 'openmpi',
      processesPerNode: 1,
      fabric: 'tcp',
      options: ['--mca', 'btl_tcp_if_include', 'lo'],
      command: `sleep ${pauseSeconds}; mpi-demo run "$MPIJOB_DATA_DIR"`,
    },
    cleanup: { deletePool: 'always' },
  });
}

/** Every state the API showed, in order (repeats collapsed), across restarts. */
class StateLog {
  readonly seen: string[] = [];

  async poll(client: StackClient, id: string): Promise<JobViewLite | undefined> {
    const res = await fetch(`${client.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': client.host.keys.functionKey } }).catch(() => undefined);
    if (!res) return undefined; // the host is restarting
    if (res.status !== 200) throw new Error(`GET /api/jobs/${id} answered ${res.status}: ${await res.text()}`);
    const view = (await res.json()) as JobViewLite;
    if (this.seen[this.seen.length - 1] !== view.state) this.seen.push(view.state);
    return view;
  }

  async until(client: StackClient, id: string, done: (v: JobViewLite) => boolean | Promise<boolean>, timeoutMs: number): Promise<JobViewLite> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const view = await this.poll(client, id);
      if (view && (await done(view))) return view;
      if (view && ['Succeeded', 'Failed', 'Cancelled'].includes(view.state)) return view;
      if (Date.now() > deadline) throw new Error(`job ${id} not there after ${timeoutMs} ms; states seen: ${this.seen.join(' → ')}`);
      await new Promise((r) => setTimeout(r, 150));
    }
  }

  /** Whether the states seen only ever moved forward in the pipeline's order. */
  monotone(): boolean {
    const idx = this.seen.map((s) => ORDER.indexOf(s));
    return idx.every((v, i) => v >= 0 && (i === 0 || v > idx[i - 1]));
  }
}

function batchClient(client: StackClient): BatchServiceClient {
  return client.operator.batch();
}

async function expectSucceeded(client: StackClient, view: JobViewLite, expected: Parameters<typeof checkResult>[1]): Promise<void> {
  if (view.state !== 'Succeeded') console.log(`job ${view.id} ${view.state}: ${view.error?.message}\n${await mpiOutput(client, view)}`);
  expect(view.error?.message).toBeUndefined();
  expect(view.state).toBe('Succeeded');
  expect(checkResult(view, expected)).toEqual([]);
  const transitions = (view.timeline ?? []).filter((e) => e.kind === 'transition').map((e) => e.to);
  expect(transitions).toEqual(ORDER.filter((s) => s !== 'Queued' || transitions.includes('Queued')));
  expect(await checkCleanup(client, view)).toEqual([]);
}

test('a clean stop of the whole stack while the MPI task runs, then a new start: the job succeeds and never went back', async () => {
  let client = fx.current.client();
  const before = fx.current.runtime();
  const portsBefore = readPorts(fx.dataDir);
  const expected = await uploadDemoInputs(client, 2);
  const id = await submitSpec(client, spec('restart-clean-stop', before.registry.host, 5));
  const states = new StateLog();

  // Stop once the job is Running and Batch really runs its MPI task (processes the stop must kill).
  const running = await states.until(
    client,
    id,
    async (v) => {
      if (v.state !== 'Running' || !v.batchJobId) return false;
      const task = await batchClient(client)
        .task.get(v.batchJobId, 'mpi')
        .catch(() => undefined);
      return task?.state === 'running';
    },
    180_000,
  );
  expect(running.state).toBe('Running');
  expect(await fx.stop('SIGTERM')).toEqual({ code: 0, signal: null });
  // A clean stop leaves no process behind and says it is stopped.
  expect(readRuntime(fx.dataDir)).toBeUndefined();
  expect(isRunning(before.azurite)).toBe(false);
  expect(isRunning(before.host)).toBe(false);

  // The job's data survived in every service while the stack was down: started again, it goes on.
  const restarted = await fx.start();
  const after = restarted.runtime();
  client = restarted.client();
  expect(readPorts(fx.dataDir)).toEqual(portsBefore);
  expect(after.baseUrl).toBe(before.baseUrl);
  expect(after.batch.url).toBe(before.batch.url);
  expect(after.registry.host).toBe(before.registry.host);
  const view = await states.until(client, id, () => false, 240_000);
  await expectSucceeded(client, view, expected);
  expect(states.seen).toContain('Running');
  expect(states.monotone()).toBe(true);
  // The MPI task the stop killed was requeued (a node reboot, not a retry) and ran to its end once more.
  const task = await batchClient(client).task.get(view.batchJobId as string, 'mpi');
  expect(task.executionInfo?.requeueCount).toBe(1);
  expect(task.executionInfo?.retryCount).toBe(0);
  expect(task.executionInfo?.exitCode).toBe(0);
}, 480_000);

test('SIGKILL of the Functions host alone mid-job: the supervisor restarts it against the same services and the job succeeds', async () => {
  const s = fx.current;
  const client = s.client();
  const before = s.runtime();
  const expected = await uploadDemoInputs(client, 2);
  const id = await submitSpec(client, spec('restart-host-kill', before.registry.host, 2));
  const states = new StateLog();
  const mid = await states.until(client, id, (v) => ['PullingImages', 'StagingData', 'Running'].includes(v.state), 180_000);
  expect(['PullingImages', 'StagingData', 'Running']).toContain(mid.state);

  process.kill(before.host.pid, 'SIGKILL');
  await waitGone(before.host, 10_000);
  await s.waitForOutput(/the Functions host is back \(pid \d+\)/, 120_000);
  const after = s.runtime();
  expect(after.host.pid).not.toBe(before.host.pid);
  expect(after.host.starts).toBe(before.host.starts + 1);
  expect(after.baseUrl).toBe(before.baseUrl);
  // The services never stopped.
  expect(after.supervisor).toEqual(before.supervisor);
  expect(after.azurite).toEqual(before.azurite);
  expect(isRunning(after.azurite)).toBe(true);

  const view = await states.until(client, id, () => false, 240_000);
  await expectSucceeded(client, view, expected);
  expect(states.monotone()).toBe(true);
}, 480_000);
