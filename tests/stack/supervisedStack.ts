/**
 * `npm start` as a test drives it: `local/start.ts` (the supervisor) as a child process over a data folder, found
 * through the files it keeps there (supervisor.json: pids, base URL, function key; ports.json), stopped with a
 * signal or killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdirSync, mkdtempSync, readFileSync, rmSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { DEFAULT_ACCOUNTS, serviceEndpoint } from '../../local/azurite/accounts';
import { DEV_ACCOUNT_KEY } from '../../local/batch/config';
import { OPERATOR_USER } from '../../local/identity/managedIdentities';
import { remoteTenantCredential } from '../../local/identity/localCredential';
import { trustCertificateInProcess } from '../../local/identity/processTrust';
import { operatorAccess } from '../../local/operatorAccess';
import type { StackClient } from '../../local/jobRunner';
import { REPO_ROOT } from '../../local/stack';
import { readPorts } from '../../local/supervisor/ports';
import { isRunning, readRuntime, type ProcessRef, type RuntimeRecord } from '../../local/supervisor/runtime';

const START = path.join(REPO_ROOT, 'local', 'start.ts');
const openLog = (file: string): WriteStream => createWriteStream(file, { flags: 'w' });
const ARTIFACTS = path.join(REPO_ROOT, 'test-artifacts');

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class SupervisedStackProcess {
  private output = '';
  readonly exited: Promise<Exit>;

  private constructor(
    private readonly child: ChildProcess,
    readonly dataDir: string,
  ) {
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  }

  /** Starts `local/start.ts --data <dataDir>` and waits for its "ready" line. */
  static async start(opts: { dataDir: string; log: WriteStream; hostLog: string; args?: string[]; timeoutMs?: number }): Promise<SupervisedStackProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', START, '--data', opts.dataDir, '--log', opts.hostLog, ...(opts.args ?? [])], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const s = new SupervisedStackProcess(child, opts.dataDir);
    const collect = (c: Buffer): void => {
      s.output = (s.output + c.toString('utf8')).slice(-20_000);
      opts.log.write(c);
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    await s.waitForOutput(/\[stack\] ready \(/, opts.timeoutMs ?? 120_000);
    return s;
  }

  get pid(): number {
    return this.child.pid as number;
  }

  /** Resolves when the supervisor's output (since start) matches; rejects if it exits first. */
  async waitForOutput(pattern: RegExp, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let exited: Exit | undefined;
    void this.exited.then((e) => (exited = e));
    while (!pattern.test(this.output)) {
      if (exited) throw new Error(`the supervisor exited (${JSON.stringify(exited)}) before printing ${pattern}; output:\n${this.output}`);
      if (Date.now() > deadline) throw new Error(`the supervisor did not print ${pattern} within ${timeoutMs} ms; output:\n${this.output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  outputText(): string {
    return this.output;
  }

  runtime(): RuntimeRecord {
    const r = readRuntime(this.dataDir);
    if (!r) throw new Error(`no supervisor.json in ${this.dataDir}`);
    return r;
  }

  /**
   * What local/jobRunner needs, from supervisor.json and ports.json: the API, and the services as the operator
   * reaches them (a keyless stack: the tenant's `admin` user's tokens from the identity service, and this process
   * trusts the stack's certificate; with shared keys: the services' development keys).
   */
  client(): StackClient {
    const r = this.runtime();
    const p = readPorts(this.dataDir);
    const ports = { host: '127.0.0.1', blob: p.blob as number, queue: p.queue as number, table: p.table as number };
    const protocol = r.keyless ? 'https' : 'http';
    if (r.keyless) trustCertificateInProcess(readFileSync(r.identity.caFile, 'utf8'));
    const endpoint =
      (service: 'blob' | 'queue' | 'table') =>
      (name: string = DEFAULT_ACCOUNTS[0].name) =>
        serviceEndpoint(ports, service, name, protocol);
    return {
      baseUrl: r.baseUrl,
      host: { keys: { functionKey: r.functionKey } },
      operator: operatorAccess(
        {
          batch: { url: r.batch.url, accountName: r.batch.accountName, accountKey: DEV_ACCOUNT_KEY },
          storage: { accounts: DEFAULT_ACCOUNTS, blobEndpoint: endpoint('blob'), queueEndpoint: endpoint('queue'), tableEndpoint: endpoint('table') },
        },
        r.keyless ? remoteTenantCredential(r.identity.httpUrl, { user: OPERATOR_USER }) : undefined,
      ),
    };
  }

  /** Sends a signal to the supervisor and waits for it to exit. */
  async signal(sig: NodeJS.Signals, timeoutMs = 120_000): Promise<Exit> {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill(sig);
    const timer = new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`supervisor still running ${timeoutMs} ms after ${sig}; output:\n${this.output}`)), timeoutMs).unref(),
    );
    return Promise.race([this.exited, timer]);
  }
}

/** Polls until `ref` names no running process. */
export async function waitGone(ref: ProcessRef, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (isRunning(ref)) {
    if (Date.now() > deadline) throw new Error(`pid ${ref.pid} still running after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * One supervised stack per test file, on a fresh temp data folder that restarts keep using; its output goes to
 * test-artifacts/stack-<name>-supervisor.log and the host's log to test-artifacts/stack-<name>-host.log.
 */
export class StackFixture {
  dataDir = '';
  private stack: SupervisedStackProcess | undefined;
  private log: WriteStream | undefined;

  constructor(private readonly name: string) {}

  async setUp(): Promise<void> {
    mkdirSync(ARTIFACTS, { recursive: true });
    this.dataDir = mkdtempSync(path.join(tmpdir(), `stack-${this.name}-`));
    this.log = openLog(path.join(ARTIFACTS, `stack-${this.name}-supervisor.log`));
    await this.start();
  }

  async tearDown(): Promise<void> {
    await this.stack?.signal('SIGTERM').catch(() => undefined);
    await new Promise((r) => this.log?.end(r));
    if (this.dataDir) rmSync(this.dataDir, { recursive: true, force: true });
  }

  /** `npm start` on the fixture's folder (the first start takes any free ports; later ones the recorded). */
  async start(): Promise<SupervisedStackProcess> {
    this.stack = await SupervisedStackProcess.start({
      dataDir: this.dataDir,
      log: this.log as WriteStream,
      hostLog: path.join(ARTIFACTS, `stack-${this.name}-host.log`),
      args: ['--port', '0'],
    });
    return this.stack;
  }

  get current(): SupervisedStackProcess {
    if (!this.stack) throw new Error('the supervised stack is not running');
    return this.stack;
  }

  /** Sends the signals (the first waits for the exit) and forgets the stopped stack. */
  async stop(...signals: NodeJS.Signals[]): Promise<Exit> {
    const s = this.current;
    this.stack = undefined;
    const exit = s.signal(signals[0]);
    for (const sig of signals.slice(1)) process.kill(s.pid, sig);
    return exit;
  }
}
