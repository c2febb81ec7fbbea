/**
 * The sweep timer on the local stack: a lost run (history purged while the host was down) and a stalled run
 * (an activity that never returns) are found by the next sweep, their resources removed and the row failed
 * with the reason. Batch is reached through a proxy that can hold requests forever (./hangProxy).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { until } from '../batch/until';
import { startFunctionsHost, type FunctionsHostHandle } from '../../local/host';
import { createDurableExtension } from '../../local/durable';
import { checkCleanup, submitSpec, uploadDemoInputs, type JobViewLite } from '../../local/jobRunner';
import { durableInstanceUrl, smallSpec, STAGING_NAMES } from './helpers';
import { startHangProxy, type HangProxy } from './hangProxy';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
let stack: Stack;
let proxy: HangProxy;
let restarted: FunctionsHostHandle | undefined;
/** The stack as the job helpers see it, pointing at whichever host is current. */
let current: Stack;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  proxy = await startHangProxy();
  // The first host never sweeps on its own (yearly): the lost run must be found by the restarted host.
  stack = await startStack({
    port: 0,
    demoImage: false,
    logDestination: path.join(LOGS, 'ops-sweep-host.log'),
    env: { BATCH_ACCOUNT_URL: proxy.url, SWEEP_SCHEDULE: '0 0 0 1 1 *' },
  });
  proxy.setTarget(stack.batch.url);
  current = stack;
}, 120_000);
afterAll(async () => {
  await proxy?.close();
  await restarted?.stop();
  await stack?.stop();
}, 60_000);

type View = JobViewLite & { error?: { code: string; message: string }; timeline?: { kind: string; reason: string; to?: string }[] };
const view = async (id: string) =>
  (await (await fetch(`${current.baseUrl}/api/jobs/${id}`, { headers: { 'x-functions-key': current.host.keys.functionKey } })).json()) as View;

async function stagedContainers(): Promise<string[]> {
  const out: string[] = [];
  for (const name of STAGING_NAMES) {
    const svc = stack.operator.blobService(name);
    for await (const c of svc.listContainers({ prefix: 'stg-' })) out.push(`${name}/${c.name}`);
  }
  return out;
}

/** Cleanup is asynchronous in Batch (a terminating job, a deleting pool): look until it settles. */
const cleaned = (v: View) => until(`cleanup of ${v.id}`, async () => ((await checkCleanup(current, v)).length === 0 ? true : undefined), 20_000);

describe('sweep', () => {
  it('finds a run lost while the host was down (history purged) and removes its pool, Batch job and staged data', async () => {
    await uploadDemoInputs(stack, 8);
    const id = await submitSpec(
      current,
      smallSpec('ops-lost', {
        command: 'sleep 120',
        data: { inputs: [{ account: 'data1', container: 'inputs', prefix: 'demo/' }], recordBytes: 64 },
      }),
    );
    const running = await until(
      'the job to run',
      async () => {
        const v = await view(id);
        if (['Succeeded', 'Failed', 'Cancelled'].includes(v.state)) throw new Error(`job ended early: ${JSON.stringify(v.error)}`);
        return v.state === 'Running' ? v : undefined;
      },
      90_000,
    );
    expect(running.batchPoolId).toBeTruthy();
    expect((await stagedContainers()).length).toBeGreaterThan(0);

    // The run is lost: its history is gone (terminated, then purged) and the host goes down.
    const inst = durableInstanceUrl(stack, id);
    expect((await fetch(durableInstanceUrl(stack, id, '/terminate', { reason: 'test' }), { method: 'POST' })).status).toBe(202);
    await until(
      'termination',
      async () => ((await (await fetch(inst)).json()) as { runtimeStatus: string }).runtimeStatus === 'Terminated' || undefined,
      20_000,
    );
    expect((await fetch(inst, { method: 'DELETE' })).status).toBe(200);
    await stack.host.stop();

    restarted = await startFunctionsHost({
      // The same host storage and identity as the first host's (keyless: the app's identity-based settings).
      appDir: REPO_ROOT,
      port: 0,
      storageConnectionString: stack.keyless ? undefined : stack.azurite.connectionString(),
      extensions: [createDurableExtension()],
      identityEndpoint: stack.identity.appServiceIdentity,
      env: { ...stack.settings, SWEEP_SCHEDULE: '*/2 * * * * *', SWEEP_GRACE_SECONDS: '3', SWEEP_STALL_LIMIT_SECONDS: '15' },
      logDestination: path.join(LOGS, 'ops-sweep-host2.log'),
    });
    current = { ...stack, host: restarted, baseUrl: restarted.baseUrl };

    const failed = await until(
      'the sweep to fail the lost job',
      async () => {
        const v = await view(id);
        return v.state === 'Failed' ? v : undefined;
      },
      30_000,
    );
    expect(failed.error).toEqual({ code: 'LostRun', message: expect.stringMatching(/^lost: orchestration missing/) });
    // Sweeps run every 2 s here, so two rules may share the work: leakedBatchJob can terminate the Batch job one
    // run before lostRun deletes the rest. Every action is on the job's timeline either way.
    const notes = (failed.timeline ?? [])
      .filter((e) => e.kind === 'note' && /^sweep (lostRun|leakedBatchJob|leakedPool|expiredStaging)/.test(e.reason))
      .map((e) => e.reason);
    expect(notes.join('\n')).toMatch(/Batch job .*terminated/);
    expect(notes.join('\n')).toMatch(/pool .* (deletion requested|already gone)/);
    expect(notes.join('\n')).toMatch(/staging container .* deleted/);
    await cleaned(failed);
    expect(await stagedContainers()).toEqual([]);
  }, 180_000);

  it('terminates a stalled run (an activity that never returns), cleans it and fails the job with reason stalled', async () => {
    expect(restarted).toBeDefined();
    const id = await submitSpec(current, smallSpec('ops-stall', { command: 'sleep 120' }));
    await until(
      'the MPI task to run',
      async () => {
        const v = await view(id);
        if (['Succeeded', 'Failed', 'Cancelled'].includes(v.state)) throw new Error(`job ended early: ${JSON.stringify(v.error)}`);
        return v.state === 'Running' ? v : undefined;
      },
      90_000,
    );
    // From now on the MPI task observation never answers: the orchestration waits on that activity forever.
    proxy.hang(/^GET \/jobs\/[^/]+\/tasks\/mpi(\?|$)/);
    const failed = await until(
      'the sweep to fail the stalled job',
      async () => {
        const v = await view(id);
        return v.state === 'Failed' ? v : undefined;
      },
      60_000,
    );
    expect(proxy.held()).toBeGreaterThan(0);
    proxy.hang(undefined);
    expect(failed.error).toEqual({ code: 'Stalled', message: expect.stringMatching(/^stalled: no progress for \d+ s \(limit 15 s\)/) });
    expect(failed.orchestrationStatus).toBe('Terminated');
    await cleaned(failed);
  }, 180_000);
});
