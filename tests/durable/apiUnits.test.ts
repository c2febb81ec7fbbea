/**
 * Pure parts of the management API: query parsing as the handler's TryGet... helpers, the DurableClient
 * history shape, instance id rules, and the rewind plan. No I/O.
 */
import { parseBool, parseDate, parseInt32, parseRuntimeStatuses, queryValue } from '../../local/durable/apiQuery';
import { EventType, events, type HistoryEvent } from '../../local/durable/history';
import { formatHistory } from '../../local/durable/historyView';
import { instanceIdError } from '../../local/durable/instanceIds';
import { clientBindingData, managementUrls, urlEncode } from '../../local/durable/links';
import { rewindPlan } from '../../local/durable/rewind';
import { selectBatch } from '../../local/durable/episode';
import { newInstanceState, type ControlMessage, type InstanceState } from '../../local/durable/state';

const at = (s: number): Date => new Date(Date.UTC(2024, 0, 1, 0, 0, s));

describe('query parsing', () => {
  test('names in any case, repeated values joined, values trimmed', () => {
    const url = new URL('http://h/x?ShowInput=%20false%20&runtimeStatus=Running&RUNTIMESTATUS=Failed');
    expect(queryValue(url, 'showInput')).toBe('false');
    expect(queryValue(url, 'runtimeStatus')).toBe('Running,Failed');
    expect(queryValue(url, 'top')).toBeUndefined();
  });

  test('bool.TryParse, int.TryParse and dates: what does not parse is undefined or the default', () => {
    expect([parseBool('TRUE', false), parseBool(' false ', true), parseBool('yes', true), parseBool(undefined, false)]).toEqual([true, false, true, false]);
    expect([parseInt32('25'), parseInt32(' -3 '), parseInt32('+7'), parseInt32('1.5'), parseInt32('abc'), parseInt32('2147483648'), parseInt32('')]).toEqual([
      25,
      -3,
      7,
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(parseDate('2024-01-02T03:04:05Z')?.toISOString()).toBe('2024-01-02T03:04:05.000Z');
    expect(parseDate('yesterday')).toBeUndefined();
  });

  test('runtimeStatus as Enum.TryParse: case-sensitive names or numbers; nothing parsing means no filter', () => {
    expect(parseRuntimeStatuses('Completed, Failed')).toEqual(['Completed', 'Failed']);
    expect(parseRuntimeStatuses('completed')).toBeUndefined();
    expect(parseRuntimeStatuses('Bogus,Running')).toEqual(['Running']);
    expect(parseRuntimeStatuses('1,7,42')).toEqual(['Completed', 'Suspended', '#42']);
    expect(parseRuntimeStatuses(undefined)).toBeUndefined();
  });
});

describe('instance ids', () => {
  const cases: [string, RegExp | undefined][] = [
    ['job-42', undefined],
    ['a b\u2028c', undefined],
    ['@counter@x', /start with @/],
    ['a/b', /must not contain/],
    ['a\\b', /must not contain/],
    ['a#b', /must not contain/],
    ['a?b', /must not contain/],
    ['a\u0000b', /must not contain/],
    ['a\u0085b', /must not contain/],
    ['x'.repeat(256), undefined],
    ['x'.repeat(257), /256/],
  ];
  test.each(cases.map(([id, expected]) => ({ label: id.length > 40 ? `${id.length} characters` : JSON.stringify(id), id, expected })))(
    '$label',
    ({ id, expected }) => {
      const err = instanceIdError(id);
      if (expected === undefined) expect(err).toBeUndefined();
      else expect(err).toMatch(expected);
    },
  );
});

describe('links', () => {
  test('management URLs encode the id as WebUtility.UrlEncode and end with the webhook query', () => {
    const webhook = { origin: 'http://h:1', query: 'code=K' };
    expect(urlEncode('a b/c')).toBe('a+b%2Fc');
    expect(managementUrls(webhook, 'http://other:2', 'a b', 'Hub').statusQueryGetUri).toBe(
      'http://other:2/runtime/webhooks/durabletask/instances/a+b?taskHub=Hub&connection=Storage&code=K',
    );
    const data = clientBindingData(webhook, 'Hub', 'http://durabletask:K@127.0.0.1:3/durabletask/');
    expect(data).toMatchObject({ requiredQueryStringParameters: 'code=K', baseUrl: 'http://h:1/runtime/webhooks/durabletask' });
  });
});

describe('history shape', () => {
  const history: HistoryEvent[] = [
    events.orchestratorStarted(at(0)),
    events.executionStarted(at(0), 'O', '{"n":1}'),
    events.taskScheduled(at(1), 0, 'A', '"a-in"'),
    events.timerCreated(at(1), 1, at(9)),
    events.taskScheduled(at(1), 2, 'Pending', '"p-in"'),
    events.orchestratorCompleted(at(1)),
    events.orchestratorStarted(at(2)),
    events.taskCompleted(at(2), 0, '{"r":2}'),
    events.timerFired(at(9), 1, at(9).toISOString()),
    events.eventRaised(at(3), 'Go', '"go-data"'),
    events.taskFailed(at(4), 2, 'boom', 'stack'),
    events.orchestratorCompleted(at(4)),
    events.executionCompleted(at(4), 'Completed', '[1,2]'),
  ];

  test('answered schedules fold into their answers; ids, orchestrator events and outputs go', () => {
    expect(formatHistory(history, { showHistoryOutput: false, showInput: true })).toEqual([
      { EventType: 'ExecutionStarted', Input: '{"n":1}', FunctionName: 'O', Timestamp: at(0).toISOString() },
      { EventType: 'TimerCreated', FireAt: at(9).toISOString(), Timestamp: at(1).toISOString() },
      { EventType: 'TaskCompleted', ScheduledTime: at(1).toISOString(), FunctionName: 'A', Input: '"a-in"', Timestamp: at(2).toISOString() },
      { EventType: 'TimerFired', FireAt: at(9).toISOString(), Timestamp: at(9).toISOString() },
      { EventType: 'EventRaised', Name: 'Go', Input: '"go-data"', Timestamp: at(3).toISOString() },
      {
        EventType: 'TaskFailed',
        Reason: 'boom',
        Details: 'stack',
        FailureDetails: null,
        ScheduledTime: at(1).toISOString(),
        FunctionName: 'Pending',
        Input: '"p-in"',
        Timestamp: at(4).toISOString(),
      },
      { EventType: 'ExecutionCompleted', OrchestrationStatus: 'Completed', Timestamp: at(4).toISOString() },
    ]);
  });

  test('showHistoryOutput parses results; showInput=false drops every Input; an unanswered schedule stays', () => {
    const shown = formatHistory(history.slice(0, 8), { showHistoryOutput: true, showInput: false });
    expect(shown.find((e) => e.EventType === 'TaskCompleted')).toEqual({
      EventType: 'TaskCompleted',
      Result: { r: 2 },
      ScheduledTime: at(1).toISOString(),
      FunctionName: 'A',
      Timestamp: at(2).toISOString(),
    });
    expect(shown.find((e) => e.EventType === 'TaskScheduled')).toEqual({ EventType: 'TaskScheduled', Name: 'Pending', Timestamp: at(1).toISOString() });
    expect(shown.some((e) => 'Input' in e)).toBe(false);
    const full = formatHistory(history, { showHistoryOutput: true, showInput: true });
    expect(full.at(-1)).toMatchObject({ EventType: 'ExecutionCompleted', Result: [1, 2] });
  });
});

describe('rewind plan', () => {
  function failedAfter(history: HistoryEvent[], actions: InstanceState['actions']): InstanceState {
    const s = newInstanceState({ instanceId: 'i', executionId: 'e', name: 'O', createdTime: at(0).toISOString() });
    return { ...s, status: 'Failed', output: '"failed"', actions, historyLength: history.length, nextSeq: 10 };
  }

  test('clears the failures of the last action and reopens its unanswered tasks; handled failures stay', () => {
    const history = [
      events.executionStarted(at(0), 'O', undefined),
      events.taskScheduled(at(1), 0, 'Caught', undefined),
      events.taskFailed(at(2), 0, 'handled', ''),
      events.taskScheduled(at(3), 1, 'A', '"a"'),
      events.taskScheduled(at(3), 2, 'B', '"b"'),
      events.timerCreated(at(3), 3, at(60)),
      events.taskCompleted(at(4), 2, '"b-done"'),
      events.taskFailed(at(5), 1, 'fatal', ''),
      events.executionCompleted(at(5), 'Failed', '"failed"'),
    ];
    const state = failedAfter(history, [
      { sig: 'CallActivity:Caught', ids: [0] },
      { sig: 'WhenAll[CallActivity:A,CallActivity:B,CreateTimer]', ids: [1, 2, 3] },
    ]);
    const plan = rewindPlan(state, history);
    if (!plan.ok) throw new Error(plan.why);
    expect(plan.history.map((e) => (e.EventType === EventType.GenericEvent ? e.Data : EventType[e.EventType]))).toEqual([
      'ExecutionStarted',
      'TaskScheduled',
      'TaskFailed',
      'TaskScheduled',
      'TaskScheduled',
      'TimerCreated',
      'TaskCompleted',
      'Rewound: TaskFailed',
      'Rewound: ExecutionCompleted',
    ]);
    expect(plan.reopened.map((t) => [t.id, t.kind, t.name ?? t.fireAt])).toEqual([
      [1, 'activity', 'A'],
      [3, 'timer', at(60).toISOString()],
    ]);
    expect(plan.state).toMatchObject({ status: 'Running', output: undefined, open: { 1: { kind: 'activity', name: 'A' }, 3: { kind: 'timer' } } });
    expect(state.status).toBe('Failed'); // the input is not changed
  });

  test('refuses a last action with retry options and an instance that is not Failed', () => {
    const history = [events.executionStarted(at(0), 'O', undefined)];
    const retry = rewindPlan(failedAfter(history, [{ sig: 'CallActivityWithRetry:A', ids: [0] }]), history);
    expect(retry).toMatchObject({ ok: false, why: expect.stringMatching(/retry options/) });
    const running = rewindPlan({ ...failedAfter(history, []), status: 'Running' }, history);
    expect(running).toMatchObject({ ok: false, notFailed: true });
  });
});

describe('rewind messages in selectBatch', () => {
  const msg = (id: string): ControlMessage => ({ id, instanceId: 'i', event: events.rewind(at(5), 'why'), sentAt: at(5).toISOString() });
  const state = (status: InstanceState['status']): InstanceState => ({
    ...newInstanceState({ instanceId: 'i', executionId: 'e', name: 'O', createdTime: at(0).toISOString() }),
    status,
    historyLength: 3,
  });

  test('a Failed instance takes a rewind in an episode of its own; any other state drops it', () => {
    expect(selectBatch(state('Failed'), [msg('r1'), msg('r2')], at(6))).toMatchObject({
      control: 'rewind',
      controlReason: 'why',
      consumed: ['r1'],
      held: ['r2'],
    });
    for (const s of ['Running', 'Completed', 'Terminated'] as const) {
      expect(selectBatch(state(s), [msg('r1')], at(6))).toMatchObject({ control: undefined, consumed: [], dropped: [{ id: 'r1' }] });
    }
  });
});
