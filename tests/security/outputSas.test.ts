/**
 * Issue 23, item 1, the last gap, on the local stack: with OUTPUTS_REQUIRE_SCOPED_SAS=true a job whose outputs go to
 * a data account without a hierarchical namespace (the local data account: Azurite has none) is refused at the door,
 * 400 at `outputs.account`, and nothing is recorded. And why the upload through a directory SAS is not run here:
 * Azurite does not know `sr=d` and refuses such a SAS, while the container SAS of a flat account works (the same
 * account, container and blob name). Needs the compiled app (dist/).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { BlockBlobClient } from '@azure/storage-blob';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { blobAccount } from '../../shared/adapters/storage/clients';
import { containerSasUrl, directorySasUrl } from '../../shared/adapters/storage/sas';

let stack: Stack;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'security-output-sas-host.log'),
    demoImage: false,
    env: { OUTPUTS_REQUIRE_SCOPED_SAS: 'true', DEFAULT_OUTPUTS: 'none' },
  });
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

type Headers = Record<string, string>;

// Answers of several shapes (problems, views): untyped JSON on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, headers: Headers, body?: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

it('outputs to a flat account are 400 at outputs.account and the job is not recorded', async () => {
  const alice = { authorization: `Bearer ${await stack.identity.userToken('alice', { roles: ['Jobs.Submit'], name: 'alice' })}` };
  const id = 'osas-flat';
  const spec = {
    id,
    name: id,
    pool: { poolId: `no-such-pool-${id}`, nodes: 1 },
    mpi: { runtime: 'openmpi', command: 'true' },
    outputs: { account: DATA_ACCOUNT.name, container: 'results' },
  };
  const res = await call('POST', '/api/jobs', alice, JSON.stringify(spec));
  expect(res.status).toBe(400);
  const errors = (res.body.errors ?? []) as { path: string; message: string }[];
  expect(errors).toEqual([expect.objectContaining({ path: 'outputs.account' })]);
  expect(errors[0].message).toContain('hierarchical namespace');
  expect(errors[0].message).toContain('OUTPUTS_REQUIRE_SCOPED_SAS');
  expect((await call('GET', `/api/jobs/${id}`, alice)).status).toBe(404);
}, 60_000);

it('Azurite refuses a directory SAS (no hierarchical namespace), and takes the container SAS', async () => {
  // As the app reaches it: by token, so both SAS are user delegation SAS (the local stack refuses account keys).
  const account = blobAccount({ kind: 'managedIdentity', accountName: DATA_ACCOUNT.name, blobEndpoint: stack.azurite.blobEndpoint(DATA_ACCOUNT.name) });
  const container = 'osas-probe';
  await stack.operator.blobService(DATA_ACCOUNT.name).getContainerClient(container).createIfNotExists();
  const expires = new Date(Date.now() + 3_600_000);
  const name = 'users/x/jobs/probe/workdir/out.txt';
  const upload = async (containerUrl: string) => {
    const [base, query] = containerUrl.split('?');
    await new BlockBlobClient(`${base}/${name}?${query}`).upload('x', 1);
  };
  const directory = await directorySasUrl(account, container, 'users/x/jobs/probe', 'cw', expires);
  expect(new URL(directory).searchParams.get('sr')).toBe('d');
  await expect(upload(directory)).rejects.toMatchObject({ statusCode: 403 });
  await upload(await containerSasUrl(account, container, 'cw', expires));
  expect((await stack.operator.blobService(DATA_ACCOUNT.name).getContainerClient(container).getBlobClient(name).getProperties()).contentLength).toBe(1);
}, 60_000);
