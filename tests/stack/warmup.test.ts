/**
 * A restarted Functions host never answers 500 for "not started yet": while the supervisor brings a SIGKILLed host
 * back, requests to every route that uses the Durable client get either no connection (nothing listens yet), a
 * held-then-normal answer, or a 503 — never 500. On the old host the window between the listener opening and the
 * Durable engine starting (0.2–4.7 s measured) answered 500 "durableClient binding was requested before the Durable
 * extension started".
 */
import { StackFixture, waitGone } from './supervisedStack';

const fx = new StackFixture('warmup');

beforeAll(() => fx.setUp(), 180_000);
afterAll(() => fx.tearDown(), 180_000);

test('requests racing a host restart get 2xx/4xx/503, never 500', async () => {
  const s = fx.current;
  const before = s.runtime();
  const headers = { 'x-functions-key': before.functionKey };
  const statuses: number[] = [];
  let refused = 0;
  let stop = false;
  const probes: [string, RequestInit][] = [
    ['/api/jobs/no-such-job', { headers }],
    ['/api/jobs', { headers }],
    ['/api/jobs/no-such-job', { method: 'DELETE', headers }],
    ['/api/jobs', { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: '{}' }],
  ];
  const hammer = async (path: string, init: RequestInit): Promise<void> => {
    while (!stop) {
      const res = await fetch(`${before.baseUrl}${path}`, init).catch(() => undefined);
      if (res) {
        statuses.push(res.status);
        await res.arrayBuffer();
      } else {
        refused++;
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  const running = probes.map(([path, init]) => hammer(path, init));
  try {
    process.kill(before.host.pid, 'SIGKILL');
    await waitGone(before.host, 10_000);
    await s.waitForOutput(/the Functions host is back \(pid \d+\)/, 120_000);
    // A few answers from the new host after it is back.
    const seen = statuses.length;
    while (statuses.length < seen + 20) await new Promise((r) => setTimeout(r, 50));
  } finally {
    stop = true;
    await Promise.all(running);
  }
  const unexpected = statuses.filter((st) => !(st >= 200 && st < 300) && ![400, 404, 503].includes(st));
  expect({ unexpected, refusedSome: refused > 0 }).toEqual({ unexpected: [], refusedSome: true });
  expect(statuses).toContain(404);
}, 300_000);
