/**
 * Unit and property tests of the pure engine parts: sequence-id allocation (including the hidden ids of
 * retry timers and of re-yielded tasks), batching of answers, non-determinism detection. The
 * orchestrators run on durable-functions' own executor (see helpers/simulator.ts); no I/O.
 */
import fc from 'fast-check';
import * as df from 'durable-functions';
import type { OrchestrationContext } from 'durable-functions';
import { applyOutcome, nextExecutionId, retryDelayMs, selectBatch } from '../../local/durable/episode';
import { ActionType, atomsOfSignature, freshAtomsPerAction, signature, type OrchestratorAction } from '../../local/durable/actions';
import { EventType, events } from '../../local/durable/history';
import { newInstanceState } from '../../local/durable/state';
import { simulate } from './helpers/simulator';

const retry = (max: number): df.RetryOptions => new df.RetryOptions(1000, max);

test('retry: ids follow the library (TaskScheduled 0, TaskFailed, TimerCreated 1, TimerFired, TaskScheduled 2 ...)', async () => {
  const r = await simulate(
    function* (ctx: OrchestrationContext) {
      return yield ctx.df.callActivityWithRetry('Flaky', retry(3), 'x');
    },
    undefined,
    { Flaky: (_i, attempt) => (attempt < 3 ? Promise.reject(new Error(`attempt ${attempt}`)) : `ok on ${attempt}`) },
  );
  expect(r.output).toBe('ok on 3');
  const ids = r.history
    .filter((e) => [EventType.TaskScheduled, EventType.TimerCreated].includes(e.EventType))
    .map((e) => `${EventType[e.EventType]}:${e.EventId}`);
  expect(ids).toEqual(['TaskScheduled:0', 'TimerCreated:1', 'TaskScheduled:2', 'TimerCreated:3', 'TaskScheduled:4']);
});

test('retry exhausted: a timer follows the last failure too, then the task fails', async () => {
  const r = await simulate(
    function* (ctx: OrchestrationContext) {
      try {
        yield ctx.df.callActivityWithRetry('Boom', retry(2), 1);
      } catch (err) {
        const after = yield ctx.df.callActivity('Echo', 'after');
        return { failed: (err as Error).message.split(' \n ')[0], after };
      }
      return 'unreachable';
    },
    undefined,
    { Boom: () => Promise.reject(new Error('always')), Echo: (x) => x },
  );
  expect(r.output).toEqual({ failed: "Activity function 'Boom' failed: always", after: 'after' });
  const seq = r.history.filter((e) => e.EventId >= 0).map((e) => `${EventType[e.EventType]}:${e.EventId}`);
  expect(seq).toEqual(['TaskScheduled:0', 'TimerCreated:1', 'TaskScheduled:2', 'TimerCreated:3', 'TaskScheduled:4']);
});

test('a task re-yielded in a later Task.any takes no new id (sliding window)', () => {
  const a: OrchestratorAction = { actionType: ActionType.CallActivity, functionName: 'A' };
  const b: OrchestratorAction = { actionType: ActionType.CallActivity, functionName: 'B' };
  const c: OrchestratorAction = { actionType: ActionType.CallActivity, functionName: 'C' };
  const any1: OrchestratorAction = { actionType: ActionType.WhenAny, compoundActions: [a, b] };
  const any2: OrchestratorAction = { actionType: ActionType.WhenAny, compoundActions: [b, c] };
  expect(freshAtomsPerAction([any1, any2]).map((x) => x.map((y) => y.functionName))).toEqual([['A', 'B'], ['C']]);
  // From JSON the identity is gone and every atom counts: the documented fallback.
  const json = JSON.parse(JSON.stringify([any1, any2])) as OrchestratorAction[];
  expect(freshAtomsPerAction(json).map((x) => x.length)).toEqual([2, 2]);
});

const windowed = function* (ctx: OrchestrationContext) {
  const { total, window } = ctx.df.getInput() as { total: number; window: number };
  let next = 0;
  let sum = 0;
  const inFlight: df.Task[] = [];
  while (next < total || inFlight.length) {
    while (inFlight.length < window && next < total) inFlight.push(ctx.df.callActivity('Sq', next++));
    const done = (yield ctx.df.Task.any(inFlight)) as df.Task;
    sum += done.result as number;
    inFlight.splice(inFlight.indexOf(done), 1);
  }
  return sum;
};

