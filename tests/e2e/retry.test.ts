/**
 * Retries by failure class and the preflight check, on the local stack (one stack for the file; 2-node native Open MPI
 * jobs without input data, tests/ops/helpers smallSpec): Azurite, the Batch emulator running real processes and real
 * Open MPI, the Durable engine running the compiled app from dist/.
 *
 * - A node that goes unusable while the MPI task runs (an emulator fault set at that moment): Batch requeues the task,
 *   attempt 1 ends as a node failure, the node is removed and replaced in the job's pool, attempt 2 succeeds there.
 * - An application exit code that is not listed in retry.exitCodes: no second attempt. One that is listed: a second
 *   attempt on the same nodes.
 * - The preflight: one node's ssh port is closed (an emulator fault) and it is replaced before the MPI task starts;
 *   the real ping-pong between the emulated nodes records its figures.
 *
 * The MPI program tells its attempts apart by a marker file outside the nodes (the emulated nodes share one disk; the
 * ranks start over ssh without the task's variables): attempt 1 finds none and sleeps, long enough for the test to
 * break a node under it, or creates it and exits with the listed code.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { checkCleanup, getJobView, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import type { ExchangeRecord } from '../../local/batch/config';
import type { NodeFault } from '../../local/batch/faults/faultConfig';
import { batchIdFor } from '../../shared/core/planning/jobPlan';
import { smallSpec } from '../ops/helpers';
import { until } from '../batch/until';

let stack: Stack;
/** Every Batch API call the emulator answered, and when. */
const exchanges: (ExchangeRecord & { at: number })[] = [];
const calls = (method: string, pathPattern: RegExp, status?: number) =>
  exchanges.filter((e) => e.method === method && pathPattern.test(e.path) && (status === undefined || e.status === status)).length;

/** smallSpec with extra top-level sections (retry, preflight). */
function spec(id: string, command: string, extra: Record<string, unknown>): string {
  const doc = parse(smallSpec(id, { nodes: 2, command, tags: { suite: 'retry' } })) as Record<string, unknown>;
  return stringify({ ...doc, ...extra });
}

/** A marker file the test's MPI programs share (outside every node's sandbox). */
const marker = (name: string) => path.join(stack.batch.dataDir, `marker-${name}`);

/** The timeline's notes of attempts and preflight checks (admission writes its own note too). */
const notes = (view: JobViewLite) => (view.timeline ?? []).filter((e) => e.kind === 'note' && !e.reason.startsWith('admitted:')).map((e) => e.reason);
/** What a job did, for the log when an assertion fails. */
const show = (view: JobViewLite) =>
  console.log(
    `${view.id}: ${view.state} ${view.error?.message ?? ''}\nattempts: ${JSON.stringify(view.result?.attempts?.map(({ preflight, ...a }) => ({ ...a, preflight: preflight && { rounds: preflight.rounds, replaced: preflight.replaced } })))}\nnotes:\n  ${notes(view).join('\n  ')}`,
  );

/** A preflight case: a job whose pool's second node (creation order 1) has `fault` from the start. */
interface FaultCase {
  id: string;
  fault: Omit<NodeFault, 'poolId' | 'ordinal' | 'nodeId'>;
  command: string;
  extra?: Record<string, unknown>;
}

/**
 * Runs the cases' jobs at the same time (each fault names its own job's pool, so they do not touch each other's
 * nodes); the faults are cleared once every job ended. Each test awaits its own job's view: the jobs are independent,
 * and their waits (pool allocation, ssh timeouts, polling) overlap instead of adding up.
 */
function runWithNodeFaults(cases: FaultCase[]): Map<string, Promise<JobViewLite>> {
  stack.batch.setFaults({ nodes: cases.map((c) => ({ poolId: batchIdFor('hpc', c.id), ordinal: 1, ...c.fault })) });
  const views = new Map(cases.map((c) => [c.id, submitSpec(stack, spec(c.id, c.command, c.extra ?? {})).then(() => watchJob(stack, c.id, 300_000))] as const));
  // allSettled also handles each job's rejection until its own test awaits it (and reports it there).
  void Promise.allSettled(views.values()).then(() => stack.batch.setFaults({ nodes: [] }));
  return views;
}

