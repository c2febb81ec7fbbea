/**
 * Issue 23, part 1 (owner namespaces in the shared data accounts), replayed on the local stack over HTTP and the
 * queue, as two users of the local tenant (alice and bob, Jobs.Submit). Before: `outputs.prefix` was free text (a job
 * of bob's whose prefix was alice's job id listed, downloaded and overwrote alice's files), and inputs, files,
 * start-task files, SIF images and mounts could name any container or prefix of the data accounts. Now each path must
 * lie in the submitter's area `users/<ownerKey>/` or a shared area its roles open; anything else is 403
 * DataAreaForbidden with the field path (the queue: a rejected row with that code), and nothing is written.
 * Needs the compiled app (dist/).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import type { BlobServiceClient } from '@azure/storage-blob';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { watchJob, asOperator } from '../../local/jobRunner';
import { durableInstances, enqueue, jobRows, jobsTable, submissionsQueue } from '../intake/support';
import { until } from '../batch/until';
import { parseJobSpec } from '../../shared/core/spec';
import { jobToEntity } from '../../shared/core/state/entityCodec';
import type { JobRecord } from '../../shared/adapters/state';

let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'security-data-tenancy-host.log'), demoImage: false });
  await submissionsQueue(stack).createIfNotExists();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

type Headers = Record<string, string>;
const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` });
const as = async (user: string, roles: string[]): Promise<Headers> => bearer(await stack.identity.userToken(user, { roles, name: user }));
const operator = (): Headers => ({ 'x-functions-key': stack.host.keys.functionKey });
const ownerOf = (user: string) => `${stack.identity.tenantId}/${stack.identity.user(user)?.oid}`;
const areaOf = (user: string) => `users/${ownerOf(user)}/`;

// Answers of several shapes (problems, views, listings): untyped JSON on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, headers: Headers, body?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

function data(): BlobServiceClient {
  return stack.operator.blobService(DATA_ACCOUNT.name);
}

async function blobText(container: string, name: string): Promise<string> {
  return (await data().getContainerClient(container).getBlobClient(name).downloadToBuffer()).toString('utf8');
}

async function seed(container: string, name: string, text: string): Promise<void> {
  const c = data().getContainerClient(container);
  await c.createIfNotExists();
  await c.getBlockBlobClient(name).upload(text, Buffer.byteLength(text));
}

/** A job that ends at once (its pool does not exist): enough for intake's decisions. */
const spec = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  name: id,
  tags: { suite: 'data-tenancy' },
  pool: { poolId: `no-such-pool-${id}`, nodes: 1 },
  mpi: { runtime: 'openmpi', command: 'true' },
  ...extra,
});
const newPool = { vmSize: 'Standard_D2s_v5', nodes: 1 };

let alice: Headers;
let bob: Headers;

beforeAll(async () => {
  alice = await as('alice', ['Jobs.Submit']);
  bob = await as('bob', ['Jobs.Submit']);
  // Bob's private data: an input deck and the result of one of his jobs, where the old default would have put it and
  // where the new one does.
  await seed('inputs', `${areaOf('bob')}secret/deck.txt`, 'bob-private-deck');
  await seed('results', `${areaOf('bob')}jobs/dt-bob-run/workdir/result.txt`, 'bob-original-result');
  await seed('results', 'dt-bob-run/workdir/result.txt', 'bob-legacy-result');
}, 60_000);

describe('GET /api/me', () => {
  it('tells each user its own data area and the shared areas it may use', async () => {
    const me = await call('GET', '/api/me', alice);
    expect(me.status).toBe(200);
    expect(me.body.dataArea).toBe(areaOf('alice'));
    expect(me.body.sharedAreas).toEqual(expect.arrayContaining([{ account: DATA_ACCOUNT.name, container: 'software', prefix: '', access: 'read' }]));
    expect((await call('GET', '/api/me', bob)).body.dataArea).toBe(areaOf('bob'));
    expect((await call('GET', '/api/me', operator())).body.dataArea).toBe('users/operator/');
  });
});

