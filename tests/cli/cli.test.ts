/**
 * Acceptance tests of the hpcjob CLI: the COMPILED binary (dist/cli/index.js, the package.json bin) run as a
 * child process against the local stack (Azurite, the Batch emulator running real Open MPI, the Functions host).
 * Needs dist/ built (`npm run build`, which `npm test` does first).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { closedPort } from '../helpers/closedPort';
import { readFileSync } from 'node:fs';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { CLI_CLIENT_ID } from '../../local/identity';
import type { ExplainDocument } from '../../shared/core/contract/explain';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { deploymentValue, explainJob } from '../../shared/adapters/intake/explain';
import { fallbackQuote } from '../../shared/core/ops/priceQuote';
import { DEFAULT_PRICE_TABLE } from '../../shared/core/config/priceTable';
import { parseJobSpec } from '../../shared/core/spec';
import { submissionJobId } from '../../shared/core/state/submission';
import { HEALTH_CHECKS } from '../../shared/core/spec/sections/preflight';

const CLI = path.join(REPO_ROOT, 'dist', 'cli', 'index.js');
let stack: Stack;
let dir: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI with a clean environment: HOME is the temp dir, so no real profile file is read. */
function hpcjob(args: string[], env: Record<string, string> = {}, onStderr?: (text: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], {
      cwd: dir,
      // Node's compile cache (scripts/test.sh sets it) only spares compiling the CLI's modules again per command.
      env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_CONFIG_HOME: path.join(dir, 'config'), ...nodeCompileCache(), ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      onStderr?.(stderr);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

function nodeCompileCache(): Record<string, string> {
  return process.env.NODE_COMPILE_CACHE ? { NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE } : {};
}

const withStack = () => ({ HPCJOB_ENDPOINT: stack.baseUrl, HPCJOB_KEY: stack.host.keys.functionKey });

/** The demo spec made cheap: no input data, no start task, 2 nodes x 1 rank. */
function cheapSpec(patch: (spec: Record<string, unknown> & { mpi: Record<string, unknown> }) => void): string {
  const spec = parse(readFileSync(path.join(REPO_ROOT, 'examples', 'demo', 'native-openmpi.yaml'), 'utf8'));
  spec.data = { inputs: [] };
  delete spec.pool.startTask;
  spec.pool.nodes = 2;
  spec.mpi.processesPerNode = 1;
  spec.tags = { suite: 'cli-test' };
  patch(spec);
  return stringify(spec);
}

function writeSpec(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

beforeAll(async () => {
  if (!existsSync(CLI)) throw new Error(`${CLI} is missing: build first with npm run build`);
  dir = mkdtempSync(path.join(os.tmpdir(), 'hpcjob-cli-'));
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'cli-host.log') });
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('hpcjob validate (offline)', () => {
  const bad = () =>
    writeSpec(
      'bad.yaml',
      cheapSpec((s) => {
        (s.pool as Record<string, unknown>).nodes = 0;
        s.mpi.runtime = 'lam';
      }),
    );

  it('prints the field paths of a bad spec and exits 2, with no endpoint configured', async () => {
    const run = await hpcjob(['validate', bad()]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/is not a valid job spec: 2 problem/);
    expect(run.stderr).toMatch(/^ {2}pool\.nodes: /m);
    expect(run.stderr).toMatch(/^ {2}mpi\.runtime: must be one of/m);
    const json = await hpcjob(['--json', 'validate', bad()]);
    expect(json.code).toBe(2);
    const body = JSON.parse(json.stdout) as { valid: boolean; errors: { path: string }[] };
    expect(body.valid).toBe(false);
    expect(body.errors.map((e) => e.path).sort()).toEqual(['mpi.runtime', 'pool.nodes']);
  });

  it('accepts a good spec (exit 0) and reports the same paths as the API for a bad one', async () => {
    const good = await hpcjob([
      'validate',
      writeSpec(
        'good.yaml',
        cheapSpec(() => undefined),
      ),
    ]);
    expect(good.code).toBe(0);
    expect(good.stdout).toMatch(/is valid: job "shardsum-native", 2 node/);
    // Submitting the same bad spec: the API's 400 field errors, printed the same way, exit 2.
    const submitted = await hpcjob(['submit', bad()], withStack());
    expect(submitted.code).toBe(2);
    expect(submitted.stderr).toMatch(/^ {2}pool\.nodes: /m);
    expect(submitted.stderr).toMatch(/^ {2}mpi\.runtime: must be one of/m);
  });
});

describe('hpcjob against the local stack', () => {
  let succeededId = '';

  it('submit --watch runs a job to Succeeded with per-stage progress and exits 0; logs prints the master stdout', async () => {
    const file = writeSpec(
      'hello.yaml',
      cheapSpec((s) => {
        s.id = 'cli-hello';
        s.mpi.command = 'echo "hello from rank $OMPI_COMM_WORLD_RANK of $OMPI_COMM_WORLD_SIZE"';
      }),
    );
    const run = await hpcjob(['submit', file, '--watch', '--interval', '300'], withStack());
    expect(run.stderr).toMatch(/submitted job cli-hello/);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/job cli-hello Succeeded/);
    // The progress lines (stderr when not a terminal) went through the stages.
    expect(run.stderr).toMatch(/nodes ready 2\/2/);
    expect(run.stderr).toMatch(/mpi completed/);
    expect(run.stderr).toMatch(/^Succeeded .*cleanup: .*pool deleted/m);
    succeededId = 'cli-hello';

    const logs = await hpcjob(['logs', succeededId, '--stream', 'stdout'], withStack());
    expect(logs.code).toBe(0);
    expect(logs.stdout).toMatch(/hello from rank 0 of 2/);
  }, 90_000);

  it('--json output of status and list parses', async () => {
    expect(succeededId).not.toBe('');
    const status = await hpcjob(['status', succeededId, '--json'], withStack());
    expect(status.code).toBe(0);
    const view = JSON.parse(status.stdout) as { id: string; state: string; result: { exitCode: number } };
    expect(view).toMatchObject({ id: succeededId, state: 'Succeeded', result: { exitCode: 0 } });
    const list = await hpcjob(['--json', 'list', '--tag', 'suite=cli-test', '--state', 'Succeeded'], withStack());
    expect(list.code).toBe(0);
    const body = JSON.parse(list.stdout) as { jobs: { id: string; state: string }[] };
    expect(body.jobs.map((j) => j.id)).toContain(succeededId);
    expect(body.jobs.every((j) => j.state === 'Succeeded')).toBe(true);
    const text = await hpcjob(['status', succeededId], withStack());
    expect(text.stdout).toMatch(/^state +Succeeded/m);
  });

  it('a failing job: watch exits 1 with the reason; endpoint and key come from the profile file', async () => {
    const profile = path.join(dir, 'profile.json');
    writeFileSync(profile, JSON.stringify({ endpoint: stack.baseUrl, key: stack.host.keys.functionKey }));
    const file = writeSpec(
      'fails.yaml',
      cheapSpec((s) => {
        s.id = 'cli-fails';
        s.mpi.command = 'echo failing on purpose >&2; exit 3';
        // Keep the nodes, so their files (stderr, the other node's subtask) can still be read afterwards.
        s.cleanup = { deletePool: 'never' };
      }),
    );
    const submitted = await hpcjob(['--profile', profile, '--json', 'submit', file]);
    expect(submitted.code).toBe(0);
    const answer = JSON.parse(submitted.stdout) as { job: { id: string } };
    expect(answer.job.id).toBe('cli-fails');
    const watched = await hpcjob(['--profile', profile, 'watch', 'cli-fails', '--interval', '300']);
    expect(watched.code).toBe(1);
    expect(watched.stderr).toMatch(/job cli-fails Failed: .*exited with code 3/);

    // The master's stderr, read live from its node, says why.
    const stderr = await hpcjob(['--profile', profile, 'logs', 'cli-fails', '--stream', 'stderr']);
    expect(stderr.code).toBe(0);
    expect(stderr.stderr).toMatch(/failing on purpose/);
    // --json names every node; --node reads the other node's subtask output; an unknown node is exit 4.
    const chunk = JSON.parse((await hpcjob(['--profile', profile, '--json', 'logs', 'cli-fails', '--stream', 'stderr'])).stdout) as {
      nodes: string[];
      source: string;
    };
    expect(chunk.source).toBe('live');
    expect(chunk.nodes).toHaveLength(2);
    const other = await hpcjob(['--profile', profile, '--json', 'logs', 'cli-fails', '--node', chunk.nodes[1], '--stream', 'stdout']);
    expect(other.code).toBe(0);
    expect(JSON.parse(other.stdout)).toMatchObject({ node: chunk.nodes[1], source: 'live' });
    const unknown = await hpcjob(['--profile', profile, 'logs', 'cli-fails', '--node', 'no-such-node']);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toMatch(/has no logs on node no-such-node; nodes: /);
  }, 90_000);

  it('logs --follow prints the output of a running job once, in order, and exits when the job ends', async () => {
    const file = writeSpec(
      'ticks.yaml',
      cheapSpec((s) => {
        s.id = 'cli-ticks';
        s.mpi.command = 'for i in 1 2 3 4; do echo "tick $i rank $OMPI_COMM_WORLD_RANK"; sleep 1; done';
      }),
    );
    const submitted = await hpcjob(['submit', file], withStack());
    expect(submitted.code).toBe(0);
    const followed = await hpcjob(['logs', 'cli-ticks', '--follow', '--stream', 'stdout', '--interval', '300'], withStack());
    expect({ code: followed.code, stderr: followed.stderr }).toEqual({ code: 0, stderr: expect.any(String) });
    const ticks = followed.stdout.split('\n').filter((l) => l.startsWith('tick '));
    for (const rank of [0, 1]) {
      // On failure, show everything the command printed.
      expect({ rank, ticks: ticks.filter((l) => l.endsWith(`rank ${rank}`)), all: followed.stdout + followed.stderr }).toEqual({
        rank,
        ticks: [1, 2, 3, 4].map((i) => `tick ${i} rank ${rank}`),
        all: expect.any(String),
      });
    }
    const status = JSON.parse((await hpcjob(['status', 'cli-ticks', '--json'], withStack())).stdout) as { state: string; error?: unknown };
    expect({ state: status.state, error: status.error }).toEqual({ state: 'Succeeded', error: undefined });
  }, 90_000);

  it('usage --json answers the report for finished jobs; a bad day is a field error (exit 2)', async () => {
    const usage = await hpcjob(['--json', 'usage', '--tag', 'suite=cli-test'], withStack());
    expect(usage.stderr).toBe('');
    expect(usage.code).toBe(0);
    const report = JSON.parse(usage.stdout) as { total: { jobs: number; nodeMinutes: number }; perDay: object; perTag: object };
    expect(typeof report.total.nodeMinutes).toBe('number');
    expect(report).toHaveProperty('perTag');
    const text = await hpcjob(['usage'], withStack());
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^total\n {2}all jobs +\d+ jobs/);
    const bad = await hpcjob(['usage', '--from', 'yesterday'], withStack());
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^ {2}from: must be a day, YYYY-MM-DD$/m);
  });

  it('not found exits 4, an unreachable API exits 3, a missing endpoint exits 2', async () => {
    const missing = await hpcjob(['status', 'no-such-job'], withStack());
    expect(missing.code).toBe(4);
    expect(missing.stderr.trim()).toBe('hpcjob: no job with id no-such-job');
    const down = await hpcjob(['status', 'x', '--endpoint', `http://127.0.0.1:${await closedPort()}`]);
    expect(down.code).toBe(3);
    expect(down.stderr).toMatch(/cannot reach the API at http:\/\/127\.0\.0\.1:\d+: ECONNREFUSED/);
    const none = await hpcjob(['status', 'x']);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/no API endpoint/);
  });
});

