/**
 * The Durable management API against the official handler (HttpApiHandler.cs, DurableClient.cs of
 * azure-functions-durable-extension): the system key on every route, the URLs the app hands out, and the
 * answers the security probe found different from Azure (issue 18).
 */
import { clientOp, durableUrl, getStatus, http, startDurableStack, TEST_KEYS, waitForStatus, type DurableStack, type Status } from './helpers/harness';

let stack: DurableStack;

beforeAll(async () => {
  stack = await startDurableStack();
});

afterAll(async () => {
  await stack?.stop();
});

const webhook = (path: string, key: string | null): string => durableUrl(stack.baseUrl, path, key);
const withSystemKey = (path: string): string => webhook(path, stack.systemKey);

async function started(name: string, id: string, input?: unknown, statuses = ['Running']): Promise<void> {
  const res = await http('POST', withSystemKey(`orchestrators/${name}/${id}`), input);
  expect(res.status).toBe(202);
  await waitForStatus(stack.baseUrl, id, statuses);
}

describe('every management route needs the system key (or the master key)', () => {
  beforeAll(async () => {
    await started('Waiter', 'key-running');
    await started('Chain', 'key-done', ['k'], ['Completed']);
  });

  const routes: [string, string, unknown?][] = [
    ['GET', 'instances/key-done'],
    ['GET', 'instances/key-done?showHistory=true&showHistoryOutput=true'],
    ['GET', 'instances'],
    ['GET', 'instances/key-done/timeline'],
    ['POST', 'orchestrators/Chain/key-anon-start', ['x']],
    ['POST', 'instances/key-running/raiseEvent/Go', 1],
    ['POST', 'instances/key-running/terminate?reason=anon'],
    ['POST', 'instances/key-running/suspend?reason=anon'],
    ['POST', 'instances/key-running/resume?reason=anon'],
    ['POST', 'instances/key-done/rewind?reason=anon'],
    ['POST', 'instances/key-done/restart'],
    ['DELETE', 'instances/key-done'],
    ['DELETE', `instances?createdTimeFrom=2000-01-01T00:00:00Z`],
    ['GET', 'entities/counter/one'],
    ['GET', 'no-such-route'],
  ];

  test.each(routes.map(([method, path, body]) => ({ method, path, body })))(
    '$method $path: 401 without a key, with a wrong key and with the function key',
    async ({ method, path, body }) => {
      for (const key of [null, 'wrong', TEST_KEYS.functionKey]) {
        const res = await http(method, webhook(path, key), body);
        expect({ key, status: res.status, body: res.body }).toEqual({ key, status: 401, body: undefined });
      }
      // The x-functions-key header is checked the same way.
      expect((await http(method, webhook(path, null), body, { 'x-functions-key': 'wrong' })).status).toBe(401);
    },
  );

  test('nothing changed: the anonymous requests reached no instance', async () => {
    expect(await getStatus(stack.baseUrl, 'key-anon-start')).toBeUndefined();
    expect((await getStatus(stack.baseUrl, 'key-running'))?.runtimeStatus).toBe('Running');
    expect((await getStatus(stack.baseUrl, 'key-done'))?.runtimeStatus).toBe('Completed');
  });

  test('the system key and the master key open the API; the key may come in x-functions-key', async () => {
    expect((await http('GET', withSystemKey('instances/key-done'))).status).toBe(200);
    expect((await http('GET', webhook('instances/key-done', TEST_KEYS.masterKey))).status).toBe(200);
    expect((await http('GET', webhook('instances/key-done', null), undefined, { 'x-functions-key': stack.systemKey })).status).toBe(200);
    // Route names are case-insensitive, as the host's and the handler's routing.
    expect((await http('GET', `${stack.baseUrl}/runtime/webhooks/DurableTask/Instances/key-done?code=${stack.systemKey}`)).status).toBe(200);
    expect((await http('GET', `${stack.baseUrl}/runtime/webhooks/DurableTask/Instances/key-done`)).status).toBe(401);
  });

  test('the public listener no longer serves the RPC path; the loopback RPC endpoint wants the key too', async () => {
    expect((await http('GET', `${stack.baseUrl}/durabletask/instances/key-done`)).status).toBe(404);
    const rpc = stack.durable.rpcEndpoint()!;
    expect(new URL(rpc).hostname).toBe('127.0.0.1');
    expect((await http('GET', `${rpc}instances/key-done`)).status).toBe(401);
    expect((await http('GET', `${rpc}instances/key-done?code=wrong`)).status).toBe(401);
    const basic = `Basic ${Buffer.from(`durabletask:${stack.systemKey}`).toString('base64')}`;
    expect((await http('GET', `${rpc}instances/key-done`, undefined, { authorization: basic })).status).toBe(200);
  });

  test('the durableClient binding carries the key as Azure does, and the in-process client still works', async () => {
    const data = (await clientOp(stack.baseUrl, { op: 'bindingData' })).result as Record<string, unknown>;
    const base = `${stack.baseUrl}/runtime/webhooks/durabletask`;
    const code = `code=${stack.systemKey}`;
    expect(data).toMatchObject({
      taskHubName: 'DurableTestHub',
      baseUrl: base,
      requiredQueryStringParameters: code,
      creationUrls: {
        createNewInstancePostUri: `${base}/orchestrators/{functionName}[/{instanceId}]?${code}`,
        createAndWaitOnNewInstancePostUri: `${base}/orchestrators/{functionName}[/{instanceId}]?timeout={timeoutInSeconds}&pollingInterval={intervalInSeconds}&${code}`,
      },
      managementUrls: {
        id: 'INSTANCEID',
        statusQueryGetUri: `${base}/instances/INSTANCEID?taskHub=DurableTestHub&connection=Storage&${code}`,
        terminatePostUri: `${base}/instances/INSTANCEID/terminate?reason={text}&taskHub=DurableTestHub&connection=Storage&${code}`,
      },
    });
    expect(String(data.rpcBaseUrl)).toBe(`http://durabletask:${stack.systemKey}@${new URL(stack.durable.rpcEndpoint()!).host}/durabletask/`);
    // createHttpManagementPayload (what the jobs API returns): every URL carries the key and works as is.
    const payload = (await clientOp(stack.baseUrl, { op: 'managementPayload', instanceId: 'key-done' })).result as Record<string, string>;
    expect(payload.id).toBe('key-done');
    for (const [k, v] of Object.entries(payload)) if (k !== 'id') expect(new URL(v).searchParams.get('code')).toBe(stack.systemKey);
    expect((await http('GET', payload.statusQueryGetUri)).body).toMatchObject({ instanceId: 'key-done', runtimeStatus: 'Completed' });
    // The library calls the engine in-process through the rpcBaseUrl: start, status, list, raise, terminate, purge.
    expect((await clientOp(stack.baseUrl, { op: 'startNew', name: 'Waiter', instanceId: 'key-client' })).result).toBe('key-client');
    await waitForStatus(stack.baseUrl, 'key-client', ['Running']);
    expect((await clientOp(stack.baseUrl, { op: 'getStatus', instanceId: 'key-client' })).result).toMatchObject({ runtimeStatus: 'Running' });
    expect(((await clientOp(stack.baseUrl, { op: 'getStatusAll' })).result as Status[]).some((s) => s.instanceId === 'key-client')).toBe(true);
    expect(await clientOp(stack.baseUrl, { op: 'raiseEvent', instanceId: 'key-client', eventName: 'Go', input: 'via library' })).toEqual({ result: 'ok' });
    expect(await waitForStatus(stack.baseUrl, 'key-client')).toMatchObject({ runtimeStatus: 'Completed', output: 'via library' });
    expect(await clientOp(stack.baseUrl, { op: 'purge', instanceId: 'key-client' })).toEqual({ result: { instancesDeleted: 1 } });
  });
});

