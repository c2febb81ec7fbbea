/**
 * Recovery at start on the local stack: the half-lost job of a whole-stack SIGKILL right after a burst (its row was
 * written, its orchestration start was lost) is re-driven by the first sweep after the host starts, not left in
 * Submitted until the lost-run grace fails it, and runs to its end.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { startFunctionsHost, type FunctionsHostHandle } from '../../local/host';
import { createDurableExtension } from '../../local/durable';
import { asOperator, getJobView } from '../../local/jobRunner';
import { loadConfig } from '../../shared/adapters/config';
import { parseJobSpec } from '../../shared/core/spec';
import { recordSubmission } from '../../shared/adapters/state';
import { until } from '../batch/until';
import { appJobStore, durableInstanceUrl, smallSpec } from './helpers';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
let stack: Stack;
let restarted: FunctionsHostHandle | undefined;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  // The first host never sweeps on its own (yearly): only the restarted host's first sweep can find the job.
  stack = await startStack({ port: 0, demoImage: false, logDestination: path.join(LOGS, 'ops-recovery-host.log'), env: { SWEEP_SCHEDULE: '0 0 0 1 1 *' } });
}, 120_000);
afterAll(async () => {
  await restarted?.stop();
  await stack?.stop();
}, 60_000);

describe('recovery at start', () => {
  it('re-drives a job whose row was written but whose orchestration start was lost, to Succeeded', async () => {
    const parsed = parseJobSpec(smallSpec('recovery-half-lost', { nodes: 2, command: 'echo recovered' }), 'application/yaml');
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    // The row as intake writes it, and no start: what a SIGKILL between the two leaves.
    const store = appJobStore(loadConfig(stack.settings));
    await store.ensureTables();
    const recorded = await recordSubmission(store, { spec: parsed.spec, owner: 'queue' });
    expect(recorded.outcome).toBe('created');
    const id = 'recovery-half-lost';
    expect((await fetch(durableInstanceUrl(stack, id))).status).toBe(404);
    await stack.host.stop();

    // The grace stays at its default (10 minutes): only "first sweep since the host started" can re-drive it now.
    restarted = await startFunctionsHost({
      appDir: REPO_ROOT,
      port: 0,
      storageConnectionString: stack.keyless ? undefined : stack.azurite.connectionString(),
      extensions: [createDurableExtension()],
      identityEndpoint: stack.identity.appServiceIdentity,
      env: { ...stack.settings, SWEEP_SCHEDULE: '*/2 * * * * *' },
      logDestination: path.join(LOGS, 'ops-recovery-host2.log'),
    });
    const current = { ...stack, host: restarted, baseUrl: restarted.baseUrl };

    const ended = await until(
      'the re-driven job to end',
      async () => {
        const v = await getJobView(current, id, asOperator(current));
        return ['Succeeded', 'Failed', 'Cancelled'].includes(v.state) ? v : undefined;
      },
      150_000,
    );
    const view = ended as typeof ended & { error?: unknown; timeline?: { kind: string; reason: string }[] };
    expect({ state: view.state, error: view.error }).toEqual({ state: 'Succeeded', error: undefined });
    const notes = (view.timeline ?? []).filter((e) => e.kind === 'note' && e.reason.startsWith('sweep lostStart')).map((e) => e.reason);
    expect(notes).toEqual([expect.stringMatching(/run re-driven from the recorded submission: started .*first sweep since the host started/)]);
  }, 300_000);
});
