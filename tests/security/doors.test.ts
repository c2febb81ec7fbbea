/**
 * Every door checks (issue 23): the findings of the attack on the job API, each replayed over HTTP (and the queue) on
 * one real local stack. Each answer here was different on the code before: anonymous queue reads, a cancel reason
 * with line separators, internal addresses in files[].url and image references, container binds of the node's own
 * directories, 503s for ids and tokens that can never be valid, duplicate JSON keys and __proto__ keys accepted.
 */
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { STAGING_ACCOUNTS } from '../../local/azurite';
import { enqueue, eventually, submissionsQueue } from '../intake/support';

const LOGS = path.join(REPO_ROOT, 'test-artifacts');
let stack: Stack;

beforeAll(async () => {
  mkdirSync(LOGS, { recursive: true });
  stack = await startStack({ port: 0, demoImage: false, logDestination: path.join(LOGS, 'security-doors-host.log'), env: { SWEEP_SCHEDULE: '0 0 0 1 1 *' } });
  await submissionsQueue(stack).createIfNotExists();
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

type Errors = { errors?: { path: string; message: string }[]; error?: string };
const key = () => ({ 'x-functions-key': stack.host.keys.functionKey });

async function call(method: string, route: string, body?: string, contentType = 'application/json'): Promise<{ status: number; body: Errors }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers: { ...key(), ...(body !== undefined ? { 'content-type': contentType } : {}) }, body });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : {}) as Errors };
}

const paths = (a: { body: Errors }) => (a.body.errors ?? []).map((e) => e.path);

/** A valid spec with `extra` merged in (top-level keys replaced), as JSON text. */
function spec(extra: Record<string, unknown> = {}): string {
  return JSON.stringify({
    name: 'doors',
    pool: { vmSize: 'Standard_D8s_v5', nodes: 1 },
    mpi: { runtime: 'openmpi', command: 'true' },
    ...extra,
  });
}
const docker = (images: string[], runOptions?: Record<string, unknown>) => ({
  container: { runtime: 'docker', images, ...(runOptions ? { runOptions } : {}) },
});

describe('finding 1: GET /api/queues needs a role', () => {
  it('answers 401 with a Bearer challenge to an anonymous caller, 200 to one with a role', async () => {
    const anonymous = await fetch(`${stack.baseUrl}/api/queues`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer/);
    expect((await call('GET', '/api/queues')).status).toBe(200);
  });
});

describe('finding 2: the cancel reason gets the text rules', () => {
  it('refuses line separators, NEL, bidi controls, NUL and 6 KB with the path "reason"', async () => {
    for (const reason of ['stop\u2028now', 'stop\u0085now', 'stop\u202enow', 'stop\u0000now', 'x'.repeat(6 * 1024)]) {
      const r = await call('DELETE', `/api/jobs/doors-cancel?reason=${encodeURIComponent(reason)}`);
      expect({ reason: reason.slice(0, 12), status: r.status, paths: paths(r) }).toEqual({ reason: reason.slice(0, 12), status: 400, paths: ['reason'] });
    }
    // A plain reason goes on to the job lookup (no such job here).
    expect((await call('DELETE', '/api/jobs/doors-cancel?reason=wrong%20deck')).status).toBe(404);
  });
});

describe('finding 3: no internal addresses in files[].url or image references', () => {
  it('refuses the metadata service, the wire server, private and loopback hosts in every spelling, and own storage names', async () => {
    const urls = [
      'https://169.254.169.254/metadata/identity',
      'https://2852039166/metadata',
      'https://0251.0376.0251.0376/x',
      'https://0x7f000001/x',
      'https://168.63.129.16/machine',
      'https://10.1.2.3/x',
      'https://172.16.0.9/x',
      'https://192.168.0.1/x',
      'https://127.0.0.1/x',
      'https://localhost/x',
      `https://${STAGING_ACCOUNTS[0].name}.z13.web.core.windows.net/x`,
      `https://${STAGING_ACCOUNTS[0].name}.z22.blob.storage.azure.net/c/x`,
      `https://${STAGING_ACCOUNTS[1].name}.dfs.core.windows.net/c/x`,
      `https://${STAGING_ACCOUNTS[1].name}.privatelink.blob.core.windows.net/c/x`,
    ];
    const r = await call('POST', '/api/jobs', spec({ files: urls.map((url, i) => ({ url, path: `f${i}` })) }));
    expect(r.status).toBe(400);
    expect(paths(r)).toEqual(urls.map((_, i) => `files[${i}].url`));
    expect(r.body.errors?.[1].message).toMatch(/169\.254\.169\.254.*metadata/);
  });

  it('refuses internal registries but the one the deployment serves (ALLOWED_INTERNAL_HOSTS: the local registry)', async () => {
    const port = stack.registry.host.split(':')[1];
    const refused = await call(
      'POST',
      '/api/jobs',
      spec(docker([`localhost:${port}/hpc/mpi-demo:1.0`, '0x7f000001:5000/hpc/x:1', `127.0.0.2:${port}/hpc/x:1`, '10.0.0.4:5000/hpc/x:1'])),
    );
    expect({ status: refused.status, paths: paths(refused) }).toEqual({
      status: 400,
      paths: ['container.images[0]', 'container.images[1]', 'container.images[2]', 'container.images[3]'],
    });
    const server = await call(
      'POST',
      '/api/jobs',
      spec({ container: { runtime: 'docker', images: ['myregistry.azurecr.io/a:1'], registry: { server: '169.254.169.254', identity: 'managed' } } }),
    );
    expect(paths(server)).toContain('container.registry.server');
    // A declared MPI version: the dry run then reads nothing from the registry (this stack serves no image); the
    // door's address rule is what is checked here.
    const allowed = await call(
      'POST',
      '/api/jobs?dryRun=true',
      spec({ ...docker([`${stack.registry.host}/hpc/mpi-demo:1.0`, 'ghcr.io/hpc/tools:1']), mpi: { runtime: 'openmpi', command: 'true', version: '4.1' } }),
    );
    expect({ status: allowed.status, errors: allowed.body.errors }).toEqual({ status: 200, errors: undefined });
  });
});

