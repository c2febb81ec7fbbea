/** Runs tests/helpers/hostProcess.ts over the real app as a process the crash test can SIGKILL and restart on the same port. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import * as path from 'node:path';
import { REPO_ROOT } from '../../../local/stack';

const ENTRY = path.join(__dirname, '../../helpers/hostProcess.ts');
export const CHILD_KEYS = { functionKey: 'crash-test-function-key-0123456789', masterKey: 'crash-test-master-key-0123456789' };

export class PipelineHostProcess {
  baseUrl = '';
  private stderr = '';

  private constructor(private readonly child: ChildProcess) {}

  /** Starts the host (port 0 picks a free one; pass the previous port to restart in place). */
  static async start(opts: { port: number; storage: string; settings: Record<string, string>; log: WriteStream; timeoutMs?: number }): Promise<PipelineHostProcess> {
    const child = spawn(process.execPath, ['--import', 'tsx', ENTRY, REPO_ROOT, opts.storage, String(opts.port)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NODE_OPTIONS: '', HOST_SETTINGS: JSON.stringify(opts.settings), HOST_KEYS: JSON.stringify(CHILD_KEYS) },
    });
    const h = new PipelineHostProcess(child);
    child.stderr!.on('data', (c: Buffer) => {
      h.stderr = (h.stderr + c.toString('utf8')).slice(-8000);
      opts.log.write(c);
    });
    await new Promise<void>((resolve, reject) => {
      const timeoutMs = opts.timeoutMs ?? 90_000;
      const timer = setTimeout(() => reject(new Error(`host child not ready in ${timeoutMs} ms; stderr:\n${h.stderr}`)), timeoutMs);
      let pending = '';
      child.once('exit', (code, sig) => {
        clearTimeout(timer);
        reject(new Error(`host child exited (code ${code}, signal ${sig}) before READY; stderr:\n${h.stderr}`));
      });
      child.stdout!.on('data', (chunk: Buffer) => {
        opts.log.write(chunk);
        if (h.baseUrl) return;
        pending += chunk.toString('utf8');
        const ready = /^READY (\S+)$/m.exec(pending);
        if (ready) {
          h.baseUrl = ready[1];
          clearTimeout(timer);
          resolve();
        }
      });
    });
    return h;
  }

  get port(): number {
    return Number(new URL(this.baseUrl).port);
  }

  /** SIGKILL: no shutdown code runs, exactly like a crashed worker. */
  async kill(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGKILL');
    await exited;
  }
}

export function openLog(file: string): WriteStream {
  return createWriteStream(file, { flags: 'w' });
}
