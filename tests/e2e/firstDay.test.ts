/**
 * Issue 28, items 1, 2 and 4, on one local stack as the local user `dev` (Jobs.Submit), through the public API only:
 * - the stack's example data is seeded as `npm start` seeds it (local/seedExamples.ts), idempotently (the examples
 *   docs/workloads.md marks "runs locally" are submitted as written by workloads.test.ts and workloadsData.test.ts,
 *   tests/helpers/examplesAsWritten.ts);
 * - a user's own data goes in with `hpcjob upload` (resumable: a second run uploads nothing), a job reads it, and its
 *   results come back with `hpcjob download`;
 * - every failure explained: a start task that fails (its stderr tail, the node replacement on the timeline), an
 *   application that is not found (exit code 127 with its meaning and stderr tail), a coordination command failing on
 *   a non-master node (that node's own stderr tail, also through the logs route), a failed preflight check and a wall
 *   clock exceeded, each read from GET /api/jobs/{id}'s error.
 * The five failing jobs run side by side (independent: own names, own pools).
 * Needs the compiled app (dist/: `bash scripts/ensure-deps.sh`).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { watchJob, type JobViewLite } from '../../local/jobRunner';
import { seedExamples } from '../../local/seedExamples';
import { ApiClient } from '../../cli/apiClient';
import type { CommandContext } from '../../cli/context';
import { uploadCommand } from '../../cli/commands/upload';
import { downloadCommand } from '../../cli/commands/download';

let stack: Stack;
let dev: Record<string, string>;
let token: string;

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({ port: 0, logDestination: path.join(logs, 'e2e-first-day-host.log'), demoImageFillerBytes: 64 * 1024 });
  token = await stack.identity.userToken('dev');
  dev = { authorization: `Bearer ${token}` };
  const seeded = await seedExamples(stack.operator.blobService(DATA_ACCOUNT.name), REPO_ROOT);
  expect(seeded.uploaded).toContain('software/osu_pingpong.c');
  // Seeding again changes nothing (npm start runs it at every start).
  expect((await seedExamples(stack.operator.blobService(DATA_ACCOUNT.name), REPO_ROOT)).uploaded).toEqual([]);
}, 300_000);
afterAll(async () => {
  await stack?.stop();
}, 60_000);

// Answers of several shapes (problems, views): untyped JSON on purpose.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function call(method: string, route: string, body?: string, contentType = 'application/json'): Promise<{ status: number; body: any }> {
  const res = await fetch(`${stack.baseUrl}${route}`, { method, headers: { ...dev, ...(body ? { 'content-type': contentType } : {}) }, body });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

async function submit(spec: string | object, contentType = 'application/json'): Promise<string> {
  const answer = await call('POST', '/api/jobs', typeof spec === 'string' ? spec : JSON.stringify(spec), contentType);
  if (answer.status !== 202) throw new Error(`submission answered ${answer.status}: ${JSON.stringify(answer.body)}`);
  return answer.body.job.id as string;
}

const finished = (id: string): Promise<JobViewLite> => watchJob(stack, id, 600_000, undefined, async () => dev);

function cli(): { ctx: CommandContext; out: string[] } {
  const out: string[] = [];
  const api = new ApiClient({ endpoint: stack.baseUrl }, fetch, async () => token);
  return {
    out,
    ctx: {
      json: true,
      out: (t) => void out.push(t),
      err: () => undefined,
      api: () => api,
      connection: () => ({ endpoint: stack.baseUrl }),
      stdout: process.stdout,
      stderr: process.stderr,
    },
  };
}

const mpi = (command: string) => ({ runtime: 'openmpi', processesPerNode: 1, fabric: 'tcp', options: ['--mca', 'btl_tcp_if_include', 'lo'], command });

describe("a user's own data in and results out", () => {
  it('hpcjob upload (resumable), a job reading it, hpcjob download', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'first-day-'));
    mkdirSync(path.join(dir, 'mycode'));
    writeFileSync(path.join(dir, 'mycode', 'hello.sh'), 'echo "hello from $(hostname)" > result.txt\n');
    const first = cli();
    await uploadCommand(first.ctx, path.join(dir, 'mycode'), { to: 'inputs' });
    const report = JSON.parse(first.out.join('')) as { to: string; uploaded: number; skipped: number; blobs: string[] };
    expect(report).toMatchObject({ uploaded: 1, skipped: 0 });
    const blob = report.blobs[0];
    expect(blob).toMatch(/^users\/[^/]+\/[^/]+\/mycode\/hello\.sh$/);
    const again = cli();
    await uploadCommand(again.ctx, path.join(dir, 'mycode'), { to: 'inputs' });
    expect(JSON.parse(again.out.join(''))).toMatchObject({ uploaded: 0, skipped: 1 });
    // Another owner's area is refused at the door.
    const elsewhere = await call('POST', '/api/uploads', JSON.stringify({ container: 'inputs', prefix: 'users/operator/', files: [{ name: 'x' }] }));
    expect(elsewhere).toMatchObject({ status: 403, body: { error: 'DataAreaForbidden', errors: [{ path: 'prefix' }] } });

    const id = await submit({
      name: 'first-day-own-data',
      pool: { vmSize: 'Standard_D4s_v5', nodes: 1 },
      files: [{ account: DATA_ACCOUNT.name, container: 'inputs', blob, path: 'hello.sh' }],
      mpi: mpi('bash hello.sh'),
      outputs: { account: DATA_ACCOUNT.name, container: 'results', files: [{ pattern: 'result.txt' }] },
    });
    expect((await finished(id)).state).toBe('Succeeded');
    const down = cli();
    const into = path.join(dir, 'results');
    await downloadCommand(down.ctx, id, { to: into });
    const found = readdirSync(into, { recursive: true })
      .map(String)
      .filter((f) => f.endsWith('result.txt'));
    expect(found).toHaveLength(1);
    expect(readFileSync(path.join(into, found[0]), 'utf8')).toMatch(/^hello from /);
  }, 900_000);
});

/** A submitted job and its end, awaited by the test that proves its claim. */
type Run = Promise<{ id: string; view: JobViewLite }>;
function run(spec: object): Run {
  const started = submit(spec).then(async (id) => ({ id, view: await finished(id) }));
  // Awaited later by its own test; until then a failure must not count as an unhandled rejection.
  started.catch(() => undefined);
  return started;
}

