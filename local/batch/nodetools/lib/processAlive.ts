import { readFileSync } from 'node:fs';

/**
 * Whether a process is running. `kill(pid, 0)` also succeeds for a zombie (dead, not yet reaped), and a
 * detached container supervisor that was killed is reaped by PID 1, which in some sandboxes never does it.
 * A zombie runs nothing: it counts as gone.
 */
export function processAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat[stat.lastIndexOf(')') + 2] !== 'Z';
  } catch {
    return true; // no /proc (not Linux): trust kill(0)
  }
}