const mixed = function* (ctx: OrchestrationContext) {
  const { plan } = ctx.df.getInput() as { plan: number[] };
  const tasks = plan.map((failures, i) => (failures < 0 ? ctx.df.callActivity('Sq', i) : ctx.df.callActivityWithRetry('FailN', retry(3), { i, failures })));
  const timer = ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 5000));
  let results: unknown[];
  try {
    results = (yield ctx.df.Task.all(tasks)) as unknown[];
  } catch {
    results = ['failed'];
  }
  yield timer;
  const tail = (yield ctx.df.callActivity('Sq', 100)) as number;
  return { results, tail };
};

const simActivities = {
  Sq: (x: unknown) => (x as number) * (x as number),
  FailN: (x: unknown, attempt: number) => {
    const { i, failures } = x as { i: number; failures: number };
    if (attempt <= failures) throw new Error(`FailN ${i} attempt ${attempt}`);
    return -(i + 1);
  },
};

function expectedMixed(plan: number[]): unknown {
  if (plan.some((f) => f >= 3)) return { results: ['failed'], tail: 10000 };
  return { results: plan.map((f, i) => (f < 0 ? i * i : -(i + 1))), tail: 10000 };
}

test('property: any delivery order and batch size gives the same result (sliding window)', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.integer({ min: 1, max: 25 }),
      fc.integer({ min: 1, max: 6 }),
      fc.array(fc.nat(), { minLength: 60, maxLength: 60 }),
      async (total, window, choices) => {
        let k = 0;
        const next = (): number => choices[k++ % choices.length];
        const r = await simulate(windowed, { total, window }, simActivities, { pick: () => next(), batch: (n) => 1 + (next() % n) });
        expect(r.state.status).toBe('Completed');
        expect(r.output).toBe(Array.from({ length: total }, (_, i) => i * i).reduce((a, b) => a + b, 0));
        // Exactly one id per activity: re-yielded tasks took none.
        expect(r.state.nextSeq).toBe(total);
      },
    ),
    { numRuns: 25 },
  );
});

test('property: retries inside Task.all with a timer, any answer order and batching, match the library', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.integer({ min: -1, max: 3 }), { minLength: 1, maxLength: 6 }),
      fc.array(fc.nat(), { minLength: 40, maxLength: 40 }),
      async (plan, choices) => {
        let k = 0;
        const next = (): number => choices[k++ % choices.length];
        const r = await simulate(mixed, { plan }, simActivities, { pick: () => next(), batch: (n) => 1 + (next() % n) });
        expect(r.state.status).toBe('Completed');
        expect(r.output).toEqual(expectedMixed(plan));
      },
    ),
    { numRuns: 40 },
  );
});

test('selectBatch delivers at most one retry-related event, as the last one', () => {
  const s = newInstanceState({ instanceId: 'i', executionId: 'e', name: 'O', createdTime: new Date().toISOString() });
  s.status = 'Running';
  s.historyLength = 3;
  s.open = { '0': { kind: 'activity', name: 'A' }, '1': { kind: 'activity', name: 'R' }, '2': { kind: 'activity', name: 'B' } };
  s.retries = {
    '1': { kind: 'activity', name: 'R', options: { firstRetryIntervalInMilliseconds: 10, maxNumberOfAttempts: 3 }, attemptNumber: 1, waitingOnTimer: false },
  };
  const at = new Date();
  const msg = (id: string, e: ReturnType<typeof events.taskCompleted>) => ({ id, instanceId: 'i', executionId: 'e', event: e, sentAt: at.toISOString() });
  const sel = selectBatch(
    s,
    [msg('a', events.taskCompleted(at, 0, '1')), msg('r', events.taskFailed(at, 1, 'x', 'y')), msg('b', events.taskCompleted(at, 2, '2'))],
    at,
  );
  expect(sel.deliver.map((e) => e.TaskScheduledId)).toEqual([0, 1]);
  expect(sel.held).toEqual(['b']);
  const dup = selectBatch(s, [msg('a', events.taskCompleted(at, 0, '1')), msg('a2', events.taskCompleted(at, 0, '1'))], at);
  expect(dup.deliver).toHaveLength(1);
  expect(dup.dropped.map((d) => d.id)).toEqual(['a2']);
});

