/**
 * Identity and tenancy on the local stack (security issue 18, first part): the compiled app behind the local
 * Functions host, the local identity service issuing real RS256 tokens, requests over HTTP as any client would
 * send them. Each test here fails on the code before identities: there, GET /api/jobs and /api/jobs/{id} were
 * anonymous (every job, its output tails and timeline, for anyone), owner came from x-ms-client-principal-name,
 * and the only credential was the host's function key.
 * Needs the compiled app (dist/).
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { SignJWT, generateKeyPair } from 'jose';
import { ClientSecretCredential } from '@azure/identity';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { startIdentityService, AUTOMATION_CLIENT_ID, AUTOMATION_CLIENT_SECRET, type IdentityService } from '../../local/identity';
import { trustingLocalIssuer } from '../../local/identity/trust';
import { watchJob, asOperator } from '../../local/jobRunner';

let stack: Stack;
let foreign: IdentityService;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'security-host.log'), demoImage: false });
  // Another tenant's issuer: real tokens, valid in every way except that this API does not trust their issuer.
  foreign = await startIdentityService();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
  await foreign?.stop();
}, 60_000);

type Headers = Record<string, string>;
const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` });
const as = async (user: string, roles: string[]): Promise<Headers> =>
  bearer(await stack.identity.userToken(user, { roles, name: `${user[0].toUpperCase()}${user.slice(1)}` }));
const operator = (): Headers => ({ 'x-functions-key': stack.host.keys.functionKey });

// The answers are read field by field in many shapes (views, lists, problems, usage): untyped JSON on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, headers: Headers = {}, body?: string): Promise<{ status: number; body: any; headers: globalThis.Headers }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
}

/** A job that ends at once (Failed: its pool does not exist), so its row and timeline exist quickly. */
const spec = (id: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    id,
    name: id,
    tags: { suite: 'security' },
    pool: { poolId: `no-such-pool-${id}`, nodes: 1 },
    mpi: { runtime: 'openmpi', command: 'true' },
    ...extra,
  });

/** A job that really runs (one node, real mpirun) and prints a line only its owner may read back. */
const runningSpec = (id: string) =>
  spec(id, { pool: { vmSize: 'Standard_D2s_v5', nodes: 1 }, mpi: { runtime: 'openmpi', processesPerNode: 1, command: `echo private-output-of-${id}` } });

const ids = (list: { jobs: { id: string }[] }) =>
  list.jobs
    .map((j) => j.id)
    .filter((id) => id.startsWith('sec-'))
    .sort();
const ownerOf = (user: string) => `${stack.identity.tenantId}/${stack.identity.user(user)?.oid}`;

let alice: Headers;
let bob: Headers;

beforeAll(async () => {
  alice = await as('alice', ['Jobs.Submit']);
  bob = await as('bob', ['Jobs.Submit']);
  for (const [who, id] of [
    [alice, 'sec-alice-1'],
    [alice, 'sec-alice-2'],
    [bob, 'sec-bob-1'],
  ] as const) {
    const res = await call('POST', '/api/jobs', who, id === 'sec-alice-2' ? spec(id) : runningSpec(id));
    if (res.status !== 202) throw new Error(`submit ${id}: ${res.status} ${JSON.stringify(res.body)}`);
  }
  for (const id of ['sec-alice-1', 'sec-alice-2', 'sec-bob-1']) await watchJob(stack, id, 90_000, undefined, asOperator(stack));
}, 120_000);

describe('anonymous callers (ANONYMOUS_ROLE defaults to none)', () => {
  it.each([
    ['GET', '/api/jobs'],
    ['GET', '/api/jobs/sec-alice-1'],
    ['GET', '/api/jobs/sec-alice-1/logs'],
    ['GET', '/api/jobs/sec-alice-1/outputs'],
    ['DELETE', '/api/jobs/sec-alice-1'],
    ['GET', '/api/usage'],
    ['GET', '/api/me'],
  ])('%s %s is 401 with a Bearer challenge', async (method, route) => {
    const res = await call(method, route);
    expect({ status: res.status, challenge: res.headers.get('www-authenticate') }).toEqual({ status: 401, challenge: 'Bearer realm="hpc-jobs"' });
    expect(res.body).toMatchObject({ error: 'Unauthorized' });
  });

  it('POST /api/jobs without credentials is 401 and records nothing', async () => {
    const res = await call('POST', '/api/jobs', {}, spec('sec-anonymous'));
    expect(res.status).toBe(401);
    expect((await call('GET', '/api/jobs/sec-anonymous', operator())).status).toBe(404);
  });

  it('health, the OpenAPI document and the dashboard page stay open', async () => {
    for (const route of ['/api/health', '/api/openapi.json', '/api/dashboard'])
      expect({ route, status: (await fetch(`${stack.baseUrl}${route}`)).status }).toEqual({ route, status: 200 });
  });
});

