/**
 * `<data>/supervisor.json`: which processes serve a data folder right now, where, and with which function key.
 * Written when the stack is up and each time the host worker (re)starts; removed by a clean stop. Tools and
 * tests read it to find the stack; a new supervisor reads it to refuse a folder another live stack serves, and
 * to wait for the processes a dead one left (Azurite saving its stores, a host worker stopping) before it takes
 * the folder and its ports.
 *
 * Processes are named by pid and start time (/proc/<pid>/stat field 22), so a recycled pid is never mistaken
 * for the process that had it.
 */
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

export interface ProcessRef {
  pid: number;
  /** Start time in clock ticks since boot; absent where /proc is not readable. */
  startTicks?: number;
}

export interface RuntimeRecord {
  supervisor: ProcessRef;
  dataDir: string;
  startedAt: string;
  /** The Functions host's base URL (stable across host restarts). */
  baseUrl: string;
  functionKey: string;
  host: ProcessRef & { startedAt: string; starts: number };
  azurite: ProcessRef & { blob: string; queue: string; table: string };
  batch: { url: string; accountName: string };
  /**
   * Keyless (tokens only; the default) or with shared keys; the identity service's loopback origin (development
   * tokens at /local/resource-token) and the stack's certificate, which clients of the https services must trust.
   */
  keyless: boolean;
  identity: { httpUrl: string; issuer: string; caFile: string };
  registry: { url: string; host: string };
  /** The webhook receiver registered for job events (GET <origin>/deliveries lists what it got). */
  webhooks: { url: string };
}

export function runtimeFile(dataDir: string): string {
  return path.join(dataDir, 'supervisor.json');
}

export function readRuntime(dataDir: string): RuntimeRecord | undefined {
  const file = runtimeFile(dataDir);
  if (!existsSync(file)) return undefined;
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as RuntimeRecord;
  } catch {
    return undefined;
  }
}

export function writeRuntime(dataDir: string, record: RuntimeRecord): void {
  const file = runtimeFile(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(record, null, 2) + '\n');
  renameSync(tmp, file);
}

export function removeRuntime(dataDir: string): void {
  rmSync(runtimeFile(dataDir), { force: true });
}

export function processRef(pid: number): ProcessRef {
  return { pid, startTicks: startTicks(pid) };
}

/** Whether the process the reference names is still running (and not a zombie). */
export function isRunning(ref: ProcessRef | undefined): boolean {
  if (!ref?.pid) return false;
  try {
    process.kill(ref.pid, 0);
  } catch {
    return false;
  }
  const stat = readStat(ref.pid);
  if (stat === undefined) return ref.startTicks === undefined;
  if (stat[0] === 'Z') return false;
  return ref.startTicks === undefined || Number(stat[19]) === ref.startTicks;
}

/**
 * Makes sure no other stack serves `dataDir`: throws when its recorded supervisor is alive; when it is dead,
 * waits for the Azurite and host processes it left (they stop by themselves when their supervisor vanishes)
 * and kills what is still there after `graceMs`.
 */
export async function claimDataDir(dataDir: string, say: (line: string) => void, graceMs = 60_000): Promise<void> {
  const old = readRuntime(dataDir);
  if (!old) return;
  if (isRunning(old.supervisor) && old.supervisor.pid !== process.pid) {
    throw new Error(
      `a local stack (supervisor pid ${old.supervisor.pid}) already serves ${dataDir} at ${old.baseUrl}; stop it first (Ctrl-C there, or kill -TERM ${old.supervisor.pid})`,
    );
  }
  const left = [
    { what: 'Azurite', ref: old.azurite },
    { what: 'Functions host worker', ref: old.host },
  ].filter((p) => isRunning(p.ref));
  if (left.length)
    say(
      `the previous stack on this folder did not stop cleanly; waiting for ${left.map((p) => `${p.what} (pid ${p.ref.pid})`).join(' and ')} to finish stopping`,
    );
  const deadline = Date.now() + graceMs;
  for (const p of left) {
    while (isRunning(p.ref) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    if (isRunning(p.ref)) {
      say(`${p.what} (pid ${p.ref.pid}) is still running after ${graceMs / 1000} s: killing it`);
      try {
        process.kill(p.ref.pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
  }
  removeRuntime(dataDir);
}

function startTicks(pid: number): number | undefined {
  const stat = readStat(pid);
  return stat ? Number(stat[19]) : undefined;
}

/** Fields of /proc/<pid>/stat from the state on (index 0 = state, 19 = starttime). */
function readStat(pid: number): string[] | undefined {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return text.slice(text.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}