describe('hpcjob signed in with Entra ID (here: the local issuer, through @azure/identity)', () => {
  // What a user's profile would hold, as environment variables; NODE_EXTRA_CA_CERTS trusts the local issuer's certificate.
  const signIn = () => ({
    HPCJOB_ENDPOINT: stack.baseUrl,
    HPCJOB_TENANT_ID: stack.identity.tenantId,
    HPCJOB_CLIENT_ID: CLI_CLIENT_ID,
    HPCJOB_SCOPE: stack.identity.scope,
    HPCJOB_AUTHORITY_HOST: stack.identity.authorityHost,
    NODE_EXTRA_CA_CERTS: stack.identity.caFile,
  });

  it("login runs the device code flow; whoami and later commands use the saved token and see only the user's jobs", async () => {
    let approved = false;
    // The person: reads the code the CLI prints and approves it on the issuer's device page (here: directly).
    const login = await hpcjob(['login'], signIn(), (stderr) => {
      const code = /enter the code (\S+) to authenticate/.exec(stderr)?.[1];
      if (code && !approved) approved = stack.identity.approveDeviceCode(code, 'dev');
    });
    expect({ code: login.code, stderr: login.stderr }).toEqual({ code: 0, stderr: expect.stringContaining('/device and enter the code') });
    expect(approved).toBe(true);
    expect(login.stdout).toMatch(/^Local Developer {2}\(user, id [0-9a-f-]{36}\/[0-9a-f-]{36}\)$/m);
    expect(login.stdout).toMatch(/^roles {4}submitter$/m);

    const me = JSON.parse((await hpcjob(['--json', 'whoami'], signIn())).stdout) as { name: string; roles: string[] };
    expect(me).toMatchObject({ name: 'Local Developer', roles: ['submitter'] });
    // A job submitted with the operator key (as every job above was) is the operator's, not dev's.
    // (A pool that does not exist: the job fails at once, which is all this needs.)
    const opJob = writeSpec(
      'operator.yaml',
      stringify({
        id: 'cli-operator-job',
        name: 'cli-operator-job',
        tags: { suite: 'cli-test' },
        pool: { poolId: 'no-such-pool', nodes: 1 },
        mpi: { runtime: 'openmpi', command: 'true' },
      }),
    );
    expect((await hpcjob(['submit', opJob], { ...signIn(), HPCJOB_KEY: stack.host.keys.functionKey })).code).toBe(0);
    const mine = await hpcjob(['--json', 'list', '--tag', 'suite=cli-test'], signIn());
    expect(mine.code).toBe(0);
    expect((JSON.parse(mine.stdout) as { jobs: unknown[] }).jobs).toEqual([]);
    const missing = await hpcjob(['status', 'cli-operator-job'], signIn());
    expect(missing.code).toBe(4);
    // The operator key still works, and sees them.
    const operator = await hpcjob(['--json', 'list', '--tag', 'suite=cli-test'], { ...signIn(), HPCJOB_KEY: stack.host.keys.functionKey });
    expect((JSON.parse(operator.stdout) as { jobs: { id: string }[] }).jobs.map((j) => j.id)).toContain('cli-operator-job');

    // Signed out, without a terminal to prompt on: a clear message and exit 3.
    expect((await hpcjob(['logout'], signIn())).stderr).toMatch(/signed out/);
    const after = await hpcjob(['list'], signIn());
    expect({ code: after.code, stderr: after.stderr }).toEqual({ code: 3, stderr: expect.stringMatching(/not signed in: run `hpcjob login`/) });
  }, 90_000);
});

