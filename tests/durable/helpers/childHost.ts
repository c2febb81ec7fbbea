/** Spawns tests/helpers/hostProcess.ts as a separately killable process and follows its log. */
import { spawn, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';

const ENTRY = path.resolve(__dirname, '../../helpers/hostProcess.ts');
const ROOT = path.resolve(__dirname, '../../..');

export interface LogLine {
  msg: string;
  [k: string]: unknown;
}

export class ChildHost {
  readonly lines: LogLine[] = [];
  baseUrl = '';
  private waiters: { pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }[] = [];
  private stderr = '';

  private constructor(private readonly child: ChildProcess) {}

  static async start(appDir: string, connectionString: string, timeoutMs = 60_000): Promise<ChildHost> {
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, appDir, connectionString], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '' },
    });
    const h = new ChildHost(child);
    let pending = '';
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`host child not ready in ${timeoutMs} ms; stderr:\n${h.stderr}`)), timeoutMs);
      child.once('exit', (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`host child exited (code ${code}, signal ${sig}) before READY; stderr:\n${h.stderr}`));
      });
      child.stdout!.on('data', (chunk: Buffer) => {
        pending += chunk.toString('utf8');
        const lines = pending.split('\n');
        pending = lines.pop() ?? '';
        for (const line of lines) {
          if (line.startsWith('READY ')) {
            h.baseUrl = line.slice(6).trim();
            clearTimeout(timer);
            resolve();
            continue;
          }
          if (!line.startsWith('{')) continue;
          try {
            h.push(JSON.parse(line) as LogLine);
          } catch {
            // partial or foreign line
          }
        }
      });
    });
    child.stderr!.on('data', (c: Buffer) => {
      h.stderr += c.toString('utf8');
    });
    await ready;
    return h;
  }

  private push(l: LogLine): void {
    this.lines.push(l);
    this.waiters = this.waiters.filter((w) => {
      if (!w.pred(l)) return true;
      w.resolve(l);
      return false;
    });
  }

  /** Resolves with the first log line (past or future) matching `pred`. */
  waitForLog(what: string, pred: (l: LogLine) => boolean, timeoutMs = 30_000): Promise<LogLine> {
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

  /** SIGKILL: no shutdown code runs, exactly like a crash. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGKILL');
    await exited;
  }
}
