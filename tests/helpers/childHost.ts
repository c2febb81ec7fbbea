/**
 * The local Functions host and Durable engine (tests/helpers/hostProcess.ts) as a child process that a crash test
 * can SIGKILL and start again, on the same port and against the same storage, while Azurite (and the Batch
 * emulator) keep running in the test process. Used by tests/durable/crash.test.ts (the Durable test app) and
 * tests/e2e/crash.test.ts (the real app).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, type WriteStream } from 'node:fs';
import * as path from 'node:path';
import { nodeEntryArgs } from '../../local/compiledEntry';

const ENTRY = path.join(__dirname, 'hostProcess.ts');
const ROOT = path.resolve(__dirname, '../..');
/** The sources the host process runs (the host, the Durable engine, what they import). */
const HOST_SOURCES = ['local', 'shared', path.join('tests', 'helpers')];

/**
 * The command line of the host process: the compiled entry (local/compiledEntry.ts: dist/, as scripts/compile.sh
 * builds it before every `npm test`, when current) for an app in JavaScript, else the sources through tsx, which also
 * loads an app written in TypeScript (the Durable fixture app). Under tsx every start transpiled and source-mapped
 * the whole local stack again: ~1.7 CPU-s to READY against ~0.7 compiled, and the crash tests start the host ~25 times.
 */
function entryArgs(appDir: string): string[] {
  const manifest = JSON.parse(readFileSync(path.join(appDir, 'package.json'), 'utf8')) as { main?: string };
  return /\.[cm]?ts$/.test(manifest.main ?? '') ? ['--import', 'tsx', ENTRY] : nodeEntryArgs(ENTRY, HOST_SOURCES);
}

/** The end of the child's stderr kept for error messages. */
const STDERR_TAIL_CHARS = 8000;

/** One pino log line of the host (JSON on its stdout). */
export interface LogLine {
  msg: string;
  [k: string]: unknown;
}

export interface ChildHostOptions {
  /** The Functions app the host serves. */
  appDir: string;
  /**
   * Storage connection string (Azurite) for the host and the Durable engine; absent for a keyless stack, whose host
   * reads its identity-based storage from `settings` like the app.
   */
  storage?: string;
  /** The App Service managed identity endpoint the host sets (a keyless stack's IDENTITY_ENDPOINT/_HEADER). */
  identityEndpoint?: { endpoint: string; header: string };
  /** The keyless stack's certificate: the child starts with NODE_EXTRA_CA_CERTS set to it. */
  caFile?: string;
  /** 0 (default) picks a free port; the previous host's port restarts it in place. */
  port?: number;
  /** App settings the host exposes to the app (default: none beyond the process environment). */
  settings?: Record<string, string>;
  /** The host's function and master keys (default: hostProcess.ts' own). */
  keys?: { functionKey: string; masterKey: string };
  /** Where the child's stdout and stderr are copied. */
  log?: WriteStream;
  /** Keep the host's log lines in memory for `lines` and `waitForLog` (a test that only needs the log file leaves it off). */
  followLog?: boolean;
  /** How long the host may take to serve (default 60 s). */
  timeoutMs?: number;
}

export class ChildHost {
  readonly lines: LogLine[] = [];
  baseUrl = '';
  private waiters: { pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  private stderr = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly followLog: boolean,
  ) {}

  /** Starts the host and resolves once it prints "READY <baseUrl>". */
  static async start(opts: ChildHostOptions): Promise<ChildHost> {
    const env: NodeJS.ProcessEnv = { ...process.env, NODE_OPTIONS: '' };
    if (opts.settings) env.HOST_SETTINGS = JSON.stringify(opts.settings);
    if (opts.keys) env.HOST_KEYS = JSON.stringify(opts.keys);
    if (opts.identityEndpoint) env.HOST_IDENTITY_ENDPOINT = JSON.stringify({ endpoint: opts.identityEndpoint.endpoint, header: opts.identityEndpoint.header });
    if (opts.caFile) env.NODE_EXTRA_CA_CERTS = opts.caFile;
    const child = spawn(process.execPath, [...entryArgs(opts.appDir), opts.appDir, opts.storage ?? '-', String(opts.port ?? 0)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env,
    });
    const h = new ChildHost(child, opts.followLog ?? false);
    child.stderr!.on('data', (c: Buffer) => {
      h.stderr = (h.stderr + c.toString('utf8')).slice(-STDERR_TAIL_CHARS);
      opts.log?.write(c);
    });
    const timeoutMs = opts.timeoutMs ?? 60_000;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`host child not ready in ${timeoutMs} ms; stderr:\n${h.stderr}`)), timeoutMs);
      child.once('exit', (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`host child exited (code ${code}, signal ${sig}) before READY; stderr:\n${h.stderr}`));
      });
      let pending = '';
      child.stdout!.on('data', (chunk: Buffer) => {
        opts.log?.write(chunk);
        if (h.baseUrl && !h.followLog) return;
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          if (!h.baseUrl && line.startsWith('READY ')) {
            h.baseUrl = line.slice(6).trim();
            clearTimeout(timer);
            resolve();
          } else if (h.followLog && line.startsWith('{')) {
            h.push(line);
          }
        }
      });
    });
    return h;
  }

  get port(): number {
    return Number(new URL(this.baseUrl).port);
  }

  private push(text: string): void {
    let l: LogLine;
    try {
      l = JSON.parse(text) as LogLine;
    } catch {
      return; // a line that only looks like JSON
    }
    this.lines.push(l);
    this.waiters = this.waiters.filter((w) => {
      if (!w.pred(l)) return true;
      w.resolve(l);
      return false;
    });
  }

  /** Resolves with the first log line (past or future) matching `pred` (needs followLog). */
  waitForLog(what: string, pred: (l: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> {
    if (!this.followLog) throw new Error('waitForLog needs a host started with followLog');
    const past = this.lines.find(pred);
    if (past) return Promise.resolve(past);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no log line "${what}" within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.push({
        pred,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
    });
  }

  /** SIGTERM: a graceful stop (the host's shutdown code runs), as the Functions runtime stops a worker; waits for the exit. */
  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGTERM');
    await exited;
  }

  /** SIGKILL: no shutdown code runs, exactly like a crash. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGKILL');
    await exited;
  }
}
