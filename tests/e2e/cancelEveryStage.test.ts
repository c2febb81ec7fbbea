/**
 * Cancel in every stage of a real pipeline (issue 24): one job per stage — Provisioning, PullingImages, StagingData,
 * Running — each cancelled through DELETE /api/jobs/{id} once GET showed it in that stage. Each must end Cancelled with
 * the reason, and leave nothing behind (no pool, no Batch job, no staged shard). The replay tests
 * (tests/orchestrations/mpiJob.cancel.replay.test.ts) prove the orchestrator's decisions per stage; this file proves
 * them against the emulator, Azurite and real processes, where a cancel races real activities in flight.
 * A cancel while CleaningUp is a 409 (tests/intake/cancelFinishing.test.ts); a Queued job's cancel is in
 * tests/e2e/admission.test.ts.
 *
 * How each stage is held long enough to be seen: Provisioning by the emulator's slow-node fault (its nodes take 8 s
 * more to allocate), PullingImages by the registry's bandwidth cap and one pull at a time, StagingData by 60 MB of
 * input (copied, then downloaded by every node), Running by the program's `sleep`.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, getJobView, submitSpec, uploadDemoInputs, watchJob, type JobViewLite } from '../../local/jobRunner';
import { batchIdFor } from '../../shared/core/planning/jobPlan';

let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'e2e-cancel-stages-host.log'),
    registryBandwidthBytesPerSec: 2 * 1024 * 1024,
    demoImageFillerBytes: 4 * 1024 * 1024,
  });
  stack.batch.setFaults({ slowNodes: { count: 2, extraAllocateMs: 8_000, poolId: batchIdFor('hpc', 'cancel-in-provisioning') } });
  await uploadDemoInputs(stack, 60);
}, 180_000);

afterAll(async () => {
  await stack?.stop();
}, 60_000);

type Stage = 'Provisioning' | 'PullingImages' | 'StagingData' | 'Running';

function specFor(stage: Stage): Record<string, unknown> {
  const base = {
    id: `cancel-in-${stage.toLowerCase()}`,
    name: `cancel-in-${stage}`,
    pool: { vmSize: 'Standard_D2s_v5', nodes: 2 },
    mpi: { runtime: 'openmpi', processesPerNode: 1, command: 'sleep 120' },
    cleanup: { deletePool: 'always' },
  };
  switch (stage) {
    case 'PullingImages':
      return { ...base, container: { runtime: 'docker', images: [`${stack.registry.host}/hpc/mpi-demo:1.0`], pullConcurrency: 1 } };
    case 'StagingData':
      return { ...base, data: { inputs: [{ account: 'data1', container: 'inputs', prefix: 'demo/' }], recordBytes: 64 } };
    default:
      return base;
  }
}

/** Polls the job until it is in `stage` (or past it); returns the view seen. */
async function waitFor(id: string, stage: Stage): Promise<JobViewLite> {
  let view = await getJobView(stack, id);
  for (const deadline = Date.now() + 180_000; Date.now() < deadline && view.state !== stage && !['Succeeded', 'Failed', 'Cancelled'].includes(view.state);) {
    await new Promise((r) => setTimeout(r, 100));
    view = await getJobView(stack, id);
  }
  return view;
}

const STAGES: Stage[] = ['Provisioning', 'PullingImages', 'StagingData', 'Running'];

test('a job cancelled in each stage ends Cancelled with the reason and leaves no pool, Batch job or staged data', async () => {
  const ids = await Promise.all(STAGES.map((stage) => submitSpec(stack, stringify(specFor(stage)))));
  const outcomes = await Promise.all(
    STAGES.map(async (stage, i) => {
      const id = ids[i];
      const seen = await waitFor(id, stage);
      if (seen.state !== stage) return { stage, problem: `never seen in ${stage}; last state ${seen.state}: ${seen.error?.message ?? ''}` };
      const res = await fetch(`${stack.baseUrl}/api/jobs/${id}?reason=${encodeURIComponent(`stop in ${stage}`)}`, {
        method: 'DELETE',
        headers: { 'x-functions-key': stack.host.keys.functionKey },
      });
      return { stage, status: res.status, view: await watchJob(stack, id, 180_000) };
    }),
  );
  // checkCleanup looks at every staging container, so it runs once all four jobs have ended.
  for (const o of outcomes) {
    expect({ stage: o.stage, problem: 'problem' in o ? o.problem : undefined }).toEqual({ stage: o.stage, problem: undefined });
    if (!('view' in o) || !o.view) continue;
    expect({ stage: o.stage, status: o.status, state: o.view.state }).toEqual({ stage: o.stage, status: 202, state: 'Cancelled' });
    expect(o.view.error?.message ?? '').toContain(`stop in ${o.stage}`);
    expect(o.view.timeline?.some((e) => e.kind === 'transition' && e.to === 'CleaningUp')).toBe(true);
    expect({ stage: o.stage, leftovers: await checkCleanup(stack, o.view) }).toEqual({ stage: o.stage, leftovers: [] });
  }
}, 420_000);
