/**
 * Pools have owners (security issue 23, part 2), on the real local stack: the compiled app behind the local Functions
 * host, real tokens of the local issuer, the Batch emulator running real processes. The finding: `pool.poolId` was
 * accepted for any pool, so bob's job ran on the nodes of a pool alice's job had kept (`cleanup.deletePool: never`)
 * and read her task directories. Each test here fails on that code: there, every submission below was accepted and
 * ran. Needs the compiled app (dist/): `bash scripts/ensure-deps.sh`.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { watchJob, asOperator } from '../../local/jobRunner';
import { batchClient } from '../ops/helpers';
import { durableInstances, enqueue, eventually, jobRows, submissionsQueue } from '../intake/support';
import { JOB_KEY, OWNER_KEY, OWNER_VALUE, SUBMITTER_KEY } from '../../shared/adapters/batch/common';
import { batchIdFor } from '../../shared/core/planning/jobPlan';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
const HOST_LOG = path.join(LOGS, 'security-pool-tenancy-host.log');
const SHARED_POOL = 'tenancy-shared';
let stack: Stack;

type Headers = Record<string, string>;
let alice: Headers;
let bob: Headers;
const ownerOf = (user: string) => `${stack.identity.tenantId}/${stack.identity.user(user)?.oid}`;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImage: false,
    logDestination: HOST_LOG,
    // The sweep never runs on its own here (it would delete the kept pools this test reads).
    env: { SHARED_POOLS: `${SHARED_POOL}=submitter`, SWEEP_SCHEDULE: '0 0 0 1 1 *' },
  });
  await submissionsQueue(stack).createIfNotExists();
  const token = async (user: string) => ({ authorization: `Bearer ${await stack.identity.userToken(user, { roles: ['Jobs.Submit'], name: user })}` });
  alice = await token('alice');
  bob = await token('bob');
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

// Answers are read field by field: untyped JSON on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, headers: Headers, body?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/yaml' } : {}) }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** A native one-node Open MPI job; `pool` replaces the default new pool. */
function spec(id: string, opts: { pool?: Record<string, unknown>; command?: string; cleanup?: Record<string, unknown>; dependsOn?: unknown[] } = {}): string {
  return stringify({
    id,
    name: id,
    tags: { suite: 'pool-tenancy' },
    pool: opts.pool ?? { vmSize: 'Standard_D2s_v5', nodes: 1 },
    container: { runtime: 'none' },
    data: { inputs: [] },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: opts.command ?? 'true' },
    limits: { maxWallClock: 'PT10M' },
    ...(opts.cleanup ? { cleanup: opts.cleanup } : {}),
    ...(opts.dependsOn ? { dependsOn: opts.dependsOn } : {}),
  });
}

const ALICE_JOB = 'ten-alice-kept';
const ALICE_POOL = batchIdFor('hpc', ALICE_JOB);

/** A pool made in Batch directly, as an operator (or an older version of the app) would have. */
async function addPool(id: string, metadata?: { name: string; value: string }[]): Promise<void> {
  await batchClient(stack).pool.add({
    id,
    vmSize: 'Standard_D2s_v5',
    targetDedicatedNodes: 1,
    enableInterNodeCommunication: true,
    taskSlotsPerNode: 1,
    virtualMachineConfiguration: {
      imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
      nodeAgentSKUId: 'batch.node.ubuntu 22.04',
    },
    ...(metadata ? { metadata } : {}),
  });
}

/** Batch jobs placed on `poolId` (any state). */
async function batchJobsOn(poolId: string): Promise<string[]> {
  const out: string[] = [];
  for (const j of await batchClient(stack).job.list()) if (j.poolInfo?.poolId === poolId) out.push(j.id ?? '');
  return out;
}

/** Nothing of a refused submission exists: no job row, no orchestration. */
async function expectNothingWritten(id: string): Promise<void> {
  expect(await jobRows(stack, id)).toEqual([]);
  expect((await durableInstances(stack)).filter((i) => i.instanceId === id)).toEqual([]);
}

describe('a pool the pipeline creates records its owner', () => {
  it("alice's kept pool carries her owner id in its metadata, and her job shows it", async () => {
    const res = await call('POST', '/api/jobs', alice, spec(ALICE_JOB, { cleanup: { deletePool: 'never' } }));
    expect(res.status).toBe(202);
    expect((await watchJob(stack, ALICE_JOB, 120_000, undefined, asOperator(stack))).state).toBe('Succeeded');
    const pool = await batchClient(stack).pool.get(ALICE_POOL);
    expect(pool.metadata).toEqual(
      expect.arrayContaining([
        { name: OWNER_KEY, value: OWNER_VALUE },
        { name: JOB_KEY, value: ALICE_JOB },
        { name: SUBMITTER_KEY, value: ownerOf('alice') },
      ]),
    );
    const view = await call('GET', `/api/jobs/${ALICE_JOB}`, alice);
    expect(view.body.pool).toEqual({ poolId: ALICE_POOL, createdByJob: true, owner: ownerOf('alice'), kept: true });
  }, 150_000);
});

