/** Starts Azurite and the local host on the fixture app, capturing the host's structured log. */
import * as path from 'node:path';
import { Writable } from 'node:stream';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startFunctionsHost, type FunctionsHostHandle, type FunctionsHostOptions } from '../../local/host';

export const FIXTURE_APP = path.resolve(__dirname, '../fixtures/host-app');
export const TEST_KEYS = { functionKey: 'test-function-key', masterKey: 'test-master-key' };

export interface LogLine {
  level: number;
  msg: string;
  invocationId?: string;
  functionName?: string;
  category?: string;
  [k: string]: unknown;
}

export class LogCapture extends Writable {
  readonly lines: LogLine[] = [];
  override _write(chunk: Buffer, _enc: BufferEncoding, cb: () => void): void {
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) this.lines.push(JSON.parse(line) as LogLine);
    cb();
  }
}

export async function startFixtureHost(
  azurite: AzuriteHandle,
  overrides: Partial<FunctionsHostOptions> = {},
): Promise<{ host: FunctionsHostHandle; logs: LogCapture }> {
  const logs = new LogCapture();
  const host = await startFunctionsHost({
    appDir: FIXTURE_APP,
    port: 0,
    storageConnectionString: azurite.connectionString(),
    keys: TEST_KEYS,
    logLevel: 'debug',
    logDestination: logs,
    ...overrides,
  });
  return { host, logs };
}

export { startAzurite };

export async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
