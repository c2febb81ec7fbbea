/**
 * One run of the host worker (./hostWorker.ts) as a child process: started, awaited until it serves HTTP,
 * stopped cleanly (SIGTERM) or found dead. It runs in its own process group, so a Ctrl-C meant for the stack
 * reaches only the supervisor, which stops the host before the services it writes to.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import type { HostWorkerConfig, SupervisorMessage, WorkerMessage } from './hostWorker';
import { nodeEntryArgs } from '../compiledEntry';

const ENTRY = path.join(__dirname, `hostWorker${path.extname(__filename)}`);
/** What the worker runs besides the app: the host, the Durable engine and what they import. */
const WORKER_SOURCES = ['local', 'shared'];

export interface WorkerExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export class HostWorkerProcess {
  readonly startedAt = Date.now();
  /** Set by stop(): the exit that follows was asked for. */
  stopRequested = false;
  readonly exited: Promise<WorkerExit>;

  private constructor(
    private readonly child: ChildProcess,
    readonly ready: Extract<WorkerMessage, { type: 'ready' }>,
    exited: Promise<WorkerExit>,
  ) {
    this.exited = exited;
  }

  get pid(): number {
    return this.ready.pid;
  }

  /** Starts a worker and resolves once it serves HTTP; rejects (the worker gone) when it cannot start. */
  static async start(config: HostWorkerConfig, cwd: string, timeoutMs = 120_000): Promise<HostWorkerProcess> {
    // The local tooling runs from its TypeScript sources through tsx; compiled, it runs as plain JavaScript. A worker
    // started from the sources runs the build's twin when it is current: every restart of the host is ~1 CPU-s less.
    const child = spawn(process.execPath, nodeEntryArgs(ENTRY, WORKER_SOURCES), {
      cwd,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      detached: true,
      // A keyless stack's Azurite serves https with the stack's certificate: the worker trusts it from its start.
      env: config.caFile ? { ...process.env, NODE_EXTRA_CA_CERTS: config.caFile } : process.env,
    });
    const exited = new Promise<WorkerExit>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
    const ready = await new Promise<Extract<WorkerMessage, { type: 'ready' }>>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`the Functions host worker did not start within ${timeoutMs / 1000} s`));
      }, timeoutMs);
      child.once('error', (err) => {
        clearTimeout(timer);
        reject(new Error(`cannot start the Functions host worker: ${err.message}`));
      });
      child.on('message', (msg: WorkerMessage) => {
        clearTimeout(timer);
        if (msg.type === 'ready') resolve(msg);
        else reject(new Error(`the Functions host did not start: ${msg.message}`));
      });
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`the Functions host worker exited during start-up (code ${code}, signal ${signal})`));
      });
      const start: SupervisorMessage = { type: 'start', config };
      child.send(start);
    });
    return new HostWorkerProcess(child, ready, exited);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Clean stop (SIGTERM: HTTP drained, Durable engine stopped); SIGKILL after `timeoutMs`. */
  async stop(timeoutMs = 60_000): Promise<WorkerExit> {
    this.stopRequested = true;
    if (this.running) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    if (this.child.connected) this.child.disconnect();
    return this.exited;
  }
}