describe('answers as the official handler gives them', () => {
  test('list: showInput defaults to true; invalid top, runtimeStatus and createdTime filters are ignored', async () => {
    await started('Chain', 'list-1', ['input-shown'], ['Completed']);
    const list = async (query: string) => {
      const res = await http('GET', withSystemKey(`instances?instanceIdPrefix=list-&${query}`));
      return { status: res.status, body: res.body as Status[], token: res.headers.get('x-ms-continuation-token') };
    };
    const plain = await list('');
    expect(plain.status).toBe(200);
    expect(plain.body.find((s) => s.instanceId === 'list-1')?.input).toEqual(['input-shown']);
    expect(plain.token).toBe(''); // the handler always sends the header; empty on the last page
    expect((await list('showInput=false')).body.find((s) => s.instanceId === 'list-1')?.input).toBeNull();
    expect((await list('showInput=maybe')).body.find((s) => s.instanceId === 'list-1')?.input).toEqual(['input-shown']);
    for (const bad of [
      'top=abc',
      'top=1.5',
      'top=99999999999',
      'runtimeStatus=Bogus',
      'runtimeStatus=completed',
      'createdTimeFrom=yesterday',
      'createdTimeTo=not-a-date',
    ]) {
      const r = await list(bad);
      expect({ bad, status: r.status, found: r.body.some((s) => s.instanceId === 'list-1') }).toEqual({ bad, status: 200, found: true });
    }
    // Valid values still filter: an enum number (1 = Completed) and a name no instance has.
    expect((await list('runtimeStatus=1')).body.some((s) => s.instanceId === 'list-1')).toBe(true);
    expect((await list('runtimeStatus=Running')).body.some((s) => s.instanceId === 'list-1')).toBe(false);
    expect((await list('runtimeStatus=Bogus,Running')).body.some((s) => s.instanceId === 'list-1')).toBe(false);
    expect((await list('createdTimeFrom=2999-01-01T00:00:00Z')).body).toEqual([]);
  });

  test('history: the handler shape, without EventId, TaskScheduledId, TimerId and without a `history` field', async () => {
    await started('Timer', 'hist-timer', 50, ['Completed']);
    await started('Chain', 'hist-chain', ['Tokyo'], ['Completed']);
    const res = await http('GET', withSystemKey('instances/hist-chain?showHistory=true&showHistoryOutput=true'));
    const body = res.body as Record<string, unknown>;
    expect(body).not.toHaveProperty('history');
    const events = body.historyEvents as Record<string, unknown>[];
    expect(events.map((e) => e.EventType)).toEqual(['ExecutionStarted', 'TaskCompleted', 'ExecutionCompleted']);
    for (const e of events) for (const gone of ['EventId', 'TaskScheduledId', 'TimerId', 'IsPlayed']) expect(e).not.toHaveProperty(gone);
    expect(events[0]).toEqual({ EventType: 'ExecutionStarted', Input: '["Tokyo"]', FunctionName: 'Chain', Timestamp: expect.any(String) });
    expect(events[1]).toEqual({
      EventType: 'TaskCompleted',
      Result: 'Hello Tokyo',
      ScheduledTime: expect.any(String),
      FunctionName: 'Hello',
      Input: '"Tokyo"',
      Timestamp: expect.any(String),
    });
    expect(events[2]).toEqual({ EventType: 'ExecutionCompleted', OrchestrationStatus: 'Completed', Result: ['Hello Tokyo'], Timestamp: expect.any(String) });
    // Without showHistoryOutput no Result; with showInput=false no Input (and input null).
    const lean = (await http('GET', withSystemKey('instances/hist-chain?showHistory=true&showInput=false'))).body as Record<string, unknown>;
    expect(lean.input).toBeNull();
    for (const e of lean.historyEvents as Record<string, unknown>[]) {
      expect(e).not.toHaveProperty('Result');
      expect(e).not.toHaveProperty('Input');
    }
    // Timers stay in the history, without their ids.
    const timer = (await http('GET', withSystemKey('instances/hist-timer?showHistory=true'))).body as Record<string, unknown>;
    const timerEvents = (timer.historyEvents as Record<string, unknown>[]).filter((e) => String(e.EventType).startsWith('Timer'));
    expect(timerEvents.map((e) => Object.keys(e).sort())).toEqual([
      ['EventType', 'FireAt', 'Timestamp'],
      ['EventType', 'FireAt', 'Timestamp'],
    ]);
  });

  test('rewind: a Failed instance runs its failed activity again and completes; other states answer as Azure', async () => {
    await started('RewindMe', 'rewind-1', 'rw-1', ['Failed']);
    const res = await http('POST', withSystemKey('instances/rewind-1/rewind?reason=retry it'));
    expect({ status: res.status, body: res.body }).toEqual({ status: 202, body: undefined });
    const done = await waitForStatus(stack.baseUrl, 'rewind-1', ['Completed', 'Terminated']);
    expect(done).toMatchObject({ runtimeStatus: 'Completed', output: { first: 'Hello rw-1', second: 'ok rw-1' } });
    const h = (await getStatus(stack.baseUrl, 'rewind-1', '?showHistory=true'))!.historyEvents!;
    expect(h.filter((e) => e.EventType === 'GenericEvent').map((e) => e.Data)).toEqual(['Rewound: TaskFailed', 'Rewound: ExecutionCompleted', 'retry it']);
    // As HttpApiHandler.HandleRewindInstanceRequestAsync: unknown 404 with its JSON string (the "$" is the handler's);
    // every status but Failed (Completed here, Running below) 412 with its JSON string, and nothing changes.
    const unknown = await http('POST', withSystemKey('instances/nobody/rewind'));
    expect({ status: unknown.status, body: unknown.body }).toEqual({ status: 404, body: 'No orchestration with instance ID "$nobody" found.' });
    const completed = await http('POST', withSystemKey('instances/rewind-1/rewind'));
    expect({ status: completed.status, body: completed.body }).toEqual({
      status: 412,
      body: 'This orchestration has status Completed, but only orchestrations in the "Failed" state can be rewound.',
    });
    await started('Waiter', 'rewind-running');
    const running = await http('POST', withSystemKey('instances/rewind-running/rewind'));
    expect({ status: running.status, body: running.body }).toEqual({
      status: 412,
      body: 'This orchestration has status Running, but only orchestrations in the "Failed" state can be rewound.',
    });
    expect((await getStatus(stack.baseUrl, 'rewind-running'))?.runtimeStatus).toBe('Running');
    // Through the library (DurableClient.rewind), a failed parent rewinds its failed sub-orchestration too.
    await started('RewindParent', 'rewind-parent', 'rw-2', ['Failed']);
    expect((await getStatus(stack.baseUrl, 'rewind-parent-child'))?.runtimeStatus).toBe('Failed');
    expect(await clientOp(stack.baseUrl, { op: 'rewind', instanceId: 'rewind-parent', reason: 'again' })).toEqual({ result: 'ok' });
    expect(await waitForStatus(stack.baseUrl, 'rewind-parent', ['Completed', 'Terminated'])).toMatchObject({
      runtimeStatus: 'Completed',
      output: { child: { first: 'Hello rw-2', second: 'ok rw-2' } },
    });
    expect((await getStatus(stack.baseUrl, 'rewind-parent-child'))?.runtimeStatus).toBe('Completed');
  });

  test('purging a running instance answers 412 and keeps it; once terminal it is purged (200, instancesDeleted 1)', async () => {
    await started('Waiter', 'purge-running');
    const refused = await http('DELETE', withSystemKey('instances/purge-running'));
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 412,
      body: 'Only orchestrations in a terminal state can be purged, but the orchestration with instance ID purge-running has status Running',
    });
    expect((await getStatus(stack.baseUrl, 'purge-running'))?.runtimeStatus).toBe('Running');
    expect((await http('POST', withSystemKey('instances/purge-running/terminate?reason=done'))).status).toBe(202);
    await waitForStatus(stack.baseUrl, 'purge-running', ['Terminated']);
    const res = await http('DELETE', withSystemKey('instances/purge-running'));
    expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { instancesDeleted: 1 } });
    expect(await getStatus(stack.baseUrl, 'purge-running')).toBeUndefined();
    const again = await http('DELETE', withSystemKey('instances/purge-running'));
    expect({ status: again.status, body: again.body }).toEqual({ status: 404, body: undefined });
    // Purge by filter without a valid createdTimeFrom: 400 with the handler's JSON string.
    const noFrom = await http('DELETE', withSystemKey('instances?createdTimeFrom=soon'));
    expect({ status: noFrom.status, body: noFrom.body }).toEqual({ status: 400, body: "Please provide value for 'createdTimeFrom' parameter." });
  });

  test('raiseEvent: 404 and 410 first, then only application/json content, then valid JSON', async () => {
    await started('Waiter', 'raise-1');
    const raise = (id: string, body: string | undefined, contentType?: string) =>
      fetch(withSystemKey(`instances/${id}/raiseEvent/Go`), { method: 'POST', body, headers: contentType ? { 'content-type': contentType } : {} });
    const asText = await raise('raise-1', '"hello"', 'text/plain');
    expect(asText.status).toBe(400);
    expect(await asText.json()).toEqual({ Message: 'Only application/json request content is supported' });
    expect((await raise('raise-1', '"hello"')).status).toBe(400);
    expect((await raise('raise-1', '"hello"', 'application/jsonp')).status).toBe(400);
    const badJson = await raise('raise-1', '{nope', 'application/json');
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ Message: 'Invalid JSON content', ExceptionType: 'Newtonsoft.Json.JsonReaderException' });
    expect((await raise('raise-1', '', 'application/json')).status).toBe(400);
    expect((await raise('nobody', '"x"', 'text/plain')).status).toBe(404);
    expect((await raise('raise-1', '"hello"', 'Application/JSON; charset=utf-8')).status).toBe(202);
    expect(await waitForStatus(stack.baseUrl, 'raise-1')).toMatchObject({ runtimeStatus: 'Completed', output: 'hello' });
    const late = await raise('raise-1', '"late"', 'text/plain');
    expect({ status: late.status, body: await late.text() }).toEqual({ status: 410, body: '' });
  });

  test('instance ids containing / \\ # ? or control characters, or starting with @, are refused', async () => {
    const refused = {
      'a%2Fb': "instanceId (Parameter 'Orchestration instance ids must not contain /, \\, #, ?, or control characters.')",
      'a%5Cb': "instanceId (Parameter 'Orchestration instance ids must not contain /, \\, #, ?, or control characters.')",
      'a%23b': "instanceId (Parameter 'Orchestration instance ids must not contain /, \\, #, ?, or control characters.')",
      'a%3Fb': "instanceId (Parameter 'Orchestration instance ids must not contain /, \\, #, ?, or control characters.')",
      'a%C2%85b': "instanceId (Parameter 'Orchestration instance ids must not contain /, \\, #, ?, or control characters.')",
      '%40entity': "instanceId (Parameter 'Orchestration instance ids must not start with @.')",
      [`${'x'.repeat(257)}`]: 'Instance ID lengths must not exceed 256 characters.',
    };
    for (const [id, message] of Object.entries(refused)) {
      const res = await http('POST', withSystemKey(`orchestrators/Chain/${id}`), ['x']);
      expect({ id, status: res.status, body: res.body }).toEqual({
        id,
        status: 400,
        body: {
          Message: 'One or more of the arguments submitted is incorrect',
          ExceptionMessage: message,
          ExceptionType: 'System.ArgumentException',
          StackTrace: null,
        },
      });
    }
    const list = (await http('GET', withSystemKey('instances'))).body as Status[];
    expect(list.filter((s) => /^a.b$|^@/.test(s.instanceId))).toEqual([]);
    // The library's startNew with such an id fails the same way.
    expect((await clientOp(stack.baseUrl, { op: 'startNew', name: 'Chain', input: ['x'], instanceId: '@entity' })).error).toMatch(/400/);
  });

  test('status of an unknown instance and an unknown route: 404 with no body; unknown orchestrator: 400 ArgumentException', async () => {
    const missing = await http('GET', withSystemKey('instances/nobody'));
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 404, body: undefined });
    const route = await http('GET', withSystemKey('instances/nobody/terminate'));
    expect({ status: route.status, body: route.body }).toEqual({ status: 404, body: undefined });
    const unknown = await http('POST', withSystemKey('orchestrators/NoSuchOrchestrator'), {});
    expect(unknown).toMatchObject({
      status: 400,
      body: { Message: 'One or more of the arguments submitted is incorrect', ExceptionType: 'System.ArgumentException' },
    });
    const badJson = await fetch(withSystemKey('orchestrators/Chain'), { method: 'POST', body: '[oops' });
    expect(badJson.status).toBe(400);
    expect(await badJson.json()).toMatchObject({ Message: 'Invalid JSON content' });
  });

  test('a 202 status answer points Location at the request itself, key and options included', async () => {
    await started('Waiter', 'loc-1');
    const url = withSystemKey('instances/loc-1?showInput=false');
    const res = await http('GET', url);
    expect(res.status).toBe(202);
    expect(res.headers.get('location')).toBe(url);
    expect(res.headers.get('retry-after')).toBe('5');
  });
});

