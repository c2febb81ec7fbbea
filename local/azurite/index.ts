/**
 * Starts and stops a private Azurite (blob, queue, table) as a child process on loopback.
 * By default every service listens on an ephemeral port chosen by the OS (Azurite accepts port 0 and
 * prints the port it got), so parallel jest files and a running stack never collide; a stack that keeps
 * its data asks for the ports it had before (`ports`).
 *
 * Azurite keeps its metadata in LokiJS databases that it saves every 5 s and when it closes (SIGTERM,
 * SIGINT). So the child runs in its own process group (a Ctrl-C meant for the stack reaches only the
 * stack, which stops Azurite last, after everything that writes to it), and it is told to stop through
 * its IPC channel: closing the channel makes it stop the SIGTERM way, which saves every store. A parent
 * that dies without stopping it (SIGKILL) closes the channel too, so Azurite still saves and exits.
 *
 * Keyless (`keyless`, the local stack's default): Azurite serves https with the stack's certificate and OAuth
 * (`--oauth basic`), and the keyless gate (keylessGate.cjs) runs in its process: shared keys and key-signed SAS are
 * refused as by an account with shared key access disabled, bearer tokens are checked against the local tenant.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import { existsSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { azuriteEntry } from './bundle';
import { DEFAULT_ACCOUNTS, azuriteAccountsEnv, connectionStringFor, serviceEndpoint, type ServicePorts, type StorageAccount } from './accounts';

export * from './accounts';

export interface StartAzuriteOptions {
  /**
   * Folder Azurite keeps its data in (kept on stop). Default: none: a fresh temp dir (its working folder, deleted on
   * stop) and the data in memory (`inMemory`), since nothing could ever read it back.
   */
  location?: string;
  /** Accounts to serve; the first is the default of the endpoint helpers. Default: DEFAULT_ACCOUNTS. */
  accounts?: StorageAccount[];
  /** Suppress Azurite's access log (default true). When false its output goes to our stderr. */
  silent?: boolean;
  /**
   * Keep all data in Azurite's memory (`--inMemoryPersistence`); not combinable with `location`. Default: true without
   * a `location`. Saving a store nobody will load again costs Azurite a serialisation of the whole store every
   * `autosaveMs` (the Durable history included): 21% of the CPU of the admission burst (tests/e2e/admission.test.ts).
   * `inMemory: false` without a location keeps the saves (to the temp dir), for a test of them.
   */
  inMemory?: boolean;
  /**
   * How often Azurite saves a changed store to `location` (ms), instead of its hard-coded 5000: a SIGKILL loses at
   * most this much of acknowledged writes (autosave.cjs; docs/local-stack.md). Default AZURITE_AUTOSAVE_MS.
   */
  autosaveMs?: number;
  /** Loopback address to listen on (default 127.0.0.1). */
  host?: string;
  /** How long to wait for the three services (default 30 s). */
  startTimeoutMs?: number;
  /** Ports to listen on (default 0 each: any free port). A port in use fails the start. */
  ports?: Partial<Omit<ServicePorts, 'host'>>;
  /** Serve keyless: https, OAuth and the keyless gate (see the file comment). Default: http with shared keys. */
  keyless?: KeylessStorageOptions;
  /**
   * Each request as it arrives at Azurite (requestTap.cjs, reported over the IPC channel), for counting the requests
   * a path makes where they land (local/testing/callCounter.ts). Default: no tap.
   */
  onRequest?: (request: StorageArrival) => void;
}

/** One request as Azurite received it: the port says which service, the path the account and resource. */
export interface StorageArrival {
  port: number;
  method: string;
  url: string;
  /** Its User-Agent: the emulated nodes' own transfers say NODE_AGENT_USER_AGENT (local/batch/runner/nodeAgentHttp.ts). */
  userAgent?: string;
}