describe('tenancy: own jobs only, admins all', () => {
  it("the owner is the token's tenant/object id, with the display name beside it", async () => {
    const job = await call('GET', '/api/jobs/sec-alice-1', alice);
    expect(job.status).toBe(200);
    expect(job.body).toMatchObject({ owner: ownerOf('alice'), ownerName: 'Alice' });
    expect(ownerOf('alice')).toMatch(/^[0-9a-f-]{36}\/[0-9a-f-]{36}$/);
  });

  it("a submitter lists, reads, reads the logs and timeline of its own jobs only; others' are 404 like missing ones", async () => {
    expect(ids((await call('GET', '/api/jobs?top=1000', alice)).body)).toEqual(['sec-alice-1', 'sec-alice-2']);
    expect(ids((await call('GET', '/api/jobs?top=1000&tag=suite=security', bob)).body)).toEqual(['sec-bob-1']);
    const own = await call('GET', '/api/jobs/sec-bob-1', bob);
    expect(own.status).toBe(200);
    expect(own.body.timeline.length).toBeGreaterThan(0);
    expect(own.body.result.mpi.stdoutTail).toContain('private-output-of-sec-bob-1');
    expect((await call('GET', '/api/jobs/sec-bob-1/logs', bob)).body.content).toContain('private-output-of-sec-bob-1');
    // alice's output tail is in no answer bob gets (the list carried every job's result before).
    expect(JSON.stringify((await call('GET', '/api/jobs?top=1000', bob)).body)).not.toContain('private-output-of-sec-alice-1');

    const missing = await call('GET', '/api/jobs/sec-nobody', bob);
    // The owner's own job without an outputs section keeps its full logs by default, in the owner's own area;
    // someone else's is JobNotFound, like a missing one.
    const outputs = (await call('GET', '/api/jobs/sec-bob-1/outputs', bob)).body as { files: { name: string; url: string }[] };
    expect(outputs.files.map((f) => f.name)).toContain('logs/coordination-stdout.txt');
    for (const f of outputs.files) expect(new URL(f.url).pathname).toMatch(new RegExp(`^/data1/results/users/[^/]+/[^/]+/jobs/sec-bob-1/`));
    for (const route of ['/api/jobs/sec-alice-1', '/api/jobs/sec-alice-1/logs', '/api/jobs/sec-alice-1/outputs']) {
      const other = await call('GET', route, bob);
      expect({ route, status: other.status, error: other.body.error }).toEqual({ route, status: 404, error: 'JobNotFound' });
      expect(other.body.message).toBe(missing.body.message.replace('sec-nobody', 'sec-alice-1'));
      expect(JSON.stringify(other.body)).not.toMatch(/stdoutTail|timeline|owner/);
    }
  });

  it("cancel follows the same rule: someone else's job is 404 and stays as it was", async () => {
    const before = (await call('GET', '/api/jobs/sec-alice-2', operator())).body;
    const res = await call('DELETE', '/api/jobs/sec-alice-2?reason=mischief', bob);
    expect(res.status).toBe(404);
    const after = (await call('GET', '/api/jobs/sec-alice-2', operator())).body;
    expect(after.timeline).toEqual(before.timeline);
    expect(after.cancelRequestedAt).toBeUndefined();
  });

  it("a reader (Jobs.Read) sees its own jobs, may not submit or cancel (403), and others' jobs are 404", async () => {
    // carol submitted while she held Jobs.Submit; now she only reads.
    expect((await call('POST', '/api/jobs', await as('carol', ['Jobs.Submit']), spec('sec-carol-1'))).status).toBe(202);
    const carol = await as('carol', ['Jobs.Read']);
    expect(ids((await call('GET', '/api/jobs?top=1000', carol)).body)).toEqual(['sec-carol-1']);
    expect((await call('GET', '/api/jobs/sec-carol-1', carol)).status).toBe(200);
    expect((await call('GET', '/api/jobs/sec-alice-1', carol)).status).toBe(404);
    const submit = await call('POST', '/api/jobs', carol, spec('sec-carol-2'));
    expect({ status: submit.status, challenge: submit.headers.get('www-authenticate') }).toEqual({
      status: 403,
      challenge: expect.stringContaining('insufficient_scope'),
    });
    expect((await call('DELETE', '/api/jobs/sec-carol-1', carol)).status).toBe(403);
    expect((await call('GET', '/api/me', carol)).body).toMatchObject({
      name: 'Carol',
      roles: ['reader'],
      permissions: ['job:read', 'usage:read'],
      seesAllJobs: false,
    });
  });

  it('a token without any app role may do nothing (403)', async () => {
    const nobody = await as('dave', []);
    expect((await call('GET', '/api/jobs', nobody)).status).toBe(403);
  });

  it('an admin (Jobs.Admin) lists and reads every job', async () => {
    const admin = await as('erin', ['Jobs.Admin']);
    expect(ids((await call('GET', '/api/jobs?top=1000&tag=suite=security', admin)).body)).toEqual(
      expect.arrayContaining(['sec-alice-1', 'sec-alice-2', 'sec-bob-1', 'sec-carol-1']),
    );
    expect((await call('GET', '/api/jobs/sec-bob-1', admin)).body.owner).toBe(ownerOf('bob'));
    expect((await call('GET', '/api/jobs/sec-alice-1/logs', admin)).body.content).toContain('private-output-of-sec-alice-1');
  });

  it("usage counts the caller's own finished jobs; an admin's counts everyone's", async () => {
    const mine = (await call('GET', '/api/usage?tag=suite=security', bob)).body;
    const all = (await call('GET', '/api/usage?tag=suite=security', await as('erin', ['Jobs.Admin']))).body;
    expect(mine.total.jobs).toBe(1);
    expect(all.total.jobs).toBe(2); // alice's and bob's runs (jobs that never had a pool have no cost)
  });

  it('a job id held by another owner is 409 JobIdTaken, telling nothing of that job; equal specs without ids are two jobs', async () => {
    const taken = await call('POST', '/api/jobs', bob, spec('sec-alice-1'));
    expect(taken.status).toBe(409);
    expect(taken.body).toEqual({ error: 'JobIdTaken', message: 'job id sec-alice-1 is taken: choose another id' });
    const anonymousSpec = JSON.stringify({
      name: 'sec-same',
      tags: { suite: 'security-ids' },
      pool: { poolId: 'no-such-pool-same', nodes: 1 },
      mpi: { runtime: 'openmpi', command: 'true' },
    });
    const a = await call('POST', '/api/jobs', alice, anonymousSpec);
    const b = await call('POST', '/api/jobs', bob, anonymousSpec);
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.job.id).not.toBe(b.body.job.id);
    expect((await call('POST', '/api/jobs', alice, anonymousSpec)).status).toBe(200); // alice's repeat is still idempotent
    // Durable management URLs (they carry the extension's system key in Azure) are for admins only.
    expect(a.body.orchestration).toBeUndefined();
  });
});