/** The preflight check replaced exactly one node, in its second round, and the MPI task ran without it: that node and the note saying why. */
function oneReplaced(view: JobViewLite): { replaced: string; note: string | undefined } {
  show(view);
  expect(view.state).toBe('Succeeded');
  const pf = view.result!.preflight!;
  expect(pf).toMatchObject({ rounds: 2, passed: true });
  expect(pf.replaced).toHaveLength(1);
  expect(view.result?.attempts?.[0].nodes).not.toContain(pf.replaced[0]);
  return { replaced: pf.replaced[0], note: notes(view).find((n) => n.startsWith('preflight check 1 of attempt 1: replacing')) };
}

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  stack = await startStack({
    port: 0,
    demoImageFillerBytes: 0,
    logDestination: path.join(logs, 'e2e-retry-host.log'),
    // The file server the broken-mount job mounts (a deployment lists the servers jobs may mount).
    env: { DATA_MOUNT_SOURCES: '10.0.0.4:/exports/home' },
    batch: { onExchange: (e) => exchanges.push({ ...e, at: Date.now() }) },
  });
}, 120_000);
afterAll(async () => stack?.stop(), 60_000);

/** The listed-exit-code job, started once (by the test before it, to run alongside that test's job, or by its own). */
let listedExitView: Promise<JobViewLite> | undefined;
function listedExit(): Promise<JobViewLite> {
  const id = 'retry-listed-exit';
  // Exactly one rank of attempt 1 creates the marker and exits 75 (mpirun returns it); attempt 2 finds it.
  listedExitView ??= submitSpec(
    stack,
    spec(id, `if mkdir ${marker(id)} 2>/dev/null; then exit 75; fi; echo second`, {
      retry: { maxAttempts: 2, exitCodes: [75], backoff: { initial: 'PT1S' } },
    }),
  ).then(() => watchJob(stack, id, 240_000));
  // Handled here until its test awaits it (and reports a failure there).
  listedExitView.catch(() => undefined);
  return listedExitView;
}