describe("a spec naming another owner's data is refused with 403 and writes nothing", () => {
  const bobs = () => areaOf('bob');
  const cases: [string, () => Record<string, unknown>, string][] = [
    [
      "outputs in bob's job directory",
      () => ({ outputs: { account: DATA_ACCOUNT.name, container: 'results', prefix: `${bobs()}jobs/dt-bob-run` } }),
      'outputs.prefix',
    ],
    [
      "outputs under bob's job id (the old default)",
      () => ({ outputs: { account: DATA_ACCOUNT.name, container: 'results', prefix: 'dt-bob-run' } }),
      'outputs.prefix',
    ],
    [
      "inputs in bob's area",
      () => ({ data: { inputs: [{ account: DATA_ACCOUNT.name, container: 'inputs', prefix: `${bobs()}secret/` }] } }),
      'data.inputs[0].prefix',
    ],
    ['the whole inputs container', () => ({ data: { inputs: [{ account: DATA_ACCOUNT.name, container: 'inputs' }] } }), 'data.inputs[0].prefix'],
    [
      "a file of bob's",
      () => ({ files: [{ account: DATA_ACCOUNT.name, container: 'inputs', blob: `${bobs()}secret/deck.txt`, path: 'deck.txt' }] }),
      'files[0].blob',
    ],
    ["every file under bob's area", () => ({ files: [{ account: DATA_ACCOUNT.name, container: 'inputs', prefix: bobs() }] }), 'files[0].prefix'],
    [
      "a start-task file of bob's",
      () => ({
        pool: {
          ...newPool,
          startTask: {
            command: 'true',
            resourceFiles: [{ account: DATA_ACCOUNT.name, container: 'inputs', blob: `${bobs()}secret/deck.txt`, path: 'deck.txt' }],
          },
        },
      }),
      'pool.startTask.resourceFiles[0].blob',
    ],
    // checks.image: warn — Azure's Ubuntu-HPC image has no Apptainer (docs/images.md); the tenancy answer is under test.
    [
      "a SIF image of bob's",
      () => ({
        pool: newPool,
        checks: { image: 'warn' },
        container: { runtime: 'singularity', images: [{ account: DATA_ACCOUNT.name, container: 'inputs', blob: `${bobs()}x.sif` }] },
      }),
      'container.images[0].blob',
    ],
    [
      'a blobfuse mount of the whole results container',
      () => ({ pool: newPool, mounts: [{ name: 'all', blobfuse: { account: DATA_ACCOUNT.name, container: 'results' } }] }),
      'mounts[0].blobfuse.container',
    ],
    ['writing into a read-only shared area', () => ({ outputs: { account: DATA_ACCOUNT.name, container: 'software', prefix: 'mine' } }), 'outputs.prefix'],
  ];

  it.each(cases.map(([what, extra, at], i) => [what, extra, at, `dt-x-${i}`] as const))(
    '%s: POST and the dry run answer 403 at %s',
    async (_what, extra, at, id) => {
      const body = JSON.stringify(spec(id, extra()));
      for (const route of ['/api/jobs', '/api/jobs?dryRun=true']) {
        const res = await call('POST', route, alice, body);
        expect({ route, status: res.status, error: res.body.error }).toEqual({ route, status: 403, error: 'DataAreaForbidden' });
        expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual([at]);
        expect(res.body.errors[0].message).toContain(areaOf('alice'));
      }
      expect(await jobRows(stack, id)).toEqual([]);
      expect((await durableInstances(stack)).map((i) => i.instanceId)).not.toContain(id);
    },
  );

  it('the queue door rejects such a message: a Failed row with the reason, no orchestration', async () => {
    await enqueue(
      submissionsQueue(stack),
      spec('dt-q-bob', { outputs: { account: DATA_ACCOUNT.name, container: 'results', prefix: `${areaOf('bob')}jobs/dt-bob-run` } }),
    );
    const row = await until(
      'the rejected message to be recorded',
      async () => {
        const r = await call('GET', '/api/jobs/dt-q-bob', operator());
        return r.status === 200 && r.body.state === 'Failed' ? r.body : undefined;
      },
      30_000,
    );
    expect(row.error.code).toBe('DataAreaForbidden');
    expect(row.error.message).toContain('outputs.prefix');
    expect((await durableInstances(stack)).map((i) => i.instanceId)).not.toContain('dt-q-bob');
  });

  it("nothing of bob's was touched", async () => {
    expect(await blobText('results', `${areaOf('bob')}jobs/dt-bob-run/workdir/result.txt`)).toBe('bob-original-result');
    expect(await blobText('inputs', `${areaOf('bob')}secret/deck.txt`)).toBe('bob-private-deck');
  });
});