test('non-determinism: a replay that schedules another activity fails the instance naming both', () => {
  const s = newInstanceState({ instanceId: 'i1', executionId: 'e', name: 'Orch', createdTime: new Date().toISOString() });
  s.status = 'Running';
  s.actions = [{ sig: 'CallActivity:Before', ids: [0] }];
  s.nextSeq = 1;
  s.open = { '0': { kind: 'activity', name: 'Before' } };
  const r = applyOutcome(
    s,
    [events.taskCompleted(new Date(), 0, '1')],
    { kind: 'state', state: { isDone: false, actions: [[{ actionType: ActionType.CallActivity, functionName: 'After' }]] } },
    new Date(),
  );
  expect(r.state.status).toBe('Failed');
  expect(r.nonDeterminism).toContain(
    "scheduled an activity task named 'Before' with sequence ID 0 at action position 0, but the current replay scheduled an activity task named 'After'",
  );
  expect(r.appended.map((e) => EventType[e.EventType])).toEqual(['OrchestratorCompleted', 'ExecutionCompleted']);
});

test('small pure helpers', () => {
  expect(retryDelayMs({ firstRetryIntervalInMilliseconds: 100, maxNumberOfAttempts: 5, backoffCoefficient: 2, maxRetryIntervalInMilliseconds: 300 }, 1)).toBe(
    100,
  );
  expect(retryDelayMs({ firstRetryIntervalInMilliseconds: 100, maxNumberOfAttempts: 5, backoffCoefficient: 2, maxRetryIntervalInMilliseconds: 300 }, 2)).toBe(
    200,
  );
  expect(retryDelayMs({ firstRetryIntervalInMilliseconds: 100, maxNumberOfAttempts: 5, backoffCoefficient: 2, maxRetryIntervalInMilliseconds: 300 }, 4)).toBe(
    300,
  );
  expect(nextExecutionId('abc')).toBe('abc~1');
  expect(nextExecutionId('abc~1')).toBe('abc~2');
  const sig = signature({
    actionType: ActionType.WhenAll,
    compoundActions: [{ actionType: ActionType.CallActivity, functionName: 'A' }, { actionType: ActionType.CreateTimer }],
  });
  expect(sig).toBe('WhenAll[CallActivity:A,CreateTimer]');
  expect(atomsOfSignature(sig)).toEqual(['CallActivity:A', 'CreateTimer']);
});

/** The pipeline's waiting pattern (orchestrations/runtime/pipelineRun.ts): one cancel-event task raced again and again against fresh timers. */
const pollUntilCancelled = function* (ctx: OrchestrationContext) {
  const cancel = ctx.df.waitForExternalEvent('cancel');
  let polls = 0;
  for (;;) {
    const status = (yield ctx.df.callActivity('Sq', polls)) as number;
    const timer = ctx.df.createTimer(new Date(ctx.df.currentUtcDateTime.getTime() + 10_000));
    const winner = (yield ctx.df.Task.any([timer, cancel])) as df.Task;
    if (winner === cancel) {
      timer.cancel();
      return { cancelled: cancel.result, polls, status };
    }
    polls += 1;
  }
};

test('a reused cancel event raced against fresh timers: ids stay aligned and the cancel lands', async () => {
  const r = await simulate(pollUntilCancelled, undefined, simActivities, { raise: [{ afterEpisode: 7, name: 'cancel', input: { by: 'user' } }] });
  expect(r.state.status).toBe('Completed');
  const out = r.output as { cancelled: unknown; polls: number; status: number };
  expect(out.cancelled).toEqual({ by: 'user' });
  expect(out.status).toBe(out.polls * out.polls);
  // Each poll took one activity id and one timer id, the event none: ids are contiguous from 0.
  const ids = r.history.filter((e) => e.EventId >= 0).map((e) => e.EventId);
  expect(ids).toEqual(ids.map((_, i) => i));
  expect(ids.length).toBeGreaterThanOrEqual(2 * out.polls + 1);
  expect(out.polls).toBeGreaterThanOrEqual(2);
});
