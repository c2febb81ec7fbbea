/** Azurite + the local host with the Durable engine over the fixture app, in this (jest) process. */
import * as path from 'node:path';
import { startAzurite, type AzuriteHandle } from '../../../local/azurite';
import { startFunctionsHost, type FunctionsHostHandle } from '../../../local/host';
import { createDurableExtension, type DurableExtension, type DurableOptions } from '../../../local/durable';
import { LogCapture } from '../../host/harness';

export const DURABLE_APP = path.resolve(__dirname, '../../fixtures/durable-app');
/** The host keys of these tests (the child host process of tests/helpers/hostProcess.ts uses the same). */
export const TEST_KEYS = { functionKey: 'k', masterKey: 'm' };
const WEBHOOK = '/runtime/webhooks/durabletask';

export interface DurableStack {
  azurite: AzuriteHandle;
  host: FunctionsHostHandle;
  durable: DurableExtension;
  logs: LogCapture;
  baseUrl: string;
  /** The `durabletask_extension` system key the host created for the engine's webhook. */
  systemKey: string;
  stop(): Promise<void>;
}

/** `storage`: the host's AzureWebJobsStorage when not Azurite's own (e.g. its table endpoint behind a recording proxy). */
export async function startDurableStack(opts: DurableOptions = {}, azurite?: AzuriteHandle, storage?: string): Promise<DurableStack> {
  const az = azurite ?? (await startAzurite());
  const logs = new LogCapture();
  const durable = createDurableExtension({ maxPollingIntervalMs: 250, ...opts });
  let host: FunctionsHostHandle;
  try {
    host = await startFunctionsHost({
      appDir: DURABLE_APP,
      port: 0,
      storageConnectionString: storage ?? az.connectionString(),
      keys: TEST_KEYS,
      logLevel: 'info',
      logDestination: logs,
      extensions: [durable],
    });
  } catch (err) {
    if (!azurite) await az.stop();
    throw err;
  }
  return {
    azurite: az,
    host,
    durable,
    logs,
    baseUrl: host.baseUrl,
    systemKey: host.keys.systemKeys?.durabletask_extension ?? '',
    stop: async () => {
      await host.stop();
      if (!azurite) await az.stop();
    },
  };
}

export interface HttpResult {
  status: number;
  headers: Headers;
  body: unknown;
}

export async function http(method: string, url: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  const res = await fetch(url, {
    method,
    headers: body !== undefined ? { 'content-type': 'application/json', ...headers } : headers,
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    // keep text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

/** Start an orchestration through the fixture's HTTP starter (DurableClient.startNew + createCheckStatusResponse). */
export async function startOrchestration(
  baseUrl: string,
  name: string,
  input?: unknown,
  instanceId?: string,
): Promise<{ id: string; links: Record<string, string> }> {
  const res = await http('POST', `${baseUrl}/api/orchestrators/${name}${instanceId ? `/${instanceId}` : ''}`, input ?? null);
  if (res.status !== 202) throw new Error(`start ${name} answered ${res.status}: ${JSON.stringify(res.body)}`);
  const links = res.body as Record<string, string>;
  return { id: links.id, links };
}

/** Run one DurableClient operation through the fixture's ClientOp function. */
export async function clientOp(baseUrl: string, op: Record<string, unknown>): Promise<{ result?: unknown; error?: string }> {
  const res = await http('POST', `${baseUrl}/api/client`, op);
  if (res.status !== 200) throw new Error(`client op ${JSON.stringify(op)} answered ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as { result?: unknown; error?: string };
}

export interface Status {
  name: string;
  instanceId: string;
  runtimeStatus: string;
  input: unknown;
  output: unknown;
  customStatus: unknown;
  createdTime: string;
  lastUpdatedTime: string;
  historyEvents?: Record<string, unknown>[];
}

/**
 * A URL of the Durable management API: `path` under /runtime/webhooks/durabletask, with `code=<key>` added to
 * its query (default: the master key, which the host accepts for every webhook; null: no key).
 */
export function durableUrl(baseUrl: string, path: string, key: string | null = TEST_KEYS.masterKey): string {
  const url = new URL(`${baseUrl}${WEBHOOK}/${path.replace(/^\//, '')}`);
  if (key !== null) url.searchParams.set('code', key);
  return url.toString();
}

export async function getStatus(baseUrl: string, id: string, query = ''): Promise<Status | undefined> {
  const res = await http('GET', durableUrl(baseUrl, `instances/${encodeURIComponent(id)}${query}`));
  if (res.status === 404) return undefined;
  return res.body as Status;
}

export async function waitForStatus(
  baseUrl: string,
  id: string,
  statuses: string[] = ['Completed', 'Failed', 'Terminated'],
  timeoutMs = 30_000,
): Promise<Status> {
  const deadline = Date.now() + timeoutMs;
  let last: Status | undefined;
  while (Date.now() < deadline) {
    last = await getStatus(baseUrl, id);
    if (last && statuses.includes(last.runtimeStatus)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`instance ${id} did not reach ${statuses.join('/')} within ${timeoutMs} ms; last status ${JSON.stringify(last)}`);
}
