/**
 * Azure's facts on the real local stack (the compiled app behind the local Functions host, the Batch emulator with its
 * management plane, real tokens): a dry run or a submission naming a size the region does not offer, or an image with
 * another node agent SKU, is a 400 with the field path and the nearest valid choices, and no pool is created; and
 * admission keeps the core quota the account reports (lowered in the emulator, no ADMISSION_CORE_QUOTA set). On the
 * code before, each of these specs was accepted and its pool created. Needs the compiled app: `bash scripts/ensure-deps.sh`.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { eventually } from '../intake/support';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
let stack: Stack;
let headers: Record<string, string>;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImage: false,
    poolIdentity: true,
    logDestination: path.join(LOGS, 'e2e-azure-facts-host.log'),
    // The account's quota for the D v5 family fits one Standard_D2s_v5 node; nothing in the app's settings says so.
    batch: { quota: { perFamily: { standardDSv5Family: 2 } } },
    env: { ADMISSION_POLL_SECONDS: '5' },
  });
  headers = {
    authorization: `Bearer ${await stack.identity.userToken('alice', { roles: ['Jobs.Submit'], name: 'alice' })}`,
    'content-type': 'application/yaml',
  };
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, body?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

function spec(id: string, pool: Record<string, unknown>): string {
  return stringify({
    id,
    name: id,
    pool,
    container: { runtime: 'none' },
    data: { inputs: [] },
    mpi: { runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command: 'true' },
    limits: { maxWallClock: 'PT10M' },
  });
}

const errorAt = (body: { errors?: { path: string; message: string }[] }, p: string) => body.errors?.find((e) => e.path === p)?.message;

test('a dry run with Standard_Bogus9 is a 400 at pool.vmSize with suggestions, and no pool exists', async () => {
  const res = await call('POST', '/api/jobs?dryRun=true', spec('facts-bogus', { vmSize: 'Standard_Bogus9', nodes: 1 }));
  expect(res.status).toBe(400);
  expect(errorAt(res.body, 'pool.vmSize')).toMatch(
    /^Standard_Bogus9 is not a VM size the Batch account offers in westeurope; did you mean Standard_\w+, Standard_\w+, Standard_\w+\?$/,
  );
  // A near miss suggests the real name first.
  const near = await call('POST', '/api/jobs?dryRun=true', spec('facts-near', { vmSize: 'Standard_HB120rs_v2x', nodes: 1 }));
  expect(errorAt(near.body, 'pool.vmSize')).toMatch(/did you mean Standard_HB120rs_v[23]/);
  // The submission is refused the same way, before anything is written or created.
  const submitted = await call('POST', '/api/jobs', spec('facts-bogus', { vmSize: 'Standard_Bogus9', nodes: 1 }));
  expect(submitted.status).toBe(400);
  expect((await call('GET', '/api/jobs/facts-bogus')).status).toBe(404);
  expect(stack.batch.pools()).toEqual([]);
  // A valid spec's dry run says which facts it was checked against.
  const ok = await call('POST', '/api/jobs?dryRun=true', spec('facts-ok', { vmSize: 'standard_hb120rs_v3', nodes: 2 }));
  expect(ok.status).toBe(200);
  expect(ok.body.pool.facts).toMatchObject({
    source: 'account',
    location: 'westeurope',
    vmSize: { name: 'Standard_HB120rs_v3', family: 'standardHBv3Family', vCPUs: 120, memoryGiB: 448, gpus: 0, rdma: true },
  });
  expect(Date.parse(ok.body.pool.facts.readAt.sizes)).not.toBeNaN();
});

test('an Ubuntu image with the Windows node agent is a 400 at pool.nodeAgentSku naming the right agent', async () => {
  const res = await call(
    'POST',
    '/api/jobs?dryRun=true',
    spec('facts-agent', {
      vmSize: 'Standard_D2s_v5',
      nodes: 1,
      image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204' },
      nodeAgentSku: 'batch.node.windows amd64',
    }),
  );
  expect(res.status).toBe(400);
  expect(errorAt(res.body, 'pool.nodeAgentSku')).toBe(
    'the image microsoft-dsvm:ubuntu-hpc:2204 needs the node agent SKU batch.node.ubuntu 22.04, not "batch.node.windows amd64"',
  );
  const image = await call(
    'POST',
    '/api/jobs?dryRun=true',
    spec('facts-image', {
      vmSize: 'Standard_D2s_v5',
      nodes: 1,
      image: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2404' },
      nodeAgentSku: 'batch.node.ubuntu 24.04',
    }),
  );
  expect(errorAt(image.body, 'pool.image')).toMatch(/did you mean .*microsoft-dsvm:ubuntu-hpc:2204 \(batch\.node\.ubuntu 22\.04\)/);
  expect(stack.batch.pools()).toEqual([]);
});

test("admission keeps the account's lowered core quota: a job needing more is refused with the account's number", async () => {
  const queues = await call('GET', '/api/queues');
  expect(queues.status).toBe(200);
  expect(queues.body.limits.coreQuota.families.standardDSv5Family).toBe(2);
  expect(queues.body.limits.coreQuota.total).toBe(900);
  const res = await call('POST', '/api/jobs', spec('facts-toobig', { vmSize: 'Standard_D2s_v5', nodes: 2 }));
  expect(res.status).toBe(202);
  const job = await eventually('the job refused at admission', 90_000, async () => {
    const view = await call('GET', '/api/jobs/facts-toobig');
    return view.body?.state === 'Failed' ? view.body : undefined;
  });
  expect(job.error?.message).toMatch(/^refused at admission: the job needs 4 standardDSv5Family cores; the Batch account's quota for that family is 2/);
  expect(stack.batch.pools()).toEqual([]);
}, 120_000);
