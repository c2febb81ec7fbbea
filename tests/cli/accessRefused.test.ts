/**
 * The CLI stops on 401 and 403 instead of retrying (issue 28, item 7): a watch whose sign-in is no longer accepted
 * (e.g. the issuer's key changed) used to print "retrying after: … 401" ten times. Now 401 names the sign-in command
 * and 403 the app role needed, both at once with exit code 3; a 503 is still retried. The API here is a small real
 * HTTP server answering as the job API does (problem body, Bearer challenge, Retry-After); the CLI is the compiled
 * binary run as a child process. Needs dist/ built (`bash scripts/ensure-deps.sh`).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { REPO_ROOT } from '../../local/stack';

const CLI = path.join(REPO_ROOT, 'dist', 'cli', 'index.js');
let dir: string;
let server: http.Server;
let endpoint: string;
const hits = new Map<string, number>();

const challenge = (error: string, description: string) => `Bearer realm="hpc-jobs", error="${error}", error_description="${description}"`;

/** The job API's answers for three jobs: one refused 401, one refused 403, one 503 twice then Succeeded. */
function answer(req: http.IncomingMessage, res: http.ServerResponse): void {
  const route = `${req.method} ${req.url?.split('?')[0]}`;
  const n = (hits.get(route) ?? 0) + 1;
  hits.set(route, n);
  const json = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
  };
  if (route === 'GET /api/jobs/j401') {
    return json(
      401,
      { error: 'Unauthorized', message: 'the token is not signed by a key of the issuer' },
      { 'www-authenticate': challenge('invalid_token', 'the token is not signed by a key of the issuer') },
    );
  }
  if (route === 'GET /api/jobs/j403') {
    const message = 'Alice may not job read: that needs the app role Jobs.Read or Jobs.Submit or Jobs.Admin';
    return json(
      403,
      { error: 'Forbidden', message },
      { 'www-authenticate': challenge('insufficient_scope', 'needs the app role Jobs.Read or Jobs.Submit or Jobs.Admin') },
    );
  }
  if (route === 'GET /api/jobs/j503') {
    if (n <= 2) return json(503, { error: 'IssuerUnavailable', message: 'the issuer cannot be reached' }, { 'retry-after': '1' });
    return json(200, { id: 'j503', name: 'j503', state: 'Succeeded', stage: 'Done' });
  }
  json(404, { error: 'NotFound', message: `no route ${route}` });
}

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function hpcjob(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: dir,
      // No scope configured: requests go without a token unless a key is given, as for an anonymous deployment.
      env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), HPCJOB_ENDPOINT: endpoint, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first with bash scripts/ensure-deps.sh`);
  dir = mkdtempSync(path.join(os.tmpdir(), 'hpcjob-access-'));
  server = http.createServer(answer);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((r) => server?.close(r));
  if (dir) rmSync(dir, { recursive: true, force: true });
});
beforeEach(() => hits.clear());

describe('hpcjob on 401 and 403', () => {
  it('watch stops at the first 401, names the sign-in command and exits 3 (no retries)', async () => {
    const run = await hpcjob(['watch', 'j401', '--interval', '50']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('hpcjob: not signed in or the sign-in is no longer accepted (401: the token is not signed by a key of the issuer)');
    expect(run.stderr).toContain('sign in (again) with `hpcjob login`');
    expect(run.stderr).not.toContain('retrying');
    expect(hits.get('GET /api/jobs/j401')).toBe(1);
  }, 30_000);

  it('with an operator key, a 401 says the key was refused', async () => {
    const run = await hpcjob(['status', 'j401'], { HPCJOB_KEY: 'not-the-key-of-this-deployment' });
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('the operator key was refused: check --key or HPCJOB_KEY');
  }, 30_000);

  it('watch stops at the first 403 and names the app role needed', async () => {
    const run = await hpcjob(['watch', 'j403', '--interval', '50']);
    expect(run.code).toBe(3);
    expect(run.stderr).toContain('not allowed (403): Alice may not job read');
    expect(run.stderr).toContain('ask an administrator to assign you the app role Jobs.Read or Jobs.Submit or Jobs.Admin, then run `hpcjob login` again');
    expect(run.stderr).not.toContain('retrying');
    expect(hits.get('GET /api/jobs/j403')).toBe(1);
  }, 30_000);

  it('watch still retries a 503 and ends with the job', async () => {
    const run = await hpcjob(['watch', 'j503', '--interval', '50']);
    expect(run.code).toBe(0);
    // The API client itself waits out a 503 (its Retry-After, tests/cli/unavailableRetry.test.ts): watch never sees it.
    expect(run.stdout).toContain('job j503 Succeeded');
    expect(hits.get('GET /api/jobs/j503')).toBe(3);
  }, 30_000);
});
