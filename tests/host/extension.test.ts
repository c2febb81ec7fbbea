import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AzuriteHandle } from '../../local/azurite';
import type { BindingInfo, HostContext, HostExtension } from '../../local/host';
import { events } from '../fixtures/host-app/src/events';
import { TEST_KEYS, startAzurite, startFixtureHost, waitFor } from './harness';

/** A minimal extension standing in for the Durable engine: it owns a trigger type, an input type and a webhook. */
class FakeExtension implements HostExtension {
  readonly name = 'fake';
  readonly triggerTypes = ['fakeTrigger'];
  readonly inputBindingTypes = ['fakeClient'];
  host?: HostContext;
  webhookUrl?: string;
  stopped = false;
  provided: { binding: string; functionName: string; requestUrl?: string }[] = [];

  async provideInputBinding(binding: BindingInfo, invocation: { functionName: string; requestUrl?: string }) {
    this.provided.push({ binding: binding.name, ...invocation });
    return { json: JSON.stringify({ hub: 'fake-hub', for: invocation.functionName }) };
  }

  async handleHttp(_req: IncomingMessage, res: ServerResponse, url: URL): Promise<boolean> {
    if (!url.pathname.startsWith('/runtime/webhooks/fake/')) return false;
    res.end(`fake webhook ${url.pathname.split('/').pop()}`);
    return true;
  }

  async start(host: HostContext): Promise<void> {
    this.host = host;
    this.webhookUrl = host.webhookUrl('fake');
  }

  async stop(): Promise<void> {
    this.stopped = true;
  }
}

describe('local host: extensions', () => {
  let azurite: AzuriteHandle;

  beforeAll(async () => {
    azurite = await startAzurite();
  });
  afterAll(async () => {
    await azurite?.stop();
  });

  it('lets an extension dispatch its trigger type and provide input bindings', async () => {
    const ext = new FakeExtension();
    const { host } = await startFixtureHost(azurite, { extensions: [ext] });
    try {
      expect(ext.host).toBe(host.context);
      expect(ext.host?.baseUrl()).toBe(host.baseUrl);
      expect(ext.host?.storage()).toEqual({ kind: 'connectionString', name: 'AzureWebJobsStorage', connectionString: azurite.connectionString() });
      const fn = host.functions().find((f) => f.name === 'fakeTriggered');
      expect(fn?.trigger).toMatchObject({ type: 'fakeTrigger', name: 'payload', direction: 'in' });

      const result = await host.context.invoke('fakeTriggered', { inputData: [{ name: 'payload', data: { json: '{"n":7}' } }] });
      expect(result.error).toBeUndefined();
      expect(result.rawResult).toEqual({ echoed: { n: 7 } });
      expect(JSON.parse(result.returnValue?.json ?? 'null')).toEqual({ echoed: { n: 7 } });
      expect(
        events()
          .filter((e) => e.kind === 'fakeTriggered')
          .at(-1),
      ).toMatchObject({
        payload: { n: 7 },
        client: { hub: 'fake-hub', for: 'fakeTriggered' },
      });

      // HTTP functions get the extension's input too, with the request URL.
      const res = await fetch(`${host.baseUrl}/api/uses-client?x=1`);
      expect(await res.json()).toEqual({ hub: 'fake-hub', for: 'usesFakeClient' });
      expect(ext.provided.at(-1)).toEqual({ binding: 'client', functionName: 'usesFakeClient', requestUrl: `${host.baseUrl}/api/uses-client?x=1` });

      // Webhooks reach the extension before function routing, once the host has checked the extension's system key.
      const hook = new URL(ext.webhookUrl!);
      expect(hook.origin + hook.pathname).toBe(`${host.baseUrl}/runtime/webhooks/fake`);
      const systemKey = hook.searchParams.get('code')!;
      expect(systemKey).toBe(host.keys.systemKeys?.fake_extension);
      expect(host.context.webhookUrl('fake')).toBe(ext.webhookUrl); // created once, then reused
      expect(await (await fetch(`${host.baseUrl}/runtime/webhooks/fake/abc?code=${systemKey}`)).text()).toBe('fake webhook abc');
      expect(await (await fetch(`${host.baseUrl}/runtime/webhooks/fake/abc`, { headers: { 'x-functions-key': TEST_KEYS.masterKey } })).text()).toBe(
        'fake webhook abc',
      );
      for (const code of ['', 'wrong', TEST_KEYS.functionKey]) {
        const denied = await fetch(`${host.baseUrl}/runtime/webhooks/fake/abc?code=${code}`);
        expect(denied.status).toBe(401);
        expect(await denied.text()).toBe('');
      }
      // Another extension's key does not open this webhook.
      const otherKey = new URL(host.context.webhookUrl('other')).searchParams.get('code')!;
      expect((await fetch(`${host.baseUrl}/runtime/webhooks/fake/abc?code=${otherKey}`)).status).toBe(401);
      expect((await fetch(`${host.baseUrl}/runtime/webhooks/FAKE/abc?code=${otherKey}`)).status).toBe(401);

      const failed = await host.context.invoke('nope', { inputData: [] });
      expect(failed.error?.message).toMatch(/No function named "nope"/);
    } finally {
      await host.stop();
    }
    expect(ext.stopped).toBe(true);
  });

  it('can start a fresh host after stop, with the app registered again', async () => {
    for (let round = 0; round < 2; round++) {
      const { host } = await startFixtureHost(azurite);
      expect(host.functions().map((f) => f.name)).toContain('greet');
      const res = await fetch(`${host.baseUrl}/api/greet/Round`);
      expect(res.status).toBe(200);
      await host.stop();
    }
  });

  it('refuses a second host in the same process', async () => {
    const { host } = await startFixtureHost(azurite);
    try {
      await expect(startFixtureHost(azurite)).rejects.toThrow(/only one host per process/);
    } finally {
      await host.stop();
    }
  });

  it('lets a request in progress finish when the host stops', async () => {
    const { host } = await startFixtureHost(azurite);
    const started = events().length;
    const pending = fetch(`${host.baseUrl}/api/slow`);
    await waitFor('the slow function to start', () =>
      events()
        .slice(started)
        .some((e) => e.kind === 'slowStarted')
        ? true
        : undefined,
    );
    const stopped = host.stop();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('finished');
    await stopped;
    await expect(fetch(`${host.baseUrl}/api/slow`)).rejects.toThrow();
  });
});