describe('retries by failure class', () => {
  it('a node that goes unusable during the MPI task: attempt 1 fails as a node failure, attempt 2 succeeds on a replacement node', async () => {
    const id = 'retry-node';
    const poolId = batchIdFor('hpc', id);
    await submitSpec(
      stack,
      spec(id, `if [ ! -e ${marker(id)} ]; then sleep 60; fi; echo "rank on $(hostname)"`, {
        retry: { maxAttempts: 2, on: ['nodeFailure'], backoff: { initial: 'PT1S', max: 'PT1S' } },
      }),
    );
    // Wait until attempt 1's MPI task runs, then break one of its nodes.
    const running = await until(
      'the MPI task running',
      async () => {
        const v = await getJobView(stack, id);
        if (['Succeeded', 'Failed', 'Cancelled'].includes(v.state)) throw new Error(`job ended before the fault: ${v.state} ${v.error?.message}`);
        if (v.progress?.progress?.mpi?.state === 'running') return v;
        await new Promise((r) => setTimeout(r, 300)); // the API, not the emulator: a few looks a second are enough
        return undefined;
      },
      150_000,
    );
    const before = stack.batch
      .nodes(poolId)
      .map((n) => n.id)
      .sort();
    expect(before).toHaveLength(2);
    const broken = before[1];
    // Attempt 2's ranks will find the marker and not sleep; attempt 1's are asleep already.
    writeFileSync(marker(id), '');
    stack.batch.setFaults({ nodes: [{ nodeId: broken, unusable: true }] });
    let view: JobViewLite;
    try {
      view = await watchJob(stack, id, 240_000);
    } finally {
      stack.batch.setFaults({ nodes: [] });
    }
    show(view);
    // The fault landed while attempt 1's MPI task ran (the row's state can trail the live progress by a read).
    expect(running.progress?.progress?.attempt).toEqual({ current: 1, max: 2 });
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    const attempts = view.result?.attempts ?? [];
    expect(attempts.map((a) => [a.attempt, a.outcome, a.failureClass])).toEqual([
      [1, 'failed', 'nodeFailure'],
      [2, 'succeeded', undefined],
    ]);
    expect(attempts[0].nodes.sort()).toEqual(before);
    expect(attempts[0].replacedNodes).toEqual([broken]);
    expect(attempts[0].reason).toContain(broken);
    // Attempt 1's MPI task was ended while Batch held it requeued: Batch gave no exit code, and none is invented.
    expect(attempts[0]).not.toHaveProperty('exitCode');
    expect(attempts[1].exitCode).toBe(0);
    // Attempt 2 ran on the healthy node and a new one, never on the broken one.
    expect(attempts[1].nodes).toHaveLength(2);
    expect(attempts[1].nodes).not.toContain(broken);
    expect(attempts[1].nodes).toContain(before[0]);
    expect(view.result?.mpi?.taskId).toBe('mpi-a2');
    expect(view.result?.mpi?.stdoutTail).toMatch(/rank on /);
    // Replaced in the job's own pool: the node removed once, the pool resized back, no second pool.
    expect(calls('POST', new RegExp(`^/pools/${poolId}/removenodes$`, 'i'), 202)).toBe(1);
    expect(calls('POST', new RegExp(`^/pools/${poolId}/resize$`, 'i'), 202)).toBeGreaterThanOrEqual(1);
    expect(calls('POST', /^\/pools$/, 201)).toBe(1);
    // The attempt 1 MPI task was ended, the second one added under its own id.
    expect(calls('POST', /^\/jobs\/[^/]+\/tasks\/mpi\/terminate$/, 204)).toBe(1);
    expect(notes(view).find((n) => n.startsWith('attempt 1 of 2 failed (nodeFailure)'))).toContain(`replacing ${broken}`);
    // The cost covers both attempts (one pool, billed from its creation to its deletion).
    const cost = view.result!.cost!;
    expect(cost.nodeMinutes.total).toBeGreaterThanOrEqual(attempts.reduce((s, a) => s + a.nodeMinutes, 0) - 0.02);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 420_000);

  it('an application exit code that is not listed in retry.exitCodes is not retried', async () => {
    const id = 'retry-app-exit';
    // The next test's job runs alongside (its own pool and Batch job): the two exit-code cases are independent.
    void listedExit();
    await submitSpec(stack, spec(id, 'exit 3', { retry: { maxAttempts: 3, exitCodes: [75], backoff: { initial: 'PT1S' } } }));
    const view = await watchJob(stack, id, 180_000);
    show(view);
    expect(view.state).toBe('Failed');
    // The stage, the failing part and node, then the stderr tail (docs/troubleshooting.md).
    expect(view.error?.message).toMatch(
      /^Running: MPI task exited with code 3; not retried: the application's exit code 3 is not in retry\.exitCodes \(the application on node \S+ ended with exit code 3\)\nLast lines of stderr:\n/,
    );
    expect(view.result?.attempts?.map((a) => [a.outcome, a.failureClass, a.exitCode, a.retried])).toEqual([['failed', 'application', 3, false]]);
    expect(calls('POST', /^\/jobs\/hpc-retry-app-exit\/tasks$/, 201)).toBeGreaterThanOrEqual(1);
    const mpiAdds = exchanges.filter(
      (e) => e.method === 'POST' && /^\/jobs\/hpc-retry-app-exit\/tasks$/.test(e.path) && /"id":"mpi/.test(JSON.stringify(e.requestBody ?? '')),
    );
    expect(mpiAdds).toHaveLength(1);
    expect(notes(view)).toEqual([
      expect.stringMatching(/^attempt 1 of 3 failed \(application\): .*not retried: the application's exit code 3 is not in retry\.exitCodes$/),
    ]);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 240_000);

  it('a listed exit code is retried, on the same nodes (nothing was wrong with them)', async () => {
    const view = await listedExit();
    show(view);
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    const attempts = view.result?.attempts ?? [];
    expect(attempts.map((a) => [a.outcome, a.failureClass, a.exitCode])).toEqual([
      ['failed', 'exitCode', 75],
      ['succeeded', undefined, 0],
    ]);
    expect(attempts[1].nodes.sort()).toEqual(attempts[0].nodes.sort());
    expect(attempts[0].retryAfterMs).toBe(1000);
    expect(view.result?.mpi?.taskId).toBe('mpi-a2');
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 300_000);
});

describe('preflight before MPI', () => {
  let jobs: Map<string, Promise<JobViewLite>>;
  beforeAll(() => {
    jobs = runWithNodeFaults([
      { id: 'preflight-ssh', fault: { sshRefused: true }, command: 'echo "rank on $(hostname)"' },
      {
        id: 'preflight-mount',
        fault: { brokenMounts: ['home'] },
        command: 'ls -d "$AZ_BATCH_NODE_MOUNTS_DIR/home/." && echo "rank on $(hostname) sees home"',
        extra: { mounts: [{ name: 'home', nfs: { source: '10.0.0.4:/exports/home' } }] },
      },
      { id: 'preflight-slow-ssh', fault: { sshDelayMs: 30_000 }, command: 'echo "rank on $(hostname)"', extra: { preflight: { maxSshMs: 3000 } } },
    ]);
  });
  const viewOf = (id: string): Promise<JobViewLite> => jobs.get(id)!;

  it('a node whose ssh port is closed is replaced before the MPI task starts; the ping-pong figures are recorded', async () => {
    const id = 'preflight-ssh';
    const poolId = batchIdFor('hpc', id);
    // The second node the pool gets (creation order 1) has its ssh port closed from the start.
    const view = await viewOf(id);
    expect(view.error?.message).toBeUndefined();
    expect(view.state).toBe('Succeeded');
    const pf = view.result?.preflight;
    show(view);
    expect(pf?.passed).toBe(true);
    expect(pf?.rounds).toBe(2);
    expect(pf?.replaced).toHaveLength(1);
    const refused = pf!.replaced[0];
    // The MPI task ran on the two healthy nodes only.
    const attempts = view.result?.attempts ?? [];
    expect(attempts).toHaveLength(1);
    expect(attempts[0].nodes).toHaveLength(2);
    expect(attempts[0].nodes).not.toContain(refused);
    expect(Object.keys(pf!.nodes).sort()).toEqual([...attempts[0].nodes].sort());
    // A real ping-pong ran between the two nodes over the job's fabric (Open MPI over TCP here).
    expect(pf?.pingPong).toBe('measured over 1 pair(s) (no thresholds: recorded, not judged)');
    for (const f of Object.values(pf!.nodes)) {
      expect(f.ok).toBe(true);
      expect(f.latencyUs).toBeGreaterThan(0);
      expect(f.bandwidthMBps).toBeGreaterThan(0);
      expect(f.freeGB).toBeGreaterThan(0);
    }
    const replacing = notes(view).find((n) => n.startsWith('preflight check 1 of attempt 1: replacing'));
    expect(replacing).toContain(refused);
    expect(replacing).toMatch(/unreachable on the launcher's ssh port \(exit 255: ssh: connect to host \S+ port 22: Connection refused\)/);
    expect(calls('POST', new RegExp(`^/pools/${poolId}/removenodes$`, 'i'), 202)).toBe(1);
    // The preflight ran before the MPI task, which was added once.
    const adds = exchanges
      .filter((e) => e.method === 'POST' && e.path === `/jobs/${batchIdFor('hpc', id)}/tasks` && e.status === 201)
      .map((e) => ({ id: String((e.requestBody as { id?: string })?.id), at: e.at }));
    const order = adds.filter((t) => t.id.startsWith('preflight-') || t.id === 'mpi');
    expect(order.map((t) => t.id)).toEqual(['preflight-1-1', 'preflight-1-2', 'mpi']);
    // Figures: a check that passes, from its task's add to the MPI task's (polling included), and a round that replaces a node.
    console.log(
      `preflight figures: passing check ${((order[2].at - order[1].at) / 1000).toFixed(1)} s, check + replacement ${((order[1].at - order[0].at) / 1000).toFixed(1)} s; per node ${JSON.stringify(pf!.nodes)}`,
    );
    expect(view.result?.mpi?.stdoutTail).toMatch(/rank on /);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 420_000);

  it('a node whose NFS mount did not come up is replaced before the MPI task starts; the ranks then read the mount on every node', async () => {
    const view = await viewOf('preflight-mount');
    const { replaced, note } = oneReplaced(view);
    expect(note).toMatch(new RegExp(`${replaced} \\(missing \\S+/fsmounts/home\\)`));
    // Both ranks (one per node) listed the mount.
    expect(view.result?.mpi?.stdoutTail?.match(/sees home/g)).toHaveLength(2);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 420_000);

  it('a node whose launcher path is slowed past preflight.maxSshMs is replaced before the MPI task starts', async () => {
    const view = await viewOf('preflight-slow-ssh');
    const { replaced, note } = oneReplaced(view);
    expect(note).toContain(`${replaced} (no answer on the launcher's ssh port within 3000 ms)`);
    expect(await checkCleanup(stack, view)).toEqual([]);
  }, 420_000);
});
