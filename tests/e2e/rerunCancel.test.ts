/**
 * Issue 28, item 5, on the local stack as two users of the local tenant (alice and bob, Jobs.Submit):
 * - a failed job is rerun with POST /api/jobs/{id}/rerun: a new job linked both ways (rerunOf, the old timeline's
 *   note), its outputs under its own id, a repeated request answering the same job, another owner's rerun a 404;
 * - a running job cannot be rerun (409); cancelled, it keeps what it wrote up to the cancel (the emulator uploads the
 *   terminated task's output files, the result lists them) and its final status says nothing still runs: proven by
 *   the Running stage's job of tests/e2e/cancelEveryStage.test.ts, which was cancelled anyway (docs/testing.md).
 * Needs the compiled app (dist/: `bash scripts/ensure-deps.sh`).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { tmpdir } from 'node:os';
import { mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { watchJob } from '../../local/jobRunner';

let stack: Stack;
type Headers = Record<string, string>;
let alice: Headers;
let bob: Headers;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'e2e-rerun-cancel-host.log'), demoImage: false });
  const as = async (user: string): Promise<Headers> => ({
    authorization: `Bearer ${await stack.identity.userToken(user, { roles: ['Jobs.Submit'], name: user })}`,
  });
  alice = await as('alice');
  bob = await as('bob');
}, 120_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

const areaOf = (user: string) => `users/${stack.identity.tenantId}/${stack.identity.user(user)?.oid}/`;

// Answers of several shapes (problems, views): untyped JSON on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, headers: Headers, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, {
    method,
    headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

const outputs = { account: DATA_ACCOUNT.name, container: 'results', files: [{ pattern: 'result.txt' }] };
const mpi = (command: string) => ({ runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command });

describe('rerun', () => {
  it("a failed job reruns as a new, linked job with its own outputs; a repeat is the same job; not another owner's", async () => {
    // Its pool does not exist: the job fails at once, with a spec whose outputs prefix intake defaulted.
    const submitted = await call('POST', '/api/jobs', alice, {
      id: 'rr-failed',
      name: 'rr-failed',
      tags: { suite: 'rerun' },
      pool: { poolId: 'no-such-pool-rr', nodes: 1 },
      mpi: mpi('true'),
      outputs,
    });
    expect(submitted.status).toBe(202);
    const old = await watchJob(stack, 'rr-failed', 120_000, undefined, async () => alice);
    expect(old.state).toBe('Failed');

    expect((await call('POST', '/api/jobs/RR_FAILED/rerun', alice)).body.errors[0].path).toBe('id');
    expect(await call('POST', '/api/jobs/rr-failed/rerun', bob)).toMatchObject({ status: 404, body: { error: 'JobNotFound' } });

    const first = await call('POST', '/api/jobs/rr-failed/rerun', alice);
    expect(first.status).toBe(202);
    const newId = first.body.job.id as string;
    expect(newId).toMatch(/^rr-failed-r[0-9a-f]{8}$/);
    expect(first.body.job.rerunOf).toBe('rr-failed');

    const again = await call('POST', '/api/jobs/rr-failed/rerun', alice);
    expect(again.status).toBe(200);
    expect(again.body.job.id).toBe(newId);

    const view = await call('GET', `/api/jobs/${newId}`, alice);
    expect(view.body.rerunOf).toBe('rr-failed');
    expect(view.body.spec.outputs.prefix).toBe(`${areaOf('alice')}jobs/${newId}`);
    const oldView = await call('GET', '/api/jobs/rr-failed', alice);
    expect(oldView.body.spec.outputs.prefix).toBe(`${areaOf('alice')}jobs/rr-failed`);
    expect((oldView.body.timeline as { reason: string }[]).filter((e) => e.reason === `rerun as ${newId}`)).toHaveLength(1);

    const second = await call('POST', '/api/jobs/rr-failed/rerun', { ...alice, 'idempotency-key': 'second' });
    expect(second.status).toBe(202);
    expect(second.body.job.id).not.toBe(newId);
    await Promise.all([newId, second.body.job.id as string].map((id) => watchJob(stack, id, 120_000, undefined, async () => alice)));

    // The CLI (compiled), as the operator: another caller, so another rerun; it prints the new id and the watch hint.
    const cli = await promisify(execFile)(process.execPath, [path.join(REPO_ROOT, 'dist', 'cli', 'index.js'), 'rerun', 'rr-failed'], {
      env: { PATH: process.env.PATH ?? '', HOME: tmpdir(), HPCJOB_ENDPOINT: stack.baseUrl, HPCJOB_KEY: stack.host.keys.functionKey },
    });
    expect(cli.stdout).toMatch(/^job rr-failed rerun as job (rr-failed-r[0-9a-f]{8})\nstatus: .*\nwatch: hpcjob watch \1\n$/);
  }, 300_000);
});