type FailureJobs = Record<'startTask' | 'notFound' | 'worker' | 'preflight' | 'wallClock', Run>;

/** Submits the five failing jobs at once. */
function startFailureJobs(): FailureJobs {
  const failOnWorker = '[ "$AZ_BATCH_IS_CURRENT_NODE_MASTER" = true ] || { echo "prepare: /scratch/input: No such file or directory" >&2; exit 5; }';
  return {
    startTask: run({
      name: 'first-day-start-task',
      pool: { vmSize: 'Standard_D4s_v5', nodes: 1, startTask: { command: 'echo "cc: error: osu_pingpong.c: No such file or directory" >&2; exit 3' } },
      mpi: mpi('true'),
    }),
    notFound: run({
      name: 'first-day-127',
      pool: { vmSize: 'Standard_D4s_v5', nodes: 1 },
      mpi: { ...mpi('true'), preExecutionCommand: 'no_such_program_xyz --version' },
      preflight: { runPreExecutionCommand: false },
    }),
    worker: run({
      name: 'first-day-worker',
      pool: { vmSize: 'Standard_D4s_v5', nodes: 2 },
      mpi: { ...mpi('true'), coordinationCommand: failOnWorker },
      preflight: { enabled: false },
    }),
    preflight: run({
      name: 'first-day-preflight',
      pool: { vmSize: 'Standard_D4s_v5', nodes: 1 },
      mpi: { ...mpi('true'), preExecutionCommand: 'no_such_program_xyz --version' },
    }),
    wallClock: run({
      name: 'first-day-wall-clock',
      pool: { vmSize: 'Standard_D4s_v5', nodes: 1 },
      mpi: mpi('sleep 600'),
      limits: { maxWallClock: 'PT1M' },
    }),
  };
}

