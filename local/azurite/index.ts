/**
 * Starts and stops a private Azurite (blob, queue, table) as a child process on loopback.
 * Every service listens on an ephemeral port chosen by the OS (Azurite accepts port 0 and prints
 * the port it got), so parallel jest files and a running stack never collide.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import * as http from 'node:http';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  DEFAULT_ACCOUNTS,
  azuriteAccountsEnv,
  connectionStringFor,
  serviceEndpoint,
  type ServicePorts,
  type StorageAccount,
} from './accounts';

export * from './accounts';

export interface StartAzuriteOptions {
  /** Folder Azurite keeps its data in (kept on stop). Default: a fresh temp dir, deleted on stop. */
  location?: string;
  /** Accounts to serve; the first is the default of the endpoint helpers. Default: DEFAULT_ACCOUNTS. */
  accounts?: StorageAccount[];
  /** Suppress Azurite's access log (default true). When false its output goes to our stderr. */
  silent?: boolean;
  /** Keep all data in Azurite's memory (`--inMemoryPersistence`); not combinable with `location`. */
  inMemory?: boolean;
  /** Loopback address to listen on (default 127.0.0.1). */
  host?: string;
  /** How long to wait for the three services (default 30 s). */
  startTimeoutMs?: number;
}

export interface AzuriteHandle {
  accounts: StorageAccount[];
  /** Folder holding Azurite's data. */
  location: string;
  ports: ServicePorts;
  blobEndpoint(account?: string): string;
  queueEndpoint(account?: string): string;
  tableEndpoint(account?: string): string;
  /** `DefaultEndpointsProtocol=http;AccountName=..;AccountKey=..;BlobEndpoint=..;QueueEndpoint=..;TableEndpoint=..;` */
  connectionString(account?: string): string;
  stop(): Promise<void>;
}

const AZURITE_MAIN = require.resolve('azurite/dist/src/azurite.js');
const LISTENING = /Azurite (Blob|Queue|Table) service is successfully listening at https?:\/\/[^:\s]+:(\d+)/;

export async function startAzurite(opts: StartAzuriteOptions = {}): Promise<AzuriteHandle> {
  const accounts = opts.accounts && opts.accounts.length > 0 ? [...opts.accounts] : [...DEFAULT_ACCOUNTS];
  const host = opts.host ?? '127.0.0.1';
  const silent = opts.silent ?? true;
  if (opts.inMemory && opts.location !== undefined) {
    throw new Error(`startAzurite: inMemory and location (${opts.location}) exclude each other`);
  }
  const ownsLocation = opts.location === undefined;
  const location = opts.location ?? (await mkdtemp(path.join(tmpdir(), 'azurite-')));
  if (!ownsLocation) await mkdir(location, { recursive: true });

  const args = [
    AZURITE_MAIN,
    '--blobHost', host, '--blobPort', '0',
    '--queueHost', host, '--queuePort', '0',
    '--tableHost', host, '--tablePort', '0',
    ...(opts.inMemory ? ['--inMemoryPersistence'] : ['--location', location]),
    '--skipApiVersionCheck',
    '--disableTelemetry',
  ];
  if (silent) args.push('--silent');

  const child = spawn(process.execPath, args, {
    cwd: location,
    env: { ...process.env, AZURITE_ACCOUNTS: azuriteAccountsEnv(accounts) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // If our process dies without calling stop(), do not leave Azurite running.
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    process.off('exit', killOnExit);
    await terminate(child);
    if (ownsLocation) await rm(location, { recursive: true, force: true });
  };

  try {
    const ports = await waitForPorts(child, host, silent, opts.startTimeoutMs ?? 30_000);
    await Promise.all((['blob', 'queue', 'table'] as const).map((s) => waitAnswers(host, ports[s], s)));
    const find = (name?: string): StorageAccount => {
      if (name === undefined) return accounts[0];
      const found = accounts.find((a) => a.name === name);
      if (!found) {
        throw new Error(`Azurite has no account "${name}" (configured: ${accounts.map((a) => a.name).join(', ')})`);
      }
      return found;
    };
    return {
      accounts,
      location,
      ports,
      blobEndpoint: (a) => serviceEndpoint(ports, 'blob', find(a).name),
      queueEndpoint: (a) => serviceEndpoint(ports, 'queue', find(a).name),
      tableEndpoint: (a) => serviceEndpoint(ports, 'table', find(a).name),
      connectionString: (a) => connectionStringFor(ports, find(a)),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** Reads Azurite's start-up lines until the three services report their ports. */
function waitForPorts(child: ChildProcess, host: string, silent: boolean, timeoutMs: number): Promise<ServicePorts> {
  return new Promise((resolve, reject) => {
    const found: Partial<Record<'blob' | 'queue' | 'table', number>> = {};
    let output = '';
    let pending = '';
    const timer = setTimeout(() => fail(new Error(`Azurite did not start within ${timeoutMs} ms. Output:\n${output}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      const text = chunk.toString('utf8');
      output += text;
      if (!silent) process.stderr.write(text);
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const m = LISTENING.exec(line);
        if (m) found[m[1].toLowerCase() as 'blob' | 'queue' | 'table'] = Number(m[2]);
      }
      if (found.blob && found.queue && found.table) {
        cleanup();
        resolve({ host, blob: found.blob, queue: found.queue, table: found.table });
      }
    };
    const onErrData = (chunk: Buffer): void => {
      output += chunk.toString('utf8');
      if (!silent) process.stderr.write(chunk);
    };
    const onExit = (code: number | null, signal: string | null): void =>
      fail(new Error(`Azurite exited during start-up (code ${code}, signal ${signal}). Output:\n${output}`));
    const onError = (err: Error): void => fail(new Error(`Could not spawn Azurite (${AZURITE_MAIN}): ${err.message}`));
    function cleanup(): void {
      clearTimeout(timer);
      child.off('exit', onExit);
      child.off('error', onError);
      // Keep draining the pipes so Azurite never blocks on a full stdout.
      child.stdout?.off('data', onData);
      child.stdout?.on('data', silent ? () => undefined : (c: Buffer) => process.stderr.write(c));
    }
    function fail(err: Error): void {
      cleanup();
      reject(err);
    }
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onErrData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
}

/** Any HTTP answer (even 400) means the service is up. */
async function waitAnswers(host: string, port: number, service: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      await new Promise<void>((resolve, reject) => {
        const req = http.get({ host, port, path: '/', agent: false, timeout: 2000 }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('timeout', () => req.destroy(new Error('timeout')));
        req.on('error', reject);
      });
      return;
    } catch (err) {
      lastError = err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  throw new Error(`Azurite ${service} service on ${host}:${port} does not answer: ${String(lastError)}`);
}

async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const forced = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), 5000);
  });
  if ((await Promise.race([exited, forced])) === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
  clearTimeout(timer);
  child.stdout?.destroy();
  child.stderr?.destroy();
}
