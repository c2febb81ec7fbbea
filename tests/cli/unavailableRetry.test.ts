/**
 * The CLI retries a 503 (a Function App that is starting, a dependency briefly away) after its Retry-After instead
 * of failing the command, a bounded number of times; other errors are answered at once.
 */
import { ApiClient, retryAfterMs } from '../../cli/apiClient';
import { CliError } from '../../cli/errors';

function answers(...statuses: [number, string?][]): { fetchImpl: typeof fetch; calls: () => number } {
  let n = 0;
  const fetchImpl = (async () => {
    const [status, retryAfter] = statuses[Math.min(n++, statuses.length - 1)];
    const body = status === 200 ? { id: 'j1', state: 'Running' } : { error: 'Unavailable', message: 'temporarily unavailable: starting' };
    return new Response(JSON.stringify(body), {
      status,
      headers: { 'content-type': 'application/json', ...(retryAfter ? { 'Retry-After': retryAfter } : {}) },
    });
  }) as typeof fetch;
  return { fetchImpl, calls: () => n };
}

const connection = { endpoint: 'http://api.test', key: 'k' };

describe('ApiClient: 503 is retried', () => {
  it('waits each Retry-After and returns the answer that follows', async () => {
    const waits: number[] = [];
    const { fetchImpl, calls } = answers([503, '1'], [503], [200]);
    const client = new ApiClient(connection, fetchImpl, undefined, async (ms) => void waits.push(ms));
    await expect(client.getJob('j1')).resolves.toMatchObject({ id: 'j1' });
    expect(calls()).toBe(3);
    expect(waits).toEqual([1000, 2000]);
  });

  it("gives up after 5 retries with the API's error", async () => {
    const { fetchImpl, calls } = answers([503, '120']);
    const waits: number[] = [];
    const client = new ApiClient(connection, fetchImpl, undefined, async (ms) => void waits.push(ms));
    await expect(client.cancel('j1')).rejects.toThrow(CliError);
    expect(calls()).toBe(6);
    expect(waits).toEqual([10_000, 10_000, 10_000, 10_000, 10_000]);
  });

  it('does not retry other errors', async () => {
    const { fetchImpl, calls } = answers([500]);
    const client = new ApiClient(connection, fetchImpl, undefined, async () => undefined);
    await expect(client.getJob('j1')).rejects.toThrow(CliError);
    expect(calls()).toBe(1);
  });

  it('reads Retry-After in seconds, capped, 2 s when absent or not a number', () => {
    expect(retryAfterMs('3')).toBe(3000);
    expect(retryAfterMs(null)).toBe(2000);
    expect(retryAfterMs('Fri, 27 Nov 2026 10:00:00 GMT')).toBe(2000);
    expect(retryAfterMs('600')).toBe(10_000);
  });
});