describe('hpcjob explain', () => {
  const hpl = path.join(REPO_ROOT, 'examples', 'workloads', 'hpl-openmpi-native.yaml');

  it('--offline: no endpoint; a readable summary of every stage, and with --json the same document the pure function gives', async () => {
    const run = await hpcjob(['explain', '--offline', hpl]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^job h-[0-9a-f]{32} \(id from content\), offline, with the documented default settings .*nothing was created$/m);
    expect(run.stdout).toMatch(/^Pool {6}create hpc-h-[0-9a-f]{32}: 2 × Standard_HB120rs_v3, image microsoft-dsvm\/ubuntu-hpc\/2204\/latest/m);
    expect(run.stdout).toMatch(/^ {12}hpl_lu\.c ← <run-time: read-only SAS URL of blob data1\/software\/hpl_lu\.c, valid 1440 minutes>$/m);
    expect(run.stdout).toMatch(/^Files {5}HPL\.dat ← blob:data1\/software\/HPL\.dat \(mode 0644\) \(SAS 80 min\)$/m);
    expect(run.stdout).toMatch(/^MPI task {2}mpi: 2 instance\(s\), openmpi 4\.1 over tcp, managed launcher, 2 per node = 4 rank\(s\), wall clock PT1200S$/m);
    expect(run.stdout).toMatch(/^ {10}application \(master\): \/bin\/bash -c .*exec mpirun --mca btl_tcp_if_include lo -np "\$MPIJOB_NP"/m);

    const json = await hpcjob(['explain', hpl, '--offline', '--json']);
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as ExplainDocument;
    const parsed = parseJobSpec(readFileSync(hpl, 'utf8'), 'application/yaml');
    if (!parsed.ok) throw new Error('example invalid');
    // The pure function's document, with the offline facts it was explained with (the built-in size table).
    const pure = explainJob({
      jobId: submissionJobId(parsed.spec),
      jobIdFrom: 'content',
      spec: parsed.spec,
      policiesChecked: false,
      settings: defaultExplainSettings(deploymentValue),
      price: fallbackQuote('Standard_HB120rs_v3', DEFAULT_PRICE_TABLE, "offline: the deployment's prices are not known"),
    });
    expect(doc).toEqual({
      ...pure,
      pool: {
        ...pure.pool,
        facts: {
          source: 'offline',
          account: null,
          location: null,
          readAt: { images: null, sizes: null, quota: null },
          ageSeconds: { images: null, sizes: null, quota: null },
          vmSize: { name: 'Standard_HB120rs_v3', family: 'standardHBv3Family', vCPUs: 120, memoryGiB: null, gpus: null, rdma: null },
        },
      },
    });
    // Offline, the estimate uses the built-in table and says so: 2 nodes × 3.6 USD, wall clock PT1200S.
    expect(doc.cost).toMatchObject({ nodes: 2, pricePerNodeHour: 3.6, perHour: 7.2, fallback: true, priceAsOf: '2024-07-01' });
    expect(run.stdout).toMatch(/^Cost {6}2 × Standard_HB120rs_v3 at 3\.6 USD\/node-hour = 7\.20 USD per hour; worst case/m);
    expect(run.stdout).toMatch(/^ {10}FALLBACK price: fallback \(offline: the deployment's prices are not known\)/m);
    expect(doc.settings).toEqual({
      source: 'defaults',
      stagingAccounts: ['<deployment: staging accounts (STAGING_ACCOUNTS)>'],
      copyConcurrency: 8,
      sasMarginMinutes: 60,
      sasMaxLifetimeMinutes: 7 * 24 * 60,
      nodeTaskMaxAttempts: 3,
      poolIdentity: null,
      poolSubnetId: null,
      // Unset PREFLIGHT_HEALTH_CHECKS runs every check.
      preflightHealthChecks: [...HEALTH_CHECKS],
    });
  });

  it('--offline refuses an invalid spec with its field paths (exit 2)', async () => {
    const run = await hpcjob([
      'explain',
      '--offline',
      writeSpec(
        'explain-bad.yaml',
        cheapSpec((s) => {
          (s.pool as Record<string, unknown>).nodes = 0;
        }),
      ),
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^ {2}pool\.nodes: /m);
  });

  it("asks the API by default: this deployment's dry run (settings, policies, id), the API's document with --json, nothing created", async () => {
    const file = writeSpec(
      'explain.yaml',
      cheapSpec((s) => {
        s.id = 'cli-explain';
      }),
    );
    const json = await hpcjob(['--json', 'explain', file], withStack());
    expect(json.code).toBe(0);
    const doc = JSON.parse(json.stdout) as ExplainDocument;
    const direct = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml', 'x-functions-key': stack.host.keys.functionKey },
      body: readFileSync(file, 'utf8'),
    });
    expect(direct.status).toBe(200);
    // The facts' ages are seconds since they were read: two requests a moment apart may straddle a second.
    const withoutAges = (d: unknown): unknown => JSON.parse(JSON.stringify(d, (k, v: unknown) => (k === 'ageSeconds' ? undefined : v)));
    expect(withoutAges(doc)).toEqual(withoutAges(await direct.json()));
    expect(doc).toMatchObject({ version: 2, jobId: 'cli-explain', jobIdFrom: 'spec.id', policiesChecked: true, settings: { source: 'deployment' } });
    expect(doc.settings.stagingAccounts.length).toBeGreaterThan(0);
    expect(doc.placeholders.every((p) => p.startsWith('<run-time: '))).toBe(true);
    // Priced from the (stand-in) Retail Prices API through the deployment's cache, not the fallback table.
    expect(doc.cost).toMatchObject({ fallback: false, currency: 'USD' });
    expect(doc.cost.priceSource).toMatch(
      /^Azure Retail Prices API: eastus, Linux pay-as-you-go \(.+\), effective \d{4}-\d{2}-\d{2}, fetched \d{4}-\d{2}-\d{2}$/,
    );
    expect(doc.cost.worstCase).toBeGreaterThan(0);

    const text = await hpcjob(['explain', file], withStack());
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^job cli-explain \(id from spec\.id\), as this deployment would run it \(its settings and policies\): nothing was created$/m);
    expect((await hpcjob(['status', 'cli-explain'], withStack())).code).toBe(4);

    // The deployment's data-access policy applies: a storage account jobs may not use is refused, with its path.
    const foreign = writeSpec(
      'explain-foreign.yaml',
      cheapSpec((s) => {
        (s.pool as Record<string, unknown>).startTask = {
          command: 'true',
          resourceFiles: [{ account: 'elsewhere1', container: 'software', blob: 'a.c', path: 'a.c' }],
        };
      }),
    );
    const refused = await hpcjob(['explain', foreign], withStack());
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/^ {2}pool\.startTask\.resourceFiles\[0\]\.account: account "elsewhere1" is not one jobs may use/m);
  });
});