export interface KeylessStorageOptions {
  /** The certificate (PEM file) Azurite serves https with, and its key; clients must trust it (it is self-signed). */
  certFile: string;
  keyFile: string;
  /** The tenant whose tokens are accepted (https://sts.windows.net/<tenantId>/) and its signing keys. */
  tenantId: string;
  jwks: { keys: unknown[] };
}

export interface AzuriteHandle {
  accounts: StorageAccount[];
  /** Folder holding Azurite's data. */
  location: string;
  ports: ServicePorts;
  /** Azurite's process id. */
  pid: number;
  /** Whether it serves keyless (https, tokens only); then `connectionString` is refused by it (KeyBasedAuthenticationNotPermitted). */
  keyless: boolean;
  blobEndpoint(account?: string): string;
  queueEndpoint(account?: string): string;
  tableEndpoint(account?: string): string;
  /**
   * `DefaultEndpointsProtocol=http;AccountName=..;AccountKey=..;BlobEndpoint=..;QueueEndpoint=..;TableEndpoint=..;`
   * (https when keyless, where Azurite refuses it: the account keys exist, as in Azure, but may not be used).
   */
  connectionString(account?: string): string;
  stop(): Promise<void>;
}

/** A plain-JavaScript file of local/azurite, run inside Azurite: beside this file's source, also when it runs from dist/. */
function besideSource(name: string): string | undefined {
  return [path.join(__dirname, name), path.join(__dirname, '..', '..', '..', 'local', 'azurite', name)].find((f) => existsSync(f));
}
/** Stops Azurite when our IPC channel closes, and keeps a closed stdout from crashing it (see the file). */
const PRELOAD = besideSource('preload.cjs');
const GATE = besideSource('keylessGate.cjs');
const TAP = besideSource('requestTap.cjs');
const AUTOSAVE = besideSource('autosave.cjs');
/** Azurite's save interval on disk (ms): 1 s instead of its 5 s (measured in docs/local-stack.md). */
export const AZURITE_AUTOSAVE_MS = 1000;
/** How long a stopping Azurite may take to save its stores before it is killed. */
const STOP_TIMEOUT_MS = 60_000;
const LISTENING = /Azurite (Blob|Queue|Table) service is successfully listening at https?:\/\/[^:\s]+:(\d+)/;