describe('what each may name', () => {
  it('a user its own area and the shared areas; an admin any area', async () => {
    const own = spec('dt-alice-own', {
      data: { inputs: [{ account: DATA_ACCOUNT.name, container: 'inputs', prefix: `${areaOf('alice')}deck/` }] },
      files: [{ account: DATA_ACCOUNT.name, container: 'software', blob: 'tool.sh', path: 'tool.sh' }],
      outputs: { account: DATA_ACCOUNT.name, container: 'results', prefix: `${areaOf('alice')}runs/1` },
    });
    // The dry run also looks up what the job reads (fail before paying): alice's deck and the shared tool exist.
    await seed('inputs', `${areaOf('alice')}deck/part-0`, 'alice-deck');
    await seed('software', 'tool.sh', '#!/bin/sh\n');
    expect((await call('POST', '/api/jobs?dryRun=true', alice, JSON.stringify(own))).status).toBe(200);
    const admins = spec('dt-admin-any', { outputs: { account: DATA_ACCOUNT.name, container: 'results', prefix: `${areaOf('bob')}jobs/dt-admin` } });
    expect((await call('POST', '/api/jobs?dryRun=true', operator(), JSON.stringify(admins))).status).toBe(200);
  });

  it('the queue its own area, users/queue/', async () => {
    await enqueue(submissionsQueue(stack), spec('dt-q-own', { outputs: { account: DATA_ACCOUNT.name, container: 'results', prefix: 'users/queue/runs/1' } }));
    const job = await until(
      'the queue job to be accepted',
      async () => {
        const r = await call('GET', '/api/jobs/dt-q-own', operator());
        return r.status === 200 ? r.body : undefined;
      },
      30_000,
    );
    expect(job.error?.code).not.toBe('DataAreaForbidden');
  });
});

describe('a job without outputs.prefix', () => {
  it("records its owner's job directory and the default wall clock, runs there, and its outputs are served only to its owner", async () => {
    const runs = spec('dt-alice-run', {
      pool: newPool,
      mpi: { runtime: 'openmpi', processesPerNode: 1, command: 'echo private-output-of-alice' },
      outputs: { account: DATA_ACCOUNT.name, container: 'results' },
    });
    const submitted = await call('POST', '/api/jobs', alice, JSON.stringify(runs));
    expect(submitted.status).toBe(202);
    const view = await watchJob(stack, 'dt-alice-run', 180_000, undefined, asOperator(stack));
    expect(view.state).toBe('Succeeded');
    const recorded = (await call('GET', '/api/jobs/dt-alice-run', alice)).body.spec;
    const prefix = `${areaOf('alice')}jobs/dt-alice-run`;
    expect(recorded.outputs.prefix).toBe(prefix);
    expect(recorded.limits.maxWallClock).toBe('P1D');
    expect(await blobText('results', `${prefix}/logs/stdout.txt`)).toContain('private-output-of-alice');

    const mine = await call('GET', '/api/jobs/dt-alice-run/outputs', alice);
    expect(mine.status).toBe(200);
    expect(mine.body.prefix).toBe(prefix);
    const stdout = mine.body.files.find((f: { name: string }) => f.name === 'logs/stdout.txt');
    expect(await (await fetch(stdout.url)).text()).toContain('private-output-of-alice');
    // Bob: not his job (404, as for a job that does not exist), neither its outputs nor its logs.
    for (const route of ['/api/jobs/dt-alice-run/outputs', '/api/jobs/dt-alice-run/logs', '/api/jobs/dt-alice-run']) {
      expect({ route, status: (await call('GET', route, bob)).status }).toEqual({ route, status: 404 });
    }
  }, 240_000);
});

describe('the outputs API checks where the blobs are, not only whose row it is', () => {
  async function writeRow(id: string, owner: string, prefix: string, dataArea: string | undefined): Promise<void> {
    const parsed = parseJobSpec(spec(id, { outputs: { account: DATA_ACCOUNT.name, container: 'results', prefix } }));
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
    const at = new Date().toISOString();
    const row: JobRecord = {
      id,
      name: id,
      owner,
      tags: {},
      specHash: 'x',
      spec: parsed.spec,
      state: 'Failed',
      stage: 'Failed',
      progress: null,
      createdAt: at,
      updatedAt: at,
      eventSeq: 1,
      ...(dataArea !== undefined ? { dataArea } : {}),
    };
    await jobsTable(stack).createEntity(jobToEntity(row));
  }

  it("a row of alice's naming bob's area (written around intake) is 403 DataAreaForbidden, with no SAS", async () => {
    await writeRow('dt-row-forged', ownerOf('alice'), `${areaOf('bob')}jobs/dt-bob-run`, areaOf('alice'));
    const res = await call('GET', '/api/jobs/dt-row-forged/outputs', alice);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ error: 'DataAreaForbidden', errors: [{ path: 'outputs.prefix' }] });
    expect(JSON.stringify(res.body)).not.toContain('sig=');
  });

  it('a row from before the rule keeps serving its recorded prefix to its owner', async () => {
    await seed('results', 'dt-legacy-alice/workdir/old.txt', 'alice-legacy');
    await writeRow('dt-legacy-alice', ownerOf('alice'), 'dt-legacy-alice', undefined);
    const res = await call('GET', '/api/jobs/dt-legacy-alice/outputs', alice);
    expect(res.status).toBe(200);
    expect(res.body.files.map((f: { name: string }) => f.name)).toEqual(['workdir/old.txt']);
    expect((await call('GET', '/api/jobs/dt-legacy-alice/outputs', bob)).status).toBe(404);
  });
});