describe("bob may not name alice's pool", () => {
  const foreign = () => spec('ten-bob-on-alice', { pool: { poolId: ALICE_POOL, nodes: 1 } });

  it('over HTTP: 403 PoolForbidden at pool.poolId, and nothing is written', async () => {
    const res = await call('POST', '/api/jobs', bob, foreign());
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'PoolForbidden', errors: [{ path: 'pool.poolId', message: expect.stringMatching(/is not one you may use/) }] });
    // "Not yours", and nothing of alice: neither her id nor her job.
    expect(JSON.stringify(res.body)).not.toContain(ownerOf('alice'));
    expect(JSON.stringify(res.body)).not.toContain(`job ${ALICE_JOB}`);
    await expectNothingWritten('ten-bob-on-alice');
  });

  it("in a dry run: the same 403; alice's own dry run on her pool is explained", async () => {
    const dry = await call('POST', '/api/jobs?dryRun=true', bob, foreign());
    expect(dry.status).toBe(403);
    expect(dry.body).toMatchObject({ error: 'PoolForbidden', errors: [{ path: 'pool.poolId' }] });
    const own = await call('POST', '/api/jobs?dryRun=true', alice, spec('ten-alice-again', { pool: { poolId: ALICE_POOL, nodes: 1 } }));
    expect(own.status).toBe(200);
    expect(own.body.pool).toMatchObject({ poolId: ALICE_POOL, action: 'reuse' });
  });

  it('over the queue: the message is dropped with a log line, and nothing is written', async () => {
    const id = 'ten-queue-on-alice';
    await enqueue(submissionsQueue(stack), spec(id, { pool: { poolId: ALICE_POOL, nodes: 1 } }));
    await eventually('the queue to refuse the message', 60_000, async () => {
      const lines = readFileSync(HOST_LOG, 'utf8')
        .split('\n')
        .filter((l) => l.includes('rejected queue message') && l.includes(`pool ${ALICE_POOL} is not one you may use`));
      return lines.length ? lines : undefined;
    });
    await expectNothingWritten(id);
    const poison = (await submissionsQueue(stack, 'job-submissions-poison').exists())
      ? (await submissionsQueue(stack, 'job-submissions-poison').peekMessages({ numberOfMessages: 32 })).peekedMessageItems
      : [];
    expect(poison).toEqual([]);
  });

  it("no job but alice's own ever reached her pool", async () => {
    const jobs = await batchJobsOn(ALICE_POOL);
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    for (const j of jobs) expect(j).toContain(ALICE_JOB);
  });
});

const GATE = path.join(tmpdir(), `pool-tenancy-gate-${process.pid}`);

describe('a pool the deployment shares (SHARED_POOLS), and the check when the job is placed on its pool', () => {
  const parent = 'ten-bob-shared';
  const child = 'ten-bob-recheck';
  const BOB_POOL = 'ten-bob-kept';

  it('bob runs on the shared pool; his next job, on a pool that was his at submission but not when admitted, fails and never reaches that pool', async () => {
    await addPool(SHARED_POOL);
    // The parent holds until the test opens the gate (a file on this machine: the emulator's nodes are local processes).
    const shared = await call(
      'POST',
      '/api/jobs',
      bob,
      spec(parent, { pool: { poolId: SHARED_POOL, nodes: 1 }, command: `sh -c 'while [ ! -e ${GATE} ]; do sleep 0.2; done'` }),
    );
    expect(shared.status).toBe(202);

    // A pool an older version of the app kept for bob: his at submission (its metadata says so).
    await addPool(BOB_POOL, [
      { name: OWNER_KEY, value: OWNER_VALUE },
      { name: JOB_KEY, value: 'ten-bob-old' },
      { name: SUBMITTER_KEY, value: ownerOf('bob') },
    ]);
    const res = await call('POST', '/api/jobs', bob, spec(child, { pool: { poolId: BOB_POOL, nodes: 1 }, dependsOn: [{ job: parent }] }));
    expect(res.status).toBe(202);
    // Before the child is admitted (it waits for its parent), the pool changes hands.
    await batchClient(stack).pool.patch(BOB_POOL, {
      metadata: [
        { name: OWNER_KEY, value: OWNER_VALUE },
        { name: JOB_KEY, value: ALICE_JOB },
        { name: SUBMITTER_KEY, value: ownerOf('alice') },
      ],
    });
    writeFileSync(GATE, 'open');

    expect((await watchJob(stack, parent, 120_000, undefined, asOperator(stack))).state).toBe('Succeeded');
    expect(await batchJobsOn(SHARED_POOL)).toHaveLength(1);
    const ended = await watchJob(stack, child, 120_000, undefined, asOperator(stack));
    expect(ended.state).toBe('Failed');
    const view = await call('GET', `/api/jobs/${child}`, bob);
    expect(JSON.stringify(view.body.error ?? view.body)).toMatch(new RegExp(`pool ${BOB_POOL} is not one you may use`));
    // The run never started: no Batch job (and so no task) on the pool.
    expect(await batchJobsOn(BOB_POOL)).toEqual([]);
  }, 240_000);
});