describe('spoofing and bad tokens', () => {
  it('x-ms-client-principal-name from a client changes nothing: the owner comes from the token', async () => {
    const res = await call('POST', '/api/jobs', { ...bob, 'x-ms-client-principal-name': 'alice' }, spec('sec-spoof'));
    expect(res.status).toBe(202);
    expect(res.body.job.owner).toBe(ownerOf('bob'));
    expect((await call('GET', '/api/jobs/sec-spoof', alice)).status).toBe(404);
    expect(ids((await call('GET', '/api/jobs?top=1000', alice)).body)).not.toContain('sec-spoof');
    const anonymous = await call('GET', '/api/jobs', {
      'x-ms-client-principal-name': 'admin',
      'x-ms-client-principal': Buffer.from('{"userRoles":["Jobs.Admin"]}').toString('base64'),
    });
    expect(anonymous.status).toBe(401);
  });

  it('expired, foreign-issuer, wrong-audience and badly signed tokens are 401 invalid_token', async () => {
    const good = await stack.identity.userToken('alice');
    const [h, p, s] = good.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString('utf8'));
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...claims, roles: ['Jobs.Admin'] })).toString('base64url')}.${s}`;
    const stranger = await generateKeyPair('RS256');
    const selfSigned = await new SignJWT({ ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: JSON.parse(Buffer.from(h, 'base64url').toString()).kid })
      .sign(stranger.privateKey);
    const cases: [string, string, RegExp][] = [
      ['expired', await stack.identity.userToken('alice', { lifetimeSeconds: -600 }), /expired/],
      // Its key id is not among this issuer's keys, which is found before the iss claim is compared.
      ['foreign issuer', await foreign.userToken('alice', { roles: ['Jobs.Admin'] }), /another issuer|not signed by a key of the issuer/],
      ['wrong audience', await stack.identity.userToken('alice', { audience: 'api://some-other-api' }), /another audience/],
      ['tampered payload', tampered, /signature does not verify/],
      ['signed by another key under our kid', selfSigned, /signature does not verify/],
      ['not a JWT', 'garbage', /not a valid JWT/],
    ];
    for (const [what, token, why] of cases) {
      const res = await call('GET', '/api/jobs', bearer(token));
      expect({ what, status: res.status, challenge: res.headers.get('www-authenticate') }).toEqual({
        what,
        status: 401,
        challenge: expect.stringMatching(/^Bearer realm="hpc-jobs", error="invalid_token", error_description="/),
      });
      expect({ what, message: res.body.message }).toEqual({ what, message: expect.stringMatching(why) });
    }
    expect((await call('GET', '/api/jobs', bearer(good))).status).toBe(200);
  });
});

describe('operators and applications', () => {
  it('the operator key (x-functions-key or ?code=) is an admin named operator; a wrong key is 401', async () => {
    const list = await call('GET', '/api/jobs?top=1000&tag=suite=security', operator());
    expect(list.status).toBe(200);
    expect(ids(list.body)).toEqual(expect.arrayContaining(['sec-alice-1', 'sec-bob-1']));
    expect((await call('GET', `/api/jobs/sec-bob-1?code=${encodeURIComponent(stack.host.keys.functionKey)}`)).status).toBe(200);
    expect((await call('GET', '/api/me', operator())).body).toMatchObject({ id: 'operator', name: 'operator', kind: 'operator', roles: ['admin'] });
    expect((await call('GET', '/api/jobs', { 'x-functions-key': `${stack.host.keys.functionKey}x` })).status).toBe(401);
    expect((await call('GET', '/api/jobs', { 'x-functions-key': stack.host.keys.masterKey })).status).toBe(401);
    const submitted = await call('POST', '/api/jobs', operator(), spec('sec-operator'));
    expect(submitted.body.job).toMatchObject({ owner: 'operator', ownerName: 'operator' });
  });

  it('an application signs in with @azure/identity ClientSecretCredential against the local issuer and submits with its app role', async () => {
    const credential = new ClientSecretCredential(stack.identity.tenantId, AUTOMATION_CLIENT_ID, AUTOMATION_CLIENT_SECRET, {
      authorityHost: stack.identity.authorityHost,
      disableInstanceDiscovery: true,
      ...trustingLocalIssuer(stack.identity.caCert),
    });
    const token = await credential.getToken(stack.identity.scope);
    const res = await call('POST', '/api/jobs', bearer(token.token), spec('sec-automation'));
    expect(res.status).toBe(202);
    expect(res.body.job).toMatchObject({
      owner: `${stack.identity.tenantId}/${stack.identity.directory.clients.find((c) => c.clientId === AUTOMATION_CLIENT_ID)?.oid}`,
      ownerName: AUTOMATION_CLIENT_ID,
    });
    expect((await call('GET', '/api/me', bearer(token.token))).body).toMatchObject({ kind: 'application', roles: ['submitter'] });
    const wrongSecret = new ClientSecretCredential(stack.identity.tenantId, AUTOMATION_CLIENT_ID, 'not-the-secret', {
      authorityHost: stack.identity.authorityHost,
      disableInstanceDiscovery: true,
      ...trustingLocalIssuer(stack.identity.caCert),
    });
    await expect(wrongSecret.getToken(stack.identity.scope)).rejects.toThrow(/AADSTS7000215/);
  });
});
