/**
 * The host serves HTTP before its extensions have started (they need its URL), as a restarted host does while its
 * Durable engine comes up. A request in that window is held until the host runs, as the real host's
 * HostAvailabilityCheckMiddleware holds it, and answered 503 "Function host is not running." when the wait runs out;
 * on the old host it reached the function, whose extension input binding could not be provided yet: 500.
 */
import type { AzuriteHandle } from '../../local/azurite';
import type { HostContext, HostExtension } from '../../local/host';
import { HostReadiness } from '../../local/host/http/readiness';
import { startAzurite, startFixtureHost, waitFor } from './harness';

/** Stands in for the Durable engine: provides the `fakeClient` input only once its start has been let go. */
class SlowStartingExtension implements HostExtension {
  readonly name = 'fake';
  readonly triggerTypes = ['fakeTrigger'];
  readonly inputBindingTypes = ['fakeClient'];
  private started = false;
  private release!: () => void;
  private readonly gate = new Promise<void>((r) => (this.release = r));
  readonly context: Promise<HostContext>;
  private gotContext!: (host: HostContext) => void;

  constructor() {
    this.context = new Promise((r) => (this.gotContext = r));
  }

  async provideInputBinding() {
    if (!this.started) throw new Error('The fakeClient binding was requested before the fake extension started');
    return { json: JSON.stringify({ hub: 'fake-hub' }) };
  }

  async start(host: HostContext): Promise<void> {
    this.gotContext(host);
    await this.gate;
    this.started = true;
  }

  letStart(): void {
    this.release();
  }

  async stop(): Promise<void> {}
}

describe('local host: requests before the host is running', () => {
  let azurite: AzuriteHandle;

  beforeAll(async () => {
    azurite = await startAzurite();
  });
  afterAll(async () => {
    await azurite?.stop();
  });

  it('holds a request that needs an extension until the extension has started, then serves it', async () => {
    const ext = new SlowStartingExtension();
    const starting = startFixtureHost(azurite, { extensions: [ext] });
    const context = await ext.context;
    const base = context.baseUrl();
    let answered = 0;
    const early = fetch(`${base}/api/uses-client`).finally(() => answered++);
    const landing = fetch(`${base}/`).finally(() => answered++);
    // Both requests are in the host (counted in flight) while the extension is still starting, and unanswered.
    await waitFor('both requests to reach the host', () => context.ingress.inFlight() === 2 || undefined);
    expect(answered).toBe(0);
    ext.letStart();
    const { host } = await starting;
    try {
      const res = await early;
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ hub: 'fake-hub' });
      expect((await landing).status).toBe(200);
    } finally {
      await host.stop();
    }
  });

  it('answers 503 "Function host is not running." when the host does not start within the wait', async () => {
    const ext = new SlowStartingExtension();
    const starting = startFixtureHost(azurite, { extensions: [ext], readyTimeoutMs: 50 });
    const base = (await ext.context).baseUrl();
    try {
      const res = await fetch(`${base}/api/uses-client`);
      expect(res.status).toBe(503);
      expect(await res.text()).toBe('Function host is not running.');
    } finally {
      ext.letStart();
      await (await starting).host.stop();
    }
  });
});

describe('HostReadiness', () => {
  it('lets waiters go when ready, refuses them when stopped, and times out', async () => {
    const r = new HostReadiness();
    const first = r.waitUntilReady(60_000);
    r.markReady();
    await expect(first).resolves.toBe(true);
    await expect(r.waitUntilReady(0)).resolves.toBe(true);

    const s = new HostReadiness();
    const held = s.waitUntilReady(60_000);
    s.markStopped();
    await expect(held).resolves.toBe(false);
    await expect(s.waitUntilReady(60_000)).resolves.toBe(false);

    await expect(new HostReadiness().waitUntilReady(1)).resolves.toBe(false);
  });
});
