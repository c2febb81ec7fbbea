/**
 * Call budgets of a whole job, counted where the requests arrive (Azurite's request tap, the Batch emulator's
 * exchanges; local/testing/callCounter.ts), on one local stack: the same job at 2 and at 8 nodes. Counts, never
 * timings (docs/call-budgets.md):
 *  - intake is the protocol minimum: one Jobs insert, the Durable start's Instances insert and start message;
 *  - a steady-state poll of the MPI task costs the same requests at 2 and at 8 nodes, one of them to Batch;
 *  - the node tasks are added in one task collection request, at 2 as at 8 nodes: every Batch request that is not a
 *    look (a GET) is the same list, stage by stage, at both sizes;
 *  - the host's function executions (FunctionsHostOptions.onInvocation): one HTTP execution (the submission) and the
 *    same activities at both sizes, the looks and polls aside (their number follows the emulator's timing);
 *  - the History rows of a job stay within the documented bound for the waits it made.
 */
import { startStack, type Stack } from '../../local/stack';
import { CallCounter } from '../../local/testing/callCounter';
import { budgetSpec, COUNTING_SETTINGS, historyRowBound, runCounted, STAGES, steadyPoll, warmUp, type JobCalls } from '../../bench/lib/callBudget';

let stack: Stack;
const counter = new CallCounter();
const jobs = new Map<number, JobCalls>();
const SIZES = [2, 8] as const;

beforeAll(async () => {
  const hooks = counter.stackOptions();
  stack = await startStack({
    port: 0,
    demoImage: false,
    logLevel: 'warn',
    env: COUNTING_SETTINGS,
    onStorageRequest: hooks.onStorageRequest,
    onInvocation: hooks.onInvocation,
    batch: hooks.batch,
  });
  counter.bindStorage(stack.azurite.ports, stack.azurite.tableEndpoint());
  await warmUp(stack, counter);
  for (const nodes of SIZES) jobs.set(nodes, await runCounted(stack, counter, budgetSpec(`budget-${nodes}`, nodes, 6), 300_000));
}, 900_000);

afterAll(async () => {
  await stack?.stop();
});

const text = (c: { service: string; component: string; resource: string; operation: string }) => `${c.service} ${c.component} ${c.resource} ${c.operation}`;

test('both jobs succeeded', () => {
  expect([...jobs.values()].map((j) => j.state)).toEqual(['Succeeded', 'Succeeded']);
});

test('intake: one Jobs insert and the Durable start (Instances insert, start message), nothing else', () => {
  for (const job of jobs.values()) {
    expect(job.intake.map(text)).toEqual([
      'table app Jobs insert',
      'table durable HpcMpiHubInstances insert',
      'queue durable hpcmpihub-control-00 put-message',
    ]);
  }
});

test('a steady-state poll of the MPI task: the same requests at 2 and 8 nodes, one Batch GET of the task', () => {
  const two = steadyPoll(jobs.get(2)!.pollGaps);
  const eight = steadyPoll(jobs.get(8)!.pollGaps);
  expect(eight).toEqual(two);
  expect(two.filter((r) => r.startsWith('batch '))).toEqual(['batch /jobs/{}/tasks/{} GET']);
  // The activity's round trip and the timer's: each a control message, a History batch and an Instances write.
  expect(two).toEqual([
    'batch /jobs/{}/tasks/{} GET',
    'queue hpcmpihub-control-00 put-message',
    'queue hpcmpihub-workitems delete-message',
    'table $batch batch',
    'table HpcMpiHubInstances replace',
    'queue hpcmpihub-control-00 delete-message',
    'queue hpcmpihub-control-00 put-message',
    'table $batch batch',
    'table HpcMpiHubInstances replace',
    'queue hpcmpihub-control-00 delete-message',
    'queue hpcmpihub-workitems put-message',
  ]);
});

test('History rows within the documented bound for the waits made; two Instances rows per job (the job and its MPI wait)', () => {
  for (const [nodes, job] of jobs) {
    // The MPI wait is a sub-orchestration that continues as new under one instance id (docs/call-budgets.md).
    expect(job.instanceRows).toBe(2);
    expect(job.timersFired).toBeGreaterThan(0);
    expect(job.historyRows).toBeLessThanOrEqual(historyRowBound(job.timersFired, nodes));
  }
});

/** A job's Batch requests that are not looks (GETs: polls of pools, nodes and tasks, whose number follows the timing), by stage. */
const batchWrites = (job: JobCalls) =>
  // Sorted: cleanup's terminate and pool delete are requested together and arrive in either order.
  Object.fromEntries(
    STAGES.map((st) => [
      st,
      job.calls
        .filter((c) => c.stage === st && c.service === 'batch' && c.operation !== 'GET')
        .map((c) => `${c.operation} ${c.resource}`)
        .sort(),
    ]),
  );

