/**
 * The whole pipeline on the local stack, through the public HTTP API only: real Azurite, the Batch emulator
 * running real processes and real Open MPI, the Durable engine replaying the real orchestration.
 * A running job cancelled through the pipeline (Cancelled, the reason on the timeline, the Batch job terminated, the
 * pool deleted, nothing left) is proven by tests/e2e/cancelEveryStage.test.ts's Running stage, not again here; the
 * failed job below terminates its Batch job, which keeps Job_Terminate in this file's contract check.
 * docs/testing.md lists where each end-to-end claim is proven.
 * Needs the compiled app (dist/), which `npm test` builds first.
 */
import { readFileSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, checkResult, submitSpec, uploadDemoInputs, watchJob, type JobViewLite } from '../../local/jobRunner';
import { createContractRecorder } from '../../local/batch/contract';
import type { BatchServiceModels } from '@azure/batch';

const DEMO_SPEC = readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8');
let stack: Stack;
/** Every Batch request the running product sends, and every answer, checked against the official spec. */
const batchContract = createContractRecorder();
/** When the emulator answered each Batch request (its request log, stamped as the answer is sent). */
const batchLog: { at: number; method: string; path: string; status: number; id?: string }[] = [];
let demoInputs: ReturnType<typeof uploadDemoInputs> | undefined;
/**
 * The demo data set (20 MB under data1/inputs/demo/), uploaded once for the tests that read it. The claims are about
 * the shards' number and spread (split, packed, over accounts and nodes), not their size: 20 MB in 4-5 MB shards has the
 * shape 100 MB in 20-25 MB shards had, for a fifth of the bytes copied, hashed and downloaded (~10 CPU-s less).
 */
const inputs = () => (demoInputs ??= uploadDemoInputs(stack, 20));

// The demo spec as plain YAML data, edited per test.
type SpecDoc = { id?: string; data?: unknown; mpi: { command: string } } & Record<string, unknown>;
function variant(patch: (spec: SpecDoc) => void): string {
  const spec = parse(DEMO_SPEC) as SpecDoc;
  patch(spec);
  return stringify(spec);
}

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'e2e-host.log'),
    demoImageFillerBytes: 64 * 1024,
    batch: {
      onExchange: (ex) => {
        batchLog.push({ at: Date.now(), method: ex.method, path: ex.path, status: ex.status, id: (ex.requestBody as { id?: string } | undefined)?.id });
        batchContract.onExchange(ex);
      },
    },
  });
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

describe('job API surface', () => {
  it('serves the OpenAPI document generated from the schemas, and health', async () => {
    const doc = (await (await fetch(`${stack.baseUrl}/api/openapi.json`)).json()) as { openapi: string; paths: Record<string, unknown> };
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/jobs', '/api/jobs/{id}', '/api/health']));
    const health = await fetch(`${stack.baseUrl}/api/health`);
    expect(health.status).toBe(200);
  });

  it('rejects a bad spec with 400 and field paths, and a write without a key with 401', async () => {
    const bad = await fetch(`${stack.baseUrl}/api/jobs`, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml', 'x-functions-key': stack.host.keys.functionKey },
      body: variant((s) => {
        (s.pool as { nodes: number }).nodes = 500;
      }),
    });
    expect(bad.status).toBe(400);
    const body = (await bad.json()) as { errors: { path: string }[] };
    expect(body.errors.map((e) => e.path)).toContain('pool.nodes');
    const anonymous = await fetch(`${stack.baseUrl}/api/jobs`, { method: 'POST', body: DEMO_SPEC });
    expect(anonymous.status).toBe(401);
  });
});

/** The native demo on 4 nodes: 20 MB in 4-5 MB shards, several per staging account and per node. */
function nativeSpec(): string {
  return variant((s) => {
    s.id = 'e2e-native';
    (s.data as { shardSizeMB?: unknown }).shardSizeMB = { min: 4, max: 5 };
  });
}

/** The docker demo on 4 nodes, one pull at a time so that pulls and downloads can interleave. */
function overlapSpec(): string {
  // The example names the registry localhost:5000; the stack's listens on an ephemeral port (as local/demo.ts does).
  const spec = parse(
    readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'docker-openmpi.yaml'), 'utf8').replace(/localhost:5000\//g, `${stack.registry.host}/`),
  ) as SpecDoc;
  spec.id = 'e2e-overlap';
  (spec.pool as { nodes: number }).nodes = 4;
  (spec.container as { pullConcurrency: number }).pullConcurrency = 1;
  (spec.data as { shardSizeMB?: unknown }).shardSizeMB = { min: 4, max: 5 };
  return stringify(spec);
}

/** An MPI program that fails. */
function failingSpec(): string {
  return variant((s) => {
    s.id = 'e2e-mpi-fails';
    s.data = { inputs: [] };
    s.mpi.command = 'echo failing on purpose >&2; exit 3';
    // Two nodes and no start task (the command needs no program built): still a multi-node MPI task whose
    // failure, log locations and cleanup are the claim, without building shardsum on four nodes.
    (s.pool as { nodes: number }).nodes = 2;
    delete (s.pool as { startTask?: unknown }).startTask;
  });
}

type Ran = Promise<{ view: JobViewLite; expected: Awaited<ReturnType<typeof uploadDemoInputs>> }>;
let started: { native: Ran; overlap: Ran; failing: Ran } | undefined;
/**
 * The three jobs are independent (own ids, pools, Batch jobs and staging containers): they run side by side, started
 * by the first test that needs one, each test asserting on its own.
 */
