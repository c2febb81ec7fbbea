/**
 * The sample orchestrations run end to end through durable-functions v3 on the local host + engine,
 * persisted in a real Azurite.
 */
import { getStatus, startDurableStack, startOrchestration, waitForStatus, type DurableStack } from './helpers/harness';

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack();
});

afterAll(async () => {
  await stack?.stop();
});

test('chaining returns every activity result in order', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'Chain', ['Tokyo', 'Seattle', 'London']);
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Completed');
  expect(s.output).toEqual(['Hello Tokyo', 'Hello Seattle', 'Hello London']);
  expect(s.input).toEqual(['Tokyo', 'Seattle', 'London']);
});

test('fan-out/fan-in over 200 activities', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'FanOut', 200);
  const s = await waitForStatus(stack.baseUrl, id, undefined, 60_000);
  expect(s.runtimeStatus).toBe('Completed');
  expect(s.output).toBe(2 * ((199 * 200) / 2));
});

test('a sliding window keeps at most 10 activities in flight', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'SlidingWindow', { total: 40, window: 10, ms: 60 });
  const s = await waitForStatus(stack.baseUrl, id, undefined, 60_000);
  expect(s.runtimeStatus).toBe('Completed');
  const out = s.output as { total: number; maxSeen: number };
  expect(out.total).toBe(40);
  // The host allows 20 concurrent activities; only the orchestrator's window keeps it at 10.
  expect(out.maxSeen).toBeLessThanOrEqual(10);
  expect(out.maxSeen).toBeGreaterThanOrEqual(5);
  expect(s.customStatus).toEqual({ processed: 40 });
});

test('a durable timer fires after its time and currentUtcDateTime comes from history', async () => {
  const t0 = Date.now();
  const { id } = await startOrchestration(stack.baseUrl, 'Timer', 1500);
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Completed');
  const out = s.output as { start: string; after: string };
  expect(Date.parse(out.after) - Date.parse(out.start)).toBeGreaterThanOrEqual(1500);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(1500);
});

test('an external event wins over its timeout, and the timeout wins without it', async () => {
  const approved = await startOrchestration(stack.baseUrl, 'Approval', 20_000);
  const timedOut = await startOrchestration(stack.baseUrl, 'Approval', 1000);
  await waitForStatus(stack.baseUrl, approved.id, ['Running']);
  const raise = await fetch(approved.links.sendEventPostUri.replace('{eventName}', 'Approve'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ by: 'alice' }),
  });
  expect(raise.status).toBe(202);
  const a = await waitForStatus(stack.baseUrl, approved.id);
  expect(a.output).toEqual({ approved: { by: 'alice' } });
  const t = await waitForStatus(stack.baseUrl, timedOut.id);
  expect(t.output).toEqual({ approved: false, timedOut: true });
});

test('activity retry: fails twice then succeeds, with hidden retry timers in history', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'Retry', 'k1');
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Completed');
  expect(s.output).toEqual({ first: 42, flaky: { key: 'k1', attempt: 3 } });
  const h = await getStatus(stack.baseUrl, id, '?showHistory=true');
  const types = h!.historyEvents!.map((e) => e.EventType);
  expect(types.filter((t) => t === 'TaskFailed')).toHaveLength(2);
  expect(types.filter((t) => t === 'TimerFired')).toHaveLength(2);
});

test('retry exhausted: the failure reaches the orchestrator after the last retry timer', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'RetryExhausted');
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Completed');
  expect(s.output).toEqual({ caught: "Activity function 'Boom' failed: boom: always ", after: 'Hello after' });
});

test('sub-orchestrations, with a generated and a chosen instance id', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'Parent');
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Completed');
  expect(s.output).toEqual({ a: ['Hello A', 'Hello B'], b: 12 });
  const child = await getStatus(stack.baseUrl, `${id}-fan`);
  expect(child?.runtimeStatus).toBe('Completed');
  expect(child?.output).toBe(12);
});

test('continue-as-new restarts with the new input until done', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'Counter', 0);
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Completed');
  expect(s.output).toEqual({ n: 3, doubled: 6 });
  expect(s.input).toBe(3);
});

test('a failing activity fails the instance with its message', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'FailingActivity', 'disk on fire');
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Failed');
  expect(String(s.output)).toContain("Orchestrator function 'FailingActivity' failed: Activity function 'Boom' failed: boom: disk on fire");
  // The activity's stack travels with the error.
  expect(String(s.output)).toMatch(/at .*activities\.ts/);
});

test('every episode and activity is logged with instance id and duration', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'Chain', ['x']);
  await waitForStatus(stack.baseUrl, id);
  const episodes = stack.logs.lines.filter((l) => l.msg === 'durable episode' && l.instanceId === id);
  expect(episodes.length).toBeGreaterThanOrEqual(2);
  expect(typeof episodes[0].durationMs).toBe('number');
  const acts = stack.logs.lines.filter((l) => l.msg === 'durable activity' && l.instanceId === id);
  expect(acts).toHaveLength(1);
  expect(acts[0].activity).toBe('Hello');
});

test('an orchestrator that reads Date.now() into its control flow is failed as non-deterministic', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'ClockReader', { switchAt: Date.now() + 3000, timerMs: 3500 });
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Failed');
  expect(String(s.output)).toContain('Non-Deterministic workflow detected');
  expect(String(s.output)).toContain(
    "scheduled an activity task named 'Before' with sequence ID 0 at action position 0, but the current replay scheduled an activity task named 'After'",
  );
});

test('an orchestrator that reads Math.random() into its control flow is failed as non-deterministic', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'RandomReader');
  const s = await waitForStatus(stack.baseUrl, id);
  // 12 replayed coin flips all landing the same way as recorded has probability < 2^-12 per run.
  expect(s.runtimeStatus).toBe('Failed');
  expect(String(s.output)).toContain('Non-Deterministic workflow detected');
});

test('sub-orchestration with retry: two failed child attempts, then the parent catches the failure', async () => {
  const { id } = await startOrchestration(stack.baseUrl, 'ParentRetry');
  const s = await waitForStatus(stack.baseUrl, id);
  expect(s.runtimeStatus).toBe('Completed');
  expect(String((s.output as { caught: string }).caught)).toContain("Sub-orchestration 'FailingActivity'");
  expect(String((s.output as { caught: string }).caught)).toContain('boom: child boom');
  const h = await getStatus(stack.baseUrl, id, '?showHistory=true');
  const failedChildren = h!.historyEvents!.filter((e) => e.EventType === 'SubOrchestrationInstanceFailed');
  expect(failedChildren).toHaveLength(2);
  // Azure's history does not name the child on its answer (the Created event is folded in); our failure reason does.
  expect(new Set(failedChildren.map((e) => /instance '([^']+)'/.exec(String(e.Reason))?.[1])).size).toBe(2);
});