describe("finding 4: container binds of the node's own directories", () => {
  it('refuses /var (the docker socket), /mnt (Batch), /home, /etc and "//proc" spellings, with the path', async () => {
    const sources = ['/var/run/docker.sock', '/mnt/batch/tasks/fsmounts', '/home/_azbatch', '/etc/ssh', '//proc', '/sys/', '/./dev', '/root//.ssh', '//'];
    const r = await call(
      'POST',
      '/api/jobs',
      spec(docker(['ghcr.io/hpc/tools:1'], { binds: sources.map((source) => ({ source, target: '/x', readOnly: true })) })),
    );
    expect(r.status).toBe(400);
    // "/./dev" is also refused by the field's pattern ("." segments): one path may carry two messages.
    expect([...new Set(paths(r))].sort()).toEqual(sources.map((_, i) => `container.runOptions.binds[${i}].source`));
    const ok = await call('POST', '/api/jobs?dryRun=true', spec(docker(['ghcr.io/hpc/tools:1'], { binds: [{ source: '/scratch', target: '/scratch' }] })));
    expect(ok.status).toBe(200);
  });
});

describe('finding 5: ids that can never exist and malformed tokens answer 400, not 503', () => {
  it('every route with a job id', async () => {
    for (const [method, route] of [
      ['GET', '/api/jobs/a%2Fb'],
      ['DELETE', '/api/jobs/a%2Fb'],
      ['GET', '/api/jobs/a%2Fb/logs'],
      ['GET', '/api/jobs/a%2Fb/outputs'],
      ['GET', '/api/jobs/UPPER'],
      ['GET', `/api/jobs/${'a'.repeat(65)}`],
      ['GET', '/api/jobs/-lead'],
    ] as const) {
      const r = await call(method, route);
      expect({ method, route, status: r.status, paths: paths(r) }).toEqual({ method, route, status: 400, paths: ['id'] });
    }
    expect((await call('GET', '/api/jobs/no-such-job')).status).toBe(404);
  });

  it('a malformed continuation token on GET /api/jobs', async () => {
    for (const token of ['not-a-token', Buffer.from('{"nextPartitionKey":1}').toString('base64'), '%%%']) {
      const r = await call('GET', `/api/jobs?continuationToken=${encodeURIComponent(token)}`);
      expect({ token, status: r.status, paths: paths(r) }).toEqual({ token, status: 400, paths: ['continuationToken'] });
    }
  });
});

describe('finding 6: duplicate JSON keys', () => {
  it('are refused with the path, as YAML duplicates are', async () => {
    const body =
      '{"name":"doors","pool":{"vmSize":"Standard_D8s_v5","nodes":1},"container":{"runtime":"docker","images":["ghcr.io/a/b:1"],' +
      '"runOptions":{"privileged":false,"privileged":true}},"mpi":{"runtime":"openmpi","command":"true"}}';
    const r = await call('POST', '/api/jobs', body);
    expect({ status: r.status, paths: paths(r) }).toEqual({ status: 400, paths: ['container.runOptions.privileged'] });
    expect(r.body.errors?.[0].message).toMatch(/appears twice/);
  });
});

describe('finding 7: __proto__, constructor and prototype keys', () => {
  it('are reported with their path in JSON and YAML bodies, not dropped', async () => {
    const json =
      '{"name":"doors","pool":{"vmSize":"Standard_D8s_v5","nodes":1},"mpi":{"runtime":"openmpi","command":"true","env":{"__proto__":{"X":"1"},"A":"1"}}}';
    const r = await call('POST', '/api/jobs', json);
    expect({ status: r.status, paths: paths(r) }).toEqual({ status: 400, paths: ['mpi.env.__proto__'] });
    const yaml = 'name: doors\npool: { vmSize: Standard_D8s_v5, nodes: 1 }\ntags: { constructor: x }\nmpi: { runtime: openmpi, command: "true" }\n';
    const y = await call('POST', '/api/jobs', yaml, 'application/yaml');
    expect({ status: y.status, paths: paths(y) }).toEqual({ status: 400, paths: ['tags.constructor'] });
  });

  it('the queue door records the job Failed with the path', async () => {
    await enqueue(
      submissionsQueue(stack),
      '{"id":"doors-proto","name":"doors","pool":{"vmSize":"Standard_D8s_v5","nodes":1},"mpi":{"runtime":"openmpi","command":"true","env":{"__proto__":{"X":"1"}}}}',
    );
    const failed = await eventually('the rejected message to be recorded', 30_000, async () => {
      const r = await call('GET', '/api/jobs/doors-proto');
      const v = r.body as unknown as { state?: string; error?: { code: string; message: string } };
      return r.status === 200 && v.state === 'Failed' ? v : undefined;
    });
    expect(failed.error).toMatchObject({ code: 'InvalidSpec', message: expect.stringContaining('mpi.env.__proto__') });
  });
});
