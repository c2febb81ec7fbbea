import { splitCommandLine } from './commandLine';
import { processAlive } from '../nodetools/lib/processAlive';
import { launch, type ProcessOutcome } from './launcher';

// Declared beside the launcher that reports it; re-exported here, where the emulator has always found it.
export type { ProcessOutcome } from './launcher';

export interface RunningProcess {
  pgid: number | undefined;
  done: Promise<ProcessOutcome>;
}

/**
 * Runs a command line as a real process in its own process group (so the whole tree can be
 * killed), appending stdout/stderr to the given files, as a Batch node agent does. The process is started by the
 * launcher (launcher.ts: forking this large process for every task cost more CPU than many tasks themselves);
 * resolves once it has started (or failed to).
 */
export async function runCommandLine(opts: {
  commandLine: string;
  cwd: string;
  env: Record<string, string>;
  stdoutPath: string;
  stderrPath: string;
  /** Turns the split command line into what actually runs (e.g. wrapped in `docker run`). */
  wrap?: (argv: string[]) => string[];
}): Promise<RunningProcess> {
  let argv: string[];
  try {
    argv = splitCommandLine(opts.commandLine);
    if (opts.wrap && argv.length) argv = opts.wrap(argv);
  } catch (e) {
    return { pgid: undefined, done: Promise.resolve({ spawnError: (e as Error).message }) };
  }
  if (argv.length === 0) return { pgid: undefined, done: Promise.resolve({ spawnError: 'empty command line' }) };
  const started = launch({ file: argv[0], args: argv.slice(1), cwd: opts.cwd, env: opts.env, stdoutPath: opts.stdoutPath, stderrPath: opts.stderrPath });
  return { pgid: await started.pid, done: started.done };
}

export function killGroup(pgid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pgid) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    // already gone
  }
}

export function killPid(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

export function isAlive(pid: number): boolean {
  return processAlive(pid);
}

export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}