function jobs(): { native: Ran; overlap: Ran; failing: Ran } {
  const run = (spec: () => string, timeoutMs: number): Ran => {
    const ran = (async () => {
      const expected = await inputs();
      return { expected, view: await watchJob(stack, await submitSpec(stack, spec()), timeoutMs) };
    })();
    ran.catch(() => undefined); // awaited by its own test
    return ran;
  };
  return (started ??= { native: run(nativeSpec, 420_000), overlap: run(overlapSpec, 420_000), failing: run(failingSpec, 300_000) });
}

/** checkCleanup looks at every staging container: it runs once every job of the file has ended. */
async function cleanedUp(view: JobViewLite): Promise<string[]> {
  const all = jobs();
  await Promise.allSettled([all.native, all.overlap, all.failing]);
  return checkCleanup(stack, view);
}

describe('mpiJob pipeline end to end', () => {
  it('runs a real MPI job over staged shards, verifies the result, and leaves no pool, job or staged data', async () => {
    const { view, expected } = await jobs().native;
    expect(view.error).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    expect(checkResult(view, expected)).toEqual([]);
    expect(await cleanedUp(view)).toEqual([]);

    // The timeline went through every stage in order, each with a reason.
    const transitions = (view.timeline ?? []).filter((e) => e.kind === 'transition').map((e) => e.to);
    expect(transitions).toEqual(['Submitted', 'Queued', 'Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp', 'Succeeded']);
    // Every node took part: 4 nodes x 2 ranks.
    const mpi = (view.result as { mpi?: { stdoutTail?: string } }).mpi?.stdoutTail ?? '';
    expect(mpi).toMatch(/"ranks":8,"nodes":4/);
    const staged = (view.progress as { progress?: { shardsStaged?: { done: number; total: number } } }).progress?.shardsStaged;
    expect(staged?.total).toBeGreaterThanOrEqual(4);
    expect(staged?.done).toBe(staged?.total);
  }, 600_000);

  it('overlapped staging on a docker job: copy before the Batch job exists, each node downloads after its own pull, MPI after every download', async () => {
    const { view, expected } = await jobs().overlap;
    expect(view.error).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    expect(checkResult(view, expected)).toEqual([]);
    expect(await cleanedUp(view)).toEqual([]);
    // The emulator's task records: where and when each pull, download, preflight and MPI task ran.
    const batch = stack.operator.batch();
    const tasks: BatchServiceModels.CloudTask[] = await batch.task.list(view.batchJobId as string);
    const times = (t: BatchServiceModels.CloudTask) => ({
      node: t.nodeInfo?.nodeId ?? '',
      start: t.executionInfo?.startTime?.getTime() ?? NaN,
      end: t.executionInfo?.endTime?.getTime() ?? NaN,
    });
    const of = (prefix: string) => tasks.filter((t) => t.id?.startsWith(prefix) && t.executionInfo?.exitCode === 0).map(times);
    const pulls = of('pull-');
    const downloads = of('dl-');
    expect(pulls).toHaveLength(4);
    expect(downloads).toHaveLength(4);
    // A node's download started only after its own pull ended.
    for (const d of downloads) {
      const pull = pulls.find((p) => p.node === d.node);
      expect(pull).toBeDefined();
      expect(d.start).toBeGreaterThanOrEqual(pull!.end);
    }
    // The preflight and the MPI task started only after every node's download ended.
    const lastDownload = Math.max(...downloads.map((d) => d.end));
    const mpi = times(tasks.find((t) => t.id === 'mpi')!);
    expect(mpi.start).toBeGreaterThanOrEqual(lastDownload);
    for (const p of tasks.filter((t) => t.id?.startsWith('preflight')).map(times)) expect(p.start).toBeGreaterThanOrEqual(lastDownload);

    // The copy started at admission: before the Batch job (created once the pool's nodes were ready) was requested.
    const result = view.result as {
      staging?: { overlapped: boolean; copy: { startedAt: string; endedAt?: string } };
      cost?: { idleNodeMinutesBeforeMpi?: number; priceSource?: string };
    };
    expect(result.staging?.overlapped).toBe(true);
    const jobCreated = batchLog.find((e) => e.method === 'POST' && e.path === '/jobs' && e.status === 201 && e.id === view.batchJobId);
    expect(jobCreated).toBeDefined();
    expect(Date.parse(result.staging!.copy.startedAt)).toBeLessThan(jobCreated!.at);
    expect(result.cost?.idleNodeMinutesBeforeMpi).toBeGreaterThan(0);
    // The job was priced from the Retail Prices API (the local stand-in), not the fallback table.
    expect(result.cost?.priceSource).toMatch(/^Azure Retail Prices API: eastus, /);
  }, 600_000);

  it('ends Failed with the exit code and log locations when the MPI program fails, and still cleans up', async () => {
    const { view } = await jobs().failing;
    expect(view.state).toBe('Failed');
    expect(view.error?.message).toMatch(/MPI task exited with code [1-9]/);
    expect(view.result?.logs?.[0]?.stderr).toMatch(/\/jobs\/hpc-e2e-mpi-fails\/tasks\/mpi\/files\/stderr\.txt$/);
    expect(view.timeline?.some((e) => e.to === 'CleaningUp')).toBe(true);
    expect(await cleanedUp(view)).toEqual([]);
  }, 600_000);

  it('sent Batch only requests the spec allows, with the bodies it builds, and got only answers the spec documents', () => {
    console.log(`Batch calls of the pipeline\n${batchContract.report()}`);
    const violations = batchContract.violations().map((v) => `${v.method} ${v.path} -> ${v.status}\n    ${v.problems.join('\n    ')}`);
    expect(violations).toEqual([]);
    expect([...batchContract.coverage().keys()]).toEqual(
      expect.arrayContaining(['Pool_Add', 'Job_Add', 'Task_Add', 'Job_Patch', 'Job_Terminate', 'Pool_Delete']),
    );
  });
});
