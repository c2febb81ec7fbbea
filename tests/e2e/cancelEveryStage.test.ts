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
 *
 * The Running stage's job is also the suite's proof of a running job cancelled through the pipeline (it was
 * pipeline.test.ts's own job before): the cancel requested on the timeline, the Batch job terminated, the pool deleted.
 * It also carries rerunCancel.test.ts's running-job cancel (a job of its own before): a rerun while it runs is refused
 * (409), and cancelled it keeps the outputs it wrote up to the cancel and its status says nothing still runs.
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
    case 'Running':
      // It writes result.txt first thing and declares it an output: what it wrote up to the cancel is kept.
      return {
        ...base,
        mpi: { ...base.mpi, command: 'echo "partial from $(hostname)" > result.txt; sleep 120' },
        outputs: { account: 'data1', container: 'results', files: [{ pattern: 'result.txt' }] },
      };
    default:
      return base;
  }
}

/** Polls the job until it is in `stage` (or past it); returns the view seen. */
async function waitFor(id: string, stage: Stage): Promise<JobViewLite> {
  let view = await getJobView(stack, id);
  for (const deadline = Date.now() + 180_000; Date.now() < deadline && view.state !== stage && !['Succeeded', 'Failed', 'Cancelled'].includes(view.state);) {
    // Four looks a second per job (a look costs ~13 ms of CPU in the host and Azurite): each stage lasts seconds here.
    await new Promise((r) => setTimeout(r, 250));
    view = await getJobView(stack, id);
  }
  return view;
}

const STAGES: Stage[] = ['Provisioning', 'PullingImages', 'StagingData', 'Running'];

/** A GET of the job as the operator (an admin: it may ask for a rerun of any job). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers: { 'x-functions-key': stack.host.keys.functionKey } });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/**
 * In Running, before the cancel (moved here from rerunCancel.test.ts): once the MPI task runs, a rerun is refused (409,
 * the job has not finished); then a moment for the command's result.txt to be on the master.
 */
async function beforeRunningCancel(id: string): Promise<{ rerun: unknown }> {
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && (await getJobView(stack, id)).progress?.progress?.mpi?.state !== 'running') await new Promise((r) => setTimeout(r, 500));
  const rerun = await call('POST', `/api/jobs/${id}/rerun`);
  await new Promise((r) => setTimeout(r, 2_000));
  return { rerun };
}

test('a job cancelled in each stage ends Cancelled with the reason and leaves no pool, Batch job or staged data', async () => {
  const ids = await Promise.all(STAGES.map((stage) => submitSpec(stack, stringify(specFor(stage)))));
  const outcomes = await Promise.all(
    STAGES.map(async (stage, i) => {
      const id = ids[i];
      const seen = await waitFor(id, stage);
      if (seen.state !== stage) return { stage, problem: `never seen in ${stage}; last state ${seen.state}: ${seen.error?.message ?? ''}` };
      const running = stage === 'Running' ? await beforeRunningCancel(id) : undefined;
      const res = await fetch(`${stack.baseUrl}/api/jobs/${id}?reason=${encodeURIComponent(`stop in ${stage}`)}`, {
        method: 'DELETE',
        headers: { 'x-functions-key': stack.host.keys.functionKey },
      });
      return { stage, status: res.status, running, view: await watchJob(stack, id, 180_000) };
    }),
  );
  // checkCleanup looks at every staging container, so it runs once all four jobs have ended.
  for (const o of outcomes) {
    expect({ stage: o.stage, problem: 'problem' in o ? o.problem : undefined }).toEqual({ stage: o.stage, problem: undefined });
    if (!('view' in o) || !o.view) continue;
    expect({ stage: o.stage, status: o.status, state: o.view.state }).toEqual({ stage: o.stage, status: 202, state: 'Cancelled' });
    expect(o.view.error?.message ?? '').toContain(`stop in ${o.stage}`);
    expect(o.view.timeline?.some((e) => e.kind === 'transition' && e.to === 'CleaningUp')).toBe(true);
    // The cancel is on the timeline with its own reason, and the cleanup says what it did (moved here from
    // pipeline.test.ts's running-job cancel): the pool deleted in every stage (deletePool: always), and once the
    // Batch job existed and ran the MPI task, that job terminated.
    expect({ stage: o.stage, noted: o.view.timeline?.some((e) => /cancel requested/.test(e.reason)) }).toEqual({ stage: o.stage, noted: true });
    const cleanup = (o.view.progress as { progress?: { cleanup?: { done?: string[] } } }).progress?.cleanup?.done ?? [];
    expect({ stage: o.stage, cleanup }).toEqual({
      stage: o.stage,
      cleanup: expect.arrayContaining(o.stage === 'Running' ? ['batch job terminated', 'pool deleted'] : ['pool deleted']),
    });
    expect({ stage: o.stage, leftovers: await checkCleanup(stack, o.view) }).toEqual({ stage: o.stage, leftovers: [] });
  }
  // The Running job (rerunCancel.test.ts's claims): a rerun while it ran was 409; cancelled, its outputs up to the
  // cancel are listed (the emulator uploads the terminated task's output files) and its status says nothing still runs.
  const running = outcomes.find((o) => o.stage === 'Running');
  expect(running && 'running' in running ? running.running : undefined).toMatchObject({ rerun: { status: 409, body: { error: 'JobNotFinished' } } });
  const view = await call('GET', `/api/jobs/${ids[STAGES.indexOf('Running')]}`);
  const names = (view.body.result.outputs.files as { name: string }[]).map((f) => f.name);
  expect(names).toEqual(expect.arrayContaining([expect.stringMatching(/workdir\/result\.txt$/), expect.stringMatching(/logs\/stdout\.txt$/)]));
  expect(view.body.progress.progress.mpi.state).toBe('terminated');
  const nodeStates = Object.values(view.body.progress.nodes as Record<string, string>);
  expect(nodeStates.length).toBe(2);
  expect(nodeStates.every((st) => st === 'deleted')).toBe(true);
}, 420_000);