describe('every failure explained', () => {
  // The five jobs are independent (own names, own pools): they run side by side, each test awaits its own.
  let jobs: FailureJobs;
  beforeAll(() => {
    jobs = startFailureJobs();
  });

  it('a failed start task: its node, exit code and stderr tail; the replacement on the timeline', async () => {
    const { id, view } = await jobs.startTask;
    expect(view.state).toBe('Failed');
    const { body } = await call('GET', `/api/jobs/${id}`);
    expect(body.error.message).toMatch(/the start task on node \S+ ended with exit code 3/);
    expect(body.error.message).toContain('Last lines of stderr:\ncc: error: osu_pingpong.c: No such file or directory');
    expect(body.error.details).toMatchObject({ stage: 'Provisioning', task: 'start task', exitCode: 3 });
    expect(
      (body.timeline as { reason: string }[]).some((e) => /^replacing 1 failed node\(s\): node \S+: the start task ended with exit code 3/.test(e.reason)),
    ).toBe(true);
  }, 900_000);

  it('a command not found: exit code 127 with its meaning and the stderr tail', async () => {
    const { id, view } = await jobs.notFound;
    expect(view.state).toBe('Failed');
    const { body } = await call('GET', `/api/jobs/${id}`);
    expect(body.error.message).toMatch(/^Running: .*exit code 127 \(command not found/);
    expect(body.error.message).toMatch(/Last lines of stderr:[\s\S]*no_such_program_xyz/);
    expect(body.error.message).not.toMatch(/Activity function|FailureExitCode/);
    expect(body.error.details).toMatchObject({ stage: 'Running', exitCode: 127, exitCodeMeaning: expect.stringMatching(/command not found/) });
  }, 900_000);

  it('a coordination command failing on a non-master node: that node, its exit code and its own stderr tail (API, hpcjob logs)', async () => {
    const { id, view } = await jobs.worker;
    expect(view.state).toBe('Failed');
    const { body } = await call('GET', `/api/jobs/${id}`);
    const master = body.result.mpi.logs[0].node as string;
    const worker = (body.result.mpi.subtasks as { id: number; nodeId: string }[]).find((s) => s.id !== 0)?.nodeId as string;
    expect(worker).toBeDefined();
    expect(worker).not.toBe(master);
    expect(body.error.message).toContain(`the coordination command on node ${worker} ended with exit code 5`);
    // The worker's own stderr, not the master's.
    expect(body.error.message).toMatch(/Last lines of stderr:\n(?:.*\n)*prepare: \/scratch\/input: No such file or directory/);
    expect(body.error.details).toMatchObject({
      stage: 'Running',
      task: 'coordination command',
      node: worker,
      exitCode: 5,
      stderrTail: expect.stringContaining('prepare: /scratch/input'),
    });
    // hpcjob logs --node <worker> --stream stderr, after the pool is gone: the recorded tail.
    const logs = await call('GET', `/api/jobs/${id}/logs?node=${encodeURIComponent(worker)}&stream=stderr`);
    expect(logs).toMatchObject({ status: 200, body: { node: worker, source: 'recorded', content: expect.stringContaining('prepare: /scratch/input') } });
  }, 900_000);

  it('a preflight check that fails: the stage, the node, the exit code with its meaning and the stderr tail', async () => {
    const { id, view } = await jobs.preflight;
    expect(view.state).toBe('Failed');
    const { body } = await call('GET', `/api/jobs/${id}`);
    expect(body.error.message).toMatch(/preflight: [\s\S]*\(the preflight check on node \S+ ended with exit code 127 \(command not found/);
    expect(body.error.message).toMatch(/Last lines of stderr:[\s\S]*no_such_program_xyz/);
    expect(body.error.details).toMatchObject({ task: 'preflight check', exitCode: 127, node: expect.any(String) });
  }, 900_000);

  it('a wall clock exceeded', async () => {
    const { id, view } = await jobs.wallClock;
    expect(view.state).toBe('Failed');
    const { body } = await call('GET', `/api/jobs/${id}`);
    expect(body.error.message).toMatch(/wall-clock limit/);
  }, 900_000);
});