export async function startAzurite(opts: StartAzuriteOptions = {}): Promise<AzuriteHandle> {
  const accounts = opts.accounts && opts.accounts.length > 0 ? [...opts.accounts] : [...DEFAULT_ACCOUNTS];
  const host = opts.host ?? '127.0.0.1';
  const silent = opts.silent ?? true;
  if (opts.inMemory && opts.location !== undefined) {
    throw new Error(`startAzurite: inMemory and location (${opts.location}) exclude each other`);
  }
  const ownsLocation = opts.location === undefined;
  const inMemory = opts.inMemory ?? ownsLocation;
  const location = opts.location ?? (await mkdtemp(path.join(tmpdir(), 'azurite-')));
  if (!ownsLocation) await mkdir(location, { recursive: true });

  const port = (service: 'blob' | 'queue' | 'table'): string => String(opts.ports?.[service] ?? 0);
  const keyless = opts.keyless;
  if (keyless && !GATE) throw new Error('startAzurite: keylessGate.cjs is missing beside local/azurite');
  if (opts.onRequest && !TAP) throw new Error('startAzurite: requestTap.cjs is missing beside local/azurite');
  const autosaveMs = inMemory ? undefined : (opts.autosaveMs ?? AZURITE_AUTOSAVE_MS);
  if (autosaveMs !== undefined && !AUTOSAVE) throw new Error('startAzurite: autosave.cjs is missing beside local/azurite');
  if (!PRELOAD) throw new Error('startAzurite: preload.cjs is missing beside local/azurite');
  const entry = await azuriteEntry();
  const args = [
    '--require',
    PRELOAD,
    ...(keyless ? ['--require', GATE as string] : []),
    // After the gate: the tap wraps the gate's server and so sees every request, refused or not.
    ...(opts.onRequest ? ['--require', TAP as string] : []),
    ...(autosaveMs !== undefined ? ['--require', AUTOSAVE as string] : []),
    entry,
    '--blobHost',
    host,
    '--blobPort',
    port('blob'),
    '--queueHost',
    host,
    '--queuePort',
    port('queue'),
    '--tableHost',
    host,
    '--tablePort',
    port('table'),
    ...(inMemory ? ['--inMemoryPersistence'] : ['--location', location]),
    '--skipApiVersionCheck',
    '--disableTelemetry',
    ...(keyless ? ['--cert', keyless.certFile, '--key', keyless.keyFile, '--oauth', 'basic'] : []),
  ];
  if (silent) args.push('--silent');

  const child = spawn(process.execPath, args, {
    cwd: location,
    env: {
      ...process.env,
      AZURITE_ACCOUNTS: azuriteAccountsEnv(accounts),
      ...(autosaveMs !== undefined ? { HPC_AZURITE_AUTOSAVE_MS: String(autosaveMs) } : {}),
      ...(keyless
        ? {
            HPC_STORAGE_GATE_TENANT: keyless.tenantId,
            HPC_STORAGE_GATE_JWKS: JSON.stringify(keyless.jwks),
            // Azurite's own outgoing requests (Copy Blob from a URL of itself) must trust its certificate.
            NODE_EXTRA_CA_CERTS: keyless.certFile,
          }
        : {}),
    },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    detached: true,
  });
  // If our process exits without calling stop(), its end closes the IPC channel: Azurite saves and exits.
  const onRequest = opts.onRequest;
  if (onRequest) {
    child.on('message', (m: unknown) => {
      const r = m as { tap?: string; port?: number; method?: string; url?: string; userAgent?: string };
      if (r?.tap === 'storage')
        onRequest({ port: Number(r.port), method: String(r.method), url: String(r.url), userAgent: typeof r.userAgent === 'string' ? r.userAgent : '' });
    });
  }

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    await terminate(child);
    if (ownsLocation) await rm(location, { recursive: true, force: true });
  };

  try {
    const ports = await waitForPorts(child, host, silent, opts.startTimeoutMs ?? 30_000);
    const ca = keyless ? readFileSync(keyless.certFile, 'utf8') : undefined;
    await Promise.all((['blob', 'queue', 'table'] as const).map((s) => waitAnswers(host, ports[s], s, ca)));
    const protocol = keyless ? 'https' : 'http';
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
      pid: child.pid as number,
      keyless: keyless !== undefined,
      blobEndpoint: (a) => serviceEndpoint(ports, 'blob', find(a).name, protocol),
      queueEndpoint: (a) => serviceEndpoint(ports, 'queue', find(a).name, protocol),
      tableEndpoint: (a) => serviceEndpoint(ports, 'table', find(a).name, protocol),
      connectionString: (a) => connectionStringFor(ports, find(a), protocol),
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
    const onError = (err: Error): void => fail(new Error(`Could not spawn Azurite (${child.spawnargs.join(' ')}): ${err.message}`));
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

/** Any HTTP answer (even 400) means the service is up. `ca`: the certificate of a keyless (https) Azurite. */
async function waitAnswers(host: string, port: number, service: string, ca?: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      await new Promise<void>((resolve, reject) => {
        const get = ca ? (o: https.RequestOptions, cb: (res: http.IncomingMessage) => void) => https.get({ ...o, ca }, cb) : http.get;
        const req = get({ host, port, path: '/', agent: false, timeout: 2000 }, (res) => {
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

/** Stops Azurite the way that saves its stores (see PRELOAD) and waits until it has exited. */
async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.connected) child.disconnect();
  else child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const forced = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), STOP_TIMEOUT_MS);
  });
  if ((await Promise.race([exited, forced])) === 'timeout') {
    child.kill('SIGKILL');
    await exited;
  }
  clearTimeout(timer);
  child.stdout?.destroy();
  child.stderr?.destroy();
}
