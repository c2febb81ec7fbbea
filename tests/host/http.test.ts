import { startAzurite, startFixtureHost, TEST_KEYS } from './harness';
import type { AzuriteHandle } from '../../local/azurite';
import type { FunctionsHostHandle } from '../../local/host';

describe('local host: HTTP triggers', () => {
  let azurite: AzuriteHandle;
  let host: FunctionsHostHandle;

  beforeAll(async () => {
    azurite = await startAzurite();
    ({ host } = await startFixtureHost(azurite));
  });

  afterAll(async () => {
    await host?.stop();
    await azurite?.stop();
  });

  it('passes route params, query, headers and a JSON body to the function', async () => {
    const res = await fetch(`${host.baseUrl}/api/greet/Ada/3?lang=en&tag=a&tag=b`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test': 'yes' },
      body: JSON.stringify({ hello: 'world' }),
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-greeted')).toBe('Ada');
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    expect(await res.json()).toEqual({
      name: 'Ada',
      count: '3',
      query: { lang: 'en', tag: 'a,b' },
      body: { hello: 'world' },
      header: 'yes',
      url: `${host.baseUrl}/api/greet/Ada/3?lang=en&tag=a&tag=b`,
    });
  });

  it('honours optional parameters and constraints', async () => {
    const res = await fetch(`${host.baseUrl}/api/GREET/Bob`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ name: 'Bob', count: null, body: null });
    // {count:int} rejects a non-integer, {name:alpha} a digit: no route matches.
    expect((await fetch(`${host.baseUrl}/api/greet/Bob/x`)).status).toBe(404);
    expect((await fetch(`${host.baseUrl}/api/greet/B0b`)).status).toBe(404);
  });

  it('answers 404 for unknown routes and 405 for a wrong method', async () => {
    expect((await fetch(`${host.baseUrl}/api/nowhere`)).status).toBe(404);
    expect((await fetch(`${host.baseUrl}/greet/Ada`)).status).toBe(404); // no route prefix
    const wrong = await fetch(`${host.baseUrl}/api/greet/Ada`, { method: 'DELETE' });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get('allow')).toBe('GET, POST');
  });

  it('requires a key for authLevel function and the master key for admin', async () => {
    expect((await fetch(`${host.baseUrl}/api/secret`)).status).toBe(401);
    expect((await fetch(`${host.baseUrl}/api/secret?code=wrong`)).status).toBe(401);
    const byHeader = await fetch(`${host.baseUrl}/api/secret`, { headers: { 'x-functions-key': TEST_KEYS.functionKey } });
    expect(byHeader.status).toBe(200);
    expect(await byHeader.text()).toBe('the secret');
    expect((await fetch(`${host.baseUrl}/api/secret?code=${host.keys.functionKey}`)).status).toBe(200);
    expect((await fetch(`${host.baseUrl}/api/secret?code=${TEST_KEYS.masterKey}`)).status).toBe(200);
    expect((await fetch(`${host.baseUrl}/api/admin-only?code=${TEST_KEYS.functionKey}`)).status).toBe(401);
    expect((await fetch(`${host.baseUrl}/api/admin-only?code=${TEST_KEYS.masterKey}`)).status).toBe(200);
  });

  it('sends streamed bodies, status, headers and cookies', async () => {
    const res = await fetch(`${host.baseUrl}/api/files/a/b.txt`);
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('text/plain');
    expect(res.headers.get('set-cookie')).toBe('sid=abc; HttpOnly');
    expect(await res.text()).toBe('part1-part2-a/b.txt');
  });

  it('passes binary bodies through unchanged', async () => {
    const res = await fetch(`${host.baseUrl}/api/echo`, { method: 'PUT', body: Buffer.from([1, 2, 3, 250]) });
    expect(res.status).toBe(200);
    expect([...new Uint8Array(await res.arrayBuffer())]).toEqual([250, 3, 2, 1]);
  });

  it('answers 500 when the function throws and 204 when it returns nothing', async () => {
    expect((await fetch(`${host.baseUrl}/api/boom`)).status).toBe(500);
    expect((await fetch(`${host.baseUrl}/api/nothing`)).status).toBe(204);
  });

  it('lists every function with its trigger in the banner', () => {
    const banner = host.banner();
    expect(banner).toContain(`greet: [GET,POST] ${host.baseUrl}/api/greet/{name:alpha}/{count:int?}`);
    expect(banner).toContain('secret: [GET]');
    expect(banner).toContain('(authLevel function)');
    expect(banner).toMatch(/processItem: queueTrigger \(queue "items"/);
  });
});