test("node tasks: one task collection request for every node's task, the same Batch writes per stage at 2 and 8 nodes", () => {
  const two = batchWrites(jobs.get(2)!);
  const eight = batchWrites(jobs.get(8)!);
  if (process.env.CALL_BUDGETS_VERBOSE) console.log(JSON.stringify(two), JSON.stringify(eight));
  expect(eight).toEqual(two);
  expect(two).toEqual({
    intake: [],
    provision: ['POST /jobs', 'POST /pools'],
    pull: [],
    // The node tasks (one collection), the preflight check, a look at its output.
    stage: ['HEAD /jobs/{}/tasks/{}/files/{}', 'POST /jobs/{}/addtaskcollection', 'POST /jobs/{}/tasks'],
    // The MPI task, the auto-completion, the default logs' upload tasks (one collection) and looks at their output.
    mpi: ['HEAD /jobs/{}/tasks/{}/files/{}', 'HEAD /jobs/{}/tasks/{}/files/{}', 'PATCH /jobs/{}', 'POST /jobs/{}/addtaskcollection', 'POST /jobs/{}/tasks'],
    cleanup: ['DELETE /pools/{}', 'POST /jobs/{}/terminate'],
  });
  for (const job of jobs.values()) {
    const writes = Object.values(batchWrites(job)).flat();
    // The node tasks (the staging window's downloads, all at once: no shard to bound) and the default logs' upload
    // tasks: one request each for all the nodes.
    expect(writes.filter((w) => w === 'POST /jobs/{}/addtaskcollection')).toHaveLength(2);
    // The two tasks added one by one: the preflight check and the MPI task (multi-instance, one request each).
    expect(writes.filter((w) => w === 'POST /jobs/{}/tasks')).toHaveLength(2);
  }
});

/** Executions of functions whose count follows the emulator's timing: polls and looks, episodes, event batches. */
const TIMED = new Set(['mpiJob', 'mpiWait', 'poolObserve', 'nodeTasksObserve', 'preflightObserve', 'mpiTaskObserve', 'jobEvents']);
const executionsBy = (job: JobCalls, keep: (name: string) => boolean) => {
  const m: Record<string, number> = {};
  for (const e of job.executions) if (keep(e.functionName)) m[e.functionName] = (m[e.functionName] ?? 0) + 1;
  return m;
};

test('function executions: one HTTP (the submission), two node-task adds, one logs check, the same activities at 2 and 8 nodes', () => {
  for (const job of jobs.values()) {
    expect(job.executions.filter((e) => e.trigger === 'httpTrigger').map((e) => e.functionName)).toEqual(['submitJob']);
    // The deployment's timers are silenced on the counting stack (COUNTING_SETTINGS): a job's window holds none.
    expect(job.executions.filter((e) => e.trigger === 'timerTrigger').map((e) => e.functionName)).toEqual([]);
    expect(job.executions.every((e) => e.ok)).toBe(true);
    // One for the staging window's node tasks and one for the default logs' upload tasks, whatever the node count.
    expect(executionsBy(job, (n) => n === 'nodeTasksAdd')).toEqual({ nodeTasksAdd: 2 });
  }
  // The default logs' upload check is one listing of the job's logs prefix (nodeLogsMissing), at 2 as at 8 nodes; no
  // node's files are listed (it was one nodeTaskUploads per non-master node).
  for (const job of jobs.values()) expect(executionsBy(job, (n) => n === 'nodeTaskUploads' || n === 'nodeLogsMissing')).toEqual({ nodeLogsMissing: 1 });
  const fixed = (nodes: number) => executionsBy(jobs.get(nodes)!, (n) => !TIMED.has(n));
  if (process.env.CALL_BUDGETS_VERBOSE) {
    for (const [n, j] of jobs)
      console.log(
        `${n} nodes: ${j.calls.filter((c) => c.component !== 'poller').length} requests, ${j.executions.length} executions, ${j.cpuSeconds.toFixed(2)} CPU-s, ${j.polls} MPI polls`,
        JSON.stringify(executionsBy(j, () => true)),
      );
  }
  expect(fixed(8)).toEqual(fixed(2));
});

test("the uploads' checks: no node file listing, no blob looked up one by one, the same listings at 2 and 8 nodes", () => {
  const check = (job: JobCalls) => ({
    nodeFileLists: job.calls.filter((c) => c.service === 'batch' && c.resource === '/pools/{}/nodes/{}/files').length,
    blobLookups: job.calls
      .filter((c) => c.service === 'blob' && c.component === 'app' && ['list-blobs', 'properties'].includes(c.operation))
      .map((c) => `${c.stage} ${c.operation}`)
      .sort(),
  });
  const two = check(jobs.get(2)!);
  if (process.env.CALL_BUDGETS_VERBOSE) console.log(JSON.stringify(two), JSON.stringify(check(jobs.get(8)!)));
  expect(two.nodeFileLists).toBe(0);
  // The outputs' listing for the result, the nodes' logs check, and the master's uploads check (its per-rank logs by
  // one listing of their prefix, not a HEAD per rank): three listings, no lookup one by one.
  expect(two.blobLookups).toEqual(['mpi list-blobs', 'mpi list-blobs', 'mpi list-blobs']);
  expect(check(jobs.get(8)!)).toEqual(two);
  // The nodes' own uploads of their logs are counted apart (component node): they grow with the nodes, 2 blobs each.
  const nodeWrites = (job: JobCalls) => job.calls.filter((c) => c.component === 'node' && c.service === 'blob' && c.operation.startsWith('write')).length;
  expect(nodeWrites(jobs.get(8)!)).toBeGreaterThan(nodeWrites(jobs.get(2)!));
});