describe('terminate through the API', () => {
  test('a running instance ends Terminated with the reason as output; later operations answer 410', async () => {
    await started('Waiter', 'term-api');
    await http('POST', withSystemKey('instances/term-api/raiseEvent/Other'), 'ignored');
    const res = await http('POST', withSystemKey('instances/term-api/terminate?reason=stopped by operator'));
    expect({ status: res.status, body: res.body }).toEqual({ status: 202, body: undefined });
    const s = await waitForStatus(stack.baseUrl, 'term-api', ['Completed', 'Failed', 'Terminated']);
    expect(s).toMatchObject({ runtimeStatus: 'Terminated', output: 'stopped by operator' });
    const h = (await getStatus(stack.baseUrl, 'term-api', '?showHistory=true&showHistoryOutput=true'))!.historyEvents!;
    expect(h.slice(-2)).toEqual([
      { EventType: 'ExecutionTerminated', Input: 'stopped by operator', Timestamp: expect.any(String) },
      { EventType: 'ExecutionCompleted', OrchestrationStatus: 'Terminated', Result: 'stopped by operator', Timestamp: expect.any(String) },
    ]);
    for (const [path, body] of [
      ['instances/term-api/raiseEvent/Go', 'late'],
      ['instances/term-api/terminate?reason=again', undefined],
      ['instances/term-api/suspend', undefined],
    ] as const) {
      const r = await http('POST', withSystemKey(path), body);
      expect({ path, status: r.status, body: r.body }).toEqual({ path, status: 410, body: undefined });
    }
    // The library treats 410 as done, as in Azure.
    expect(await clientOp(stack.baseUrl, { op: 'raiseEvent', instanceId: 'term-api', eventName: 'Go', input: 1 })).toEqual({ result: 'ok' });
  });

  test('a suspended instance can be terminated; without a reason the output is null', async () => {
    await started('Waiter', 'term-suspended');
    expect((await http('POST', withSystemKey('instances/term-suspended/suspend?reason=hold'))).status).toBe(202);
    await waitForStatus(stack.baseUrl, 'term-suspended', ['Suspended']);
    // Suspending again is the client's InvalidOperationException: 500.
    expect((await http('POST', withSystemKey('instances/term-suspended/suspend'))).status).toBe(500);
    expect((await http('POST', withSystemKey('instances/term-suspended/terminate'))).status).toBe(202);
    const s = await waitForStatus(stack.baseUrl, 'term-suspended', ['Completed', 'Failed', 'Terminated']);
    expect(s).toMatchObject({ runtimeStatus: 'Terminated', output: null });
  });
});
