/**
 * The security probe's findings, each replayed against the real local stack (docs/security.md, "Threats"):
 * a malformed queue message must not disable the sweep; a job must not read the app's own storage or another job's
 * staged shards; terminating an orchestration through the Durable API must still cancel the job promptly; line
 * separators and bidi controls are refused at the door; hostile documents are refused before any parser works hard.
 * The identity findings (anonymous reads, spoofed owners) are in identity.test.ts.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { until } from '../batch/until';
import { runSweep } from '../../shared/adapters/ops/sweep';
import { batchClient, smallSpec, sweepDeps } from '../ops/helpers';
import { enqueue, postJob, submissionsQueue } from '../intake/support';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
let stack: Stack;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  // The sweep never runs on its own here (yearly): each test runs it when it needs it.
  stack = await startStack({ port: 0, demoImage: false, logDestination: path.join(LOGS, 'security-threats-host.log'), env: { SWEEP_SCHEDULE: '0 0 0 1 1 *' } });
  await submissionsQueue(stack).createIfNotExists();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

type View = {
  id: string;
  state: string;
  error?: { code: string; message: string };
  timeline?: { kind: string; reason: string; to?: string }[];
  batchPoolId?: string;
};
const key = () => ({ 'x-functions-key': stack.host.keys.functionKey });
const view = async (id: string): Promise<View> => (await (await fetch(`${stack.baseUrl}/api/jobs/${id}`, { headers: key() })).json()) as View;

const SWEEP = { stallLimitMs: 30 * 60_000, graceMs: 10 * 60_000, stagingRetentionMs: 24 * 3_600_000 };

describe('finding 1: one malformed queue message must not disable the cleanup sweep', () => {
  it('records the message as a Failed job, and the next sweep still runs every rule and removes a leaked pool', async () => {
    // An id and no pool: before, the row held the raw document as its "spec" and every sweep died reading spec.pool.
    await enqueue(submissionsQueue(stack), { id: 'evil-no-pool', name: 'x' });
    const rejected = await until(
      'the rejected message to be recorded',
      async () => {
        const v = await view('evil-no-pool');
        return v.state === 'Failed' ? v : undefined;
      },
      20_000,
    );
    expect(rejected.error?.code).toBe('InvalidSpec');

    // A pool tagged as ours for a job nobody knows, created long ago as far as the sweep's grace is concerned.
    await batchClient(stack).pool.add({
      id: 'leaked-by-nobody',
      vmSize: 'Standard_D2s_v3',
      targetDedicatedNodes: 0,
      virtualMachineConfiguration: {
        imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
        nodeAgentSKUId: 'batch.node.ubuntu 22.04',
      },
      metadata: [
        { name: 'hpc-cp-owner', value: 'hpc-mpi-control-plane' },
        { name: 'hpc-cp-job', value: 'unknown-job' },
      ],
    });
    const report = await runSweep(sweepDeps(stack, { ...SWEEP, graceMs: 0 }));
    expect(report.ran).toBe(true);
    expect(report.skipped).toEqual([]);
    expect(report.actions).toContainEqual(expect.objectContaining({ kind: 'deletePool', poolId: 'leaked-by-nobody', ok: true }));
    expect(report.observed.jobs).toBeGreaterThanOrEqual(1);
  });
});

describe('a damaged job row', () => {
  it("is left out of lists and reported by the sweep, which leaves that job's resources alone", async () => {
    const jobs = stack.operator.table('Jobs');
    await jobs.createEntity({ partitionKey: 'damaged-owner', rowKey: 'job', id: 'damaged-owner', state: 'Exploded', owner: 'operator' });
    await batchClient(stack).pool.add({
      id: 'pool-of-damaged',
      vmSize: 'Standard_D2s_v3',
      targetDedicatedNodes: 0,
      virtualMachineConfiguration: {
        imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
        nodeAgentSKUId: 'batch.node.ubuntu 22.04',
      },
      metadata: [
        { name: 'hpc-cp-owner', value: 'hpc-mpi-control-plane' },
        { name: 'hpc-cp-job', value: 'damaged-owner' },
      ],
    });
    const list = await fetch(`${stack.baseUrl}/api/jobs?top=1000`, { headers: key() });
    expect(list.status).toBe(200);
    const body = (await list.json()) as { jobs: { id: string }[]; unreadable?: number };
    expect(body.jobs.map((j) => j.id)).not.toContain('damaged-owner');
    expect(body.unreadable).toBe(1);
    const report = await runSweep(sweepDeps(stack, { ...SWEEP, graceMs: 0 }));
    expect(report.skipped).toContainEqual(expect.objectContaining({ step: 'read job row', jobId: 'damaged-owner' }));
    expect(report.actions.filter((a) => a.jobId === 'damaged-owner')).toEqual([]);
    await batchClient(stack).pool.deleteMethod('pool-of-damaged');
    await jobs.deleteEntity('damaged-owner', 'job');
  });
});

describe("finding 2: a job may only name the deployment's data storage (no confused deputy)", () => {
  const spec = (data: unknown, startTask?: unknown) => ({
    name: 'deputy',
    pool: { vmSize: 'Standard_D2s_v3', nodes: 1, ...(startTask ? { startTask } : {}) },
    data,
    mpi: { runtime: 'openmpi', command: 'cat "$MPIJOB_DATA_DIR"/*' },
  });

  it.each([
    ['the host storage (Durable state, job rows)', { inputs: [{ account: 'devstoreaccount1', container: 'azure-webjobs-hosts' }] }, 'data.inputs[0].account'],
    ['a staging account', { inputs: [{ account: 'stage1', container: 'anything' }] }, 'data.inputs[0].account'],
    ["another job's staged shards in the data account", { inputs: [{ account: 'data1', container: 'stg-12345678-victim' }] }, 'data.inputs[0].container'],
    ['a staging account of its own choosing', { inputs: [], stagingAccounts: ['devstoreaccount1'] }, 'data.stagingAccounts[0]'],
  ])('refuses inputs from %s with the field path', async (_what, data, errorPath) => {
    const a = await postJob(stack, spec(data));
    expect(a.status).toBe(400);
    expect(a.body.errors?.map((e) => e.path)).toContain(errorPath);
  });

  it('refuses start-task files from the host storage', async () => {
    const a = await postJob(
      stack,
      spec(
        { inputs: [] },
        { command: 'true', resourceFiles: [{ account: 'devstoreaccount1', container: 'azure-webjobs-secrets', blob: 'host.json', path: 'x' }] },
      ),
    );
    expect(a.status).toBe(400);
    expect(a.body.errors?.map((e) => e.path)).toContain('pool.startTask.resourceFiles[0].account');
  });

  it('accepts the data account', async () => {
    const a = await postJob(stack, {
      ...spec({ inputs: [{ account: 'data1', container: 'inputs', prefix: 'nothing-here/' }] }),
      pool: { poolId: 'no-such-pool', nodes: 1 },
    });
    expect(a.status).toBe(202);
  });
});

describe('finding 5: terminating the orchestration through the Durable API', () => {
  const terminate = (id: string) =>
    fetch(
      `${stack.baseUrl}/runtime/webhooks/durabletask/instances/${id}/terminate?reason=${encodeURIComponent('stopped by an operator')}&code=${stack.host.keys.masterKey}`,
      { method: 'POST' },
    );

  it('ends the job Cancelled with the reason at the next sweep, without the grace, and removes its pool and MPI task', async () => {
    const id = 'sec-terminated';
    const res = await fetch(`${stack.baseUrl}/api/jobs`, {
      method: 'POST',
      headers: { ...key(), 'content-type': 'application/yaml' },
      body: smallSpec(id, { nodes: 2, command: 'sleep 300' }),
    });
    expect(res.status).toBe(202);
    const running = await until(
      'the MPI task to run',
      async () => {
        const v = await view(id);
        return v.state === 'Running' ? v : undefined;
      },
      90_000,
    );
    expect((await terminate(id)).status).toBe(202);
    await until(
      'the instance to be Terminated',
      async () => {
        const s = await fetch(`${stack.baseUrl}/runtime/webhooks/durabletask/instances/${id}?code=${stack.host.keys.masterKey}`);
        return ((await s.json()) as { runtimeStatus?: string }).runtimeStatus === 'Terminated' ? true : undefined;
      },
      20_000,
    );
    // Before: the job stayed Running and its pool kept billing until the stalled-run grace passed, then ended Failed.
    // A cancel now tells the truth: nothing was left to tell.
    const cancel = await fetch(`${stack.baseUrl}/api/jobs/${id}`, { method: 'DELETE', headers: key() });
    expect(cancel.status).toBe(202);
    expect(await cancel.json()).toMatchObject({ cancelRequested: true, pipeline: 'gone' });

    const report = await runSweep(sweepDeps(stack, SWEEP));
    expect(
      report.actions
        .filter((a) => a.jobId === id)
        .map((a) => `${a.rule}:${a.kind}:${a.ok}`)
        .sort(),
    ).toEqual(['cancelledRun:cancelJob:true', 'cancelledRun:deletePool:true', 'cancelledRun:terminateBatchJob:true']);
    const ended = await view(id);
    expect(ended.state).toBe('Cancelled');
    expect(ended.error?.message).toMatch(/orchestration was terminated \(stopped by an operator\)/);
    const pool = await batchClient(stack)
      .pool.get(running.batchPoolId!)
      .catch(() => undefined);
    expect(pool === undefined || pool.state === 'deleting').toBe(true);
  });
});

describe('finding 6: single-line fields refuse line separators and bidi controls', () => {
  it.each([
    ['U+2028', '\u2028'],
    ['U+2029', '\u2029'],
    ['U+0085', '\u0085'],
    ['RLO (U+202E)', '\u202e'],
    ['LRI (U+2066)', '\u2066'],
  ])('%s in mpi.command is refused at the door with its path, over HTTP and the queue', async (_name, ch) => {
    const spec = {
      id: `sep-${ch.codePointAt(0)!.toString(16)}`,
      name: 'sep',
      pool: { poolId: 'no-such-pool', nodes: 1 },
      mpi: { runtime: 'openmpi', command: `echo a${ch}b` },
    };
    const a = await postJob(stack, spec);
    expect(a.status).toBe(400);
    expect(a.body.errors).toContainEqual(expect.objectContaining({ path: 'mpi.command' }));
    await enqueue(submissionsQueue(stack), spec);
    const v = await until(
      'the queue message to be rejected',
      async () => {
        const j = await view(spec.id);
        return j.state === 'Failed' ? j : undefined;
      },
      20_000,
    );
    expect(v.error?.code).toBe('InvalidSpec');
  });
});

describe('finding 7: hostile documents are refused before they cost the host anything', () => {
  it.each([
    ['deeply nested flow collections', '['.repeat(100_000) + ']'.repeat(100_000), /nested more than 32 deep/],
    ['tens of thousands of keys', Array.from({ length: 20_000 }, (_, i) => `k${i}: ${i}`).join('\n'), /too large|too complex/],
    [
      'an alias bomb',
      'a: &a [x,x,x,x,x,x,x,x,x]\n' +
        'bcdefghij'
          .split('')
          .map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefghij'[i]}`).join(',')}]`)
          .join('\n'),
      /alias/i,
    ],
  ])('%s: 400 with the reason, and the host keeps answering', async (_what, body, reason) => {
    const res = await fetch(`${stack.baseUrl}/api/jobs`, { method: 'POST', headers: { ...key(), 'content-type': 'application/yaml' }, body });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { errors: { message: string }[] }).errors[0].message).toMatch(reason);
    expect((await fetch(`${stack.baseUrl}/api/health`)).status).toBe(200);
  });

  it('a body over the size limit is refused with 413 before it is read', async () => {
    const res = await fetch(`${stack.baseUrl}/api/jobs`, {
      method: 'POST',
      headers: { ...key(), 'content-type': 'application/yaml' },
      body: 'x'.repeat(1_200_000),
    });
    expect(res.status).toBe(413);
  });
});
