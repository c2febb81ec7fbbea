import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { killGroup, killPid } from './processes';

/**
 * Ends the processes an earlier emulator run left on its nodes. stop() kills every task and container
 * process, but an emulator that was itself killed (SIGKILL, a crash) could not: its tasks run on in their
 * own process groups. A restarted emulator ends them before it takes the account back, since a rebooted
 * node keeps none of its old processes, and a requeued task must not run twice at once.
 *
 * A process is the account's when its environment names a node root under `<dataDir>/nodes/` (every task,
 * start, preparation and release process, and what mpirun's ssh launcher starts) or its working directory
 * is there (container processes). pids are recycled, so nothing else is ever matched. Linux only (/proc).
 * Returns the pids it killed.
 */
export function killLeftoverNodeProcesses(dataDir: string): number[] {
  const roots = [...new Set([path.resolve(dataDir), realpathOrSelf(dataDir)])].map((d) => path.join(d, 'nodes') + path.sep);
  const ownGroup = groupOf('self');
  const killed: number[] = [];
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return killed;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    if (!runsUnder(entry, roots)) continue;
    const pid = Number(entry);
    const group = groupOf(entry);
    if (group !== undefined && group !== ownGroup) killGroup(group);
    killPid(pid);
    killed.push(pid);
  }
  return killed;
}

/**
 * Whether a process runs on a node whose root is under one of `roots` (each ending with a path separator): its
 * environment names such a node root, or (container processes, whose environment may be the image's) its working
 * directory is there.
 */
export function runsUnder(pid: string | number, roots: string[]): boolean {
  try {
    for (const v of readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')) {
      if (v.startsWith('AZ_BATCH_NODE_ROOT_DIR=') && roots.some((r) => (v.slice('AZ_BATCH_NODE_ROOT_DIR='.length) + path.sep).startsWith(r))) return true;
    }
  } catch {
    // gone, or not ours to read: fall through to the working directory
  }
  try {
    const cwd = readlinkSync(`/proc/${pid}/cwd`).replace(/ \(deleted\)$/, '') + path.sep;
    return roots.some((r) => cwd.startsWith(r));
  } catch {
    return false;
  }
}

/** The process group id (field 5 of /proc/<pid>/stat, after the parenthesised command name). */
function groupOf(pid: string): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pgid = Number(fields[2]);
    return Number.isInteger(pgid) && pgid > 1 ? pgid : undefined;
  } catch {
    return undefined;
  }
}

function realpathOrSelf(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}
