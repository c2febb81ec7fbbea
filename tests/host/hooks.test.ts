import type { AzuriteHandle } from '../../local/azurite';
import { events } from '../fixtures/host-app/src/events';
import { startAzurite, startFixtureHost } from './harness';

describe('local host: hooks and logging', () => {
  let azurite: AzuriteHandle;

  beforeAll(async () => {
    azurite = await startAzurite();
  });
  afterAll(async () => {
    await azurite?.stop();
  });

  it('runs app and invocation hooks in order and logs context.log with invocation id and function name', async () => {
    events().length = 0;
    const { host, logs } = await startFixtureHost(azurite);
    let body: unknown;
    try {
      const res = await fetch(`${host.baseUrl}/api/hooked`);
      expect(res.status).toBe(200);
      body = await res.json();
    } finally {
      await host.stop();
    }
    // postInvocation replaced the result; preInvocation replaced the handler.
    expect(body).toEqual({ replacedBy: 'postInvocation' });
    const hookEvents = events().filter((e) => e.kind === 'hook');
    expect(hookEvents.map((e) => e.hook)).toEqual(['appStart', 'preInvocation', 'wrappedHandler', 'handler', 'postInvocation', 'appTerminate']);
    expect(hookEvents.find((e) => e.hook === 'postInvocation')).toMatchObject({ fn: 'hooked', sawPre: true, error: null });

    // The library's log hook saw the user logs, with the invocation context.
    expect(events().filter((e) => e.kind === 'logHook')).toEqual([
      { kind: 'logHook', message: 'inside hooked { n: 1 }', level: 'information', fn: 'hooked' },
      { kind: 'logHook', message: 'a warning', level: 'warning', fn: 'hooked' },
    ]);

    const user = logs.lines.filter((l) => l.category === 'user');
    expect(user.map((l) => [l.msg, l.level])).toEqual([
      ['inside hooked { n: 1 }', 30],
      ['a warning', 40],
    ]);
    expect(user.every((l) => l.functionName === 'hooked' && /^[0-9a-f-]{36}$/.test(l.invocationId ?? ''))).toBe(true);
    expect(new Set(user.map((l) => l.invocationId)).size).toBe(1);
  });

  it('reports a handler error to postInvocation hooks and fails the invocation', async () => {
    events().length = 0;
    const { host, logs } = await startFixtureHost(azurite);
    try {
      expect((await fetch(`${host.baseUrl}/api/boom`)).status).toBe(500);
    } finally {
      await host.stop();
    }
    expect(events().find((e) => e.hook === 'postInvocation')).toMatchObject({ fn: 'boom', error: 'Error: boom on purpose' });
    const failed = logs.lines.find((l) => l.functionName === 'boom' && l.level === 50);
    expect(failed?.msg).toMatch(/Executed 'Functions.boom' \(Failed\): boom on purpose/);
  });
});
