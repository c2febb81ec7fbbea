/**
 * The process launcher: a small long-lived Node process that starts the emulator's node processes for it.
 *
 * Starting a process forks its parent, and a fork costs in proportion to the parent's memory: the process hosting the
 * stack (the Functions host, the Durable engine, the emulator and, under jest, the tests) holds ~600 MB, so each
 * start, preparation, release and (sub)task of every node cost ~14-20 ms of CPU in the fork alone. Forking this
 * ~40 MB process instead costs a fraction of it. What runs is unchanged: the same argv, cwd, environment, own
 * process group and output files; the stack still kills and checks the group by its id, as before.
 *
 * The launcher is started on first use and shared by every engine of the process that holds it (holdLauncher); it
 * ends when the last of them lets go (an emulator's stop), or when its parent exits (its IPC channel closes): under
 * jest every test file loads this module afresh, and a launcher per file left running would outlive its stack. If it ends while processes it started are running, their outcome is reported as a start
 * failure naming it, and the next start runs a new launcher.
 */
import { spawn, type ChildProcess } from 'node:child_process';

/** How a node process ended, as the emulator records it. */
export interface ProcessOutcome {
  exitCode?: number;
  signal?: string;
  /** Set when the program could not be started at all (e.g. not found). */
  spawnError?: string;
}

/** What the launcher is asked to start (the arguments of runCommandLine's spawn). */
export interface LaunchRequest {
  file: string;
  args: string[];
  cwd: string;
  env: Record<string, string>;
  stdoutPath: string;
  stderrPath: string;
}

type Reply =
  | { id: number; kind: 'started'; pid: number | null }
  | { id: number; kind: 'error'; error: string }
  | { id: number; kind: 'exit'; code: number | null; signal: string | null };

// The launcher's own code (plain JavaScript, run with `node -e`, so it needs no build step): one spawn per message,
// the pid sent back at once, then the first of 'error' or 'exit' (as runCommandLine resolved on the first of them).
const LAUNCHER_JS = `
const { spawn } = require('node:child_process');
const { openSync, closeSync } = require('node:fs');
const send = (m) => { if (process.connected) process.send(m); };
process.on('message', (m) => {
  let out, err, child;
  try {
    out = openSync(m.stdoutPath, 'a');
    err = openSync(m.stderrPath, 'a');
    child = spawn(m.file, m.args, { cwd: m.cwd, env: m.env, detached: true, stdio: ['ignore', out, err] });
  } catch (e) {
    send({ id: m.id, kind: 'error', error: e.message });
    return;
  } finally {
    if (out !== undefined) closeSync(out);
    if (err !== undefined) closeSync(err);
  }
  send({ id: m.id, kind: 'started', pid: child.pid ?? null });
  let ended = false;
  child.once('error', (e) => { if (!ended) { ended = true; send({ id: m.id, kind: 'error', error: m.file + ': ' + e.message }); } });
  child.once('exit', (code, signal) => { if (!ended) { ended = true; send({ id: m.id, kind: 'exit', code, signal }); } });
});
process.on('disconnect', () => process.exit(0));
`;

interface Pending {
  started: (pid: number | undefined) => void;
  done: (o: ProcessOutcome) => void;
  pidKnown: boolean;
}

let launcher: ChildProcess | undefined;
/** Engines of this process that may still launch (holdLauncher): the launcher ends when none is left. */
let holders = 0;
const pending = new Map<number, Pending>();
let nextId = 1;

const channelOf = (c: ChildProcess) => c.channel as { ref(): void; unref(): void } | undefined;

function settled(id: number): void {
  pending.delete(id);
  if (pending.size === 0 && launcher) channelOf(launcher)?.unref();
}

function start(): ChildProcess {
  // No inherited NODE_OPTIONS: a loader or preload of the stack's process (a profiler, a require hook) is not needed.
  const env = { ...process.env };
  delete env.NODE_OPTIONS;
  const child = spawn(process.execPath, ['-e', LAUNCHER_JS], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env });
  child.on('message', (m: Reply) => {
    const p = pending.get(m.id);
    if (!p) return;
    if (m.kind === 'started') {
      p.pidKnown = true;
      p.started(m.pid ?? undefined);
      return;
    }
    settled(m.id);
    if (!p.pidKnown) p.started(undefined);
    if (m.kind === 'error') p.done({ spawnError: m.error });
    else p.done({ exitCode: m.code ?? undefined, signal: m.signal ?? undefined });
  });
  child.once('exit', (code, signal) => {
    if (launcher === child) launcher = undefined;
    const why = `the emulator's process launcher ended (${signal ?? `exit code ${code}`})`;
    for (const [id, p] of pending) {
      settled(id);
      if (!p.pidKnown) p.started(undefined);
      p.done({ spawnError: why });
    }
  });
  // The launcher keeps the stack's process alive only while a process it started runs (as that child would have).
  child.unref();
  channelOf(child)?.unref();
  return child;
}

/**
 * Starts `req` through the launcher: `pid` resolves with its pid (its process group id; undefined when it did not
 * start) and `done` with its outcome, as a direct spawn would report them.
 */
export function launch(req: LaunchRequest): { pid: Promise<number | undefined>; done: Promise<ProcessOutcome> } {
  launcher ??= start();
  const id = nextId++;
  let started!: (pid: number | undefined) => void;
  let done!: (o: ProcessOutcome) => void;
  const pid = new Promise<number | undefined>((r) => (started = r));
  const outcome = new Promise<ProcessOutcome>((r) => (done = r));
  pending.set(id, { started, done, pidKnown: false });
  channelOf(launcher)?.ref();
  launcher.send({ id, ...req }, (err) => {
    if (!err || !pending.has(id)) return;
    settled(id);
    started(undefined);
    done({ spawnError: `the emulator's process launcher is gone: ${err.message}` });
  });
  return { pid, done: outcome };
}

/**
 * Declares an engine that launches processes until the returned function is called (its stop); when no engine holds
 * the launcher any more, it is disconnected and exits. Processes it started were killed by their engine's stop; any
 * outcome still pending is then reported as the launcher's end.
 */
export function holdLauncher(): () => void {
  holders++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    holders--;
    if (holders === 0 && launcher?.connected) launcher.disconnect();
  };
}
