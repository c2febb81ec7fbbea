/**
 * Call budgets of a whole job, counted where the requests arrive (Azurite's request tap, the Batch emulator's
 * exchanges; local/testing/callCounter.ts), on one local stack: the same job at 2 and at 4 nodes. Counts, never
 * timings (docs/call-budgets.md):
 *  - intake is the protocol minimum: one Jobs insert, the Durable start's Instances insert and start message;
 *  - a steady-state poll of the MPI task costs the same requests at 2 and at 4 nodes, one of them to Batch;
 *  - the History rows of a job stay within the documented bound for the waits it made.
 */
import { startStack, type Stack } from '../../local/stack';
import { CallCounter } from '../../local/testing/callCounter';
import { budgetSpec, COUNTING_SETTINGS, historyRowBound, runCounted, steadyPoll, warmUp, type JobCalls } from '../../bench/lib/callBudget';

let stack: Stack;
const counter = new CallCounter();
const jobs = new Map<number, JobCalls>();

beforeAll(async () => {
  const hooks = counter.stackOptions();
  stack = await startStack({ port: 0, demoImage: false, logLevel: 'warn', env: COUNTING_SETTINGS, onStorageRequest: hooks.onStorageRequest, onInvocation: hooks.onInvocation, batch: hooks.batch });
  counter.bindStorage(stack.azurite.ports, stack.azurite.tableEndpoint());
  await warmUp(stack, counter);
  for (const nodes of [2, 4]) jobs.set(nodes, await runCounted(stack, counter, budgetSpec(`budget-${nodes}`, nodes, 6), 300_000));
}, 600_000);

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

test('a steady-state poll of the MPI task: the same requests at 2 and 4 nodes, one Batch GET of the task', () => {
  const two = steadyPoll(jobs.get(2)!.pollGaps);
  const four = steadyPoll(jobs.get(4)!.pollGaps);
  expect(four).toEqual(two);
  expect(two.filter((r) => r.startsWith('batch '))).toEqual(['batch /jobs/{}/tasks/{} GET']);
  // The activity's round trip and the timer's: each a control message, a History batch and an Instances write.
  expect(two).toEqual([
    'batch /jobs/{}/tasks/{} GET',
    'queue hpcmpihub-control-00 put-message', 'queue hpcmpihub-workitems delete-message', 'table $batch batch', 'table HpcMpiHubInstances replace', 'queue hpcmpihub-control-00 delete-message',
    'queue hpcmpihub-control-00 put-message', 'table $batch batch', 'table HpcMpiHubInstances replace', 'queue hpcmpihub-control-00 delete-message', 'queue hpcmpihub-workitems put-message',
  ]);
});

test('History rows within the documented bound for the waits made; two Instances rows per job (the job and its MPI wait)', () => {
  for (const job of jobs.values()) {
    // The MPI wait is a sub-orchestration that continues as new under one instance id (docs/call-budgets.md).
    expect(job.instanceRows).toBe(2);
    expect(job.timersFired).toBeGreaterThan(0);
    expect(job.historyRows).toBeLessThanOrEqual(historyRowBound(job.timersFired));
  }
});
