/**
 * Each test file's CPU seconds, opt-in: `TEST_CPU_LOG=/tmp/cpu.jsonl npm test` appends one JSON line per file.
 *
 * The suite is CPU-bound on 2 cores (its wall time is about its CPU / 2), so a file's cost is its CPU, not its wall
 * time, which depends on what the other worker runs beside it. A file's CPU is read from /proc/self/stat: the jest
 * worker's own time plus the time of its children once reaped (Azurite, the emulator's node processes, MPI ranks), so
 * it is counted from one file's start to the next file's start in the same worker, after the file's afterAll has
 * stopped its stack and reaped its processes. The last file of a worker is counted to its own afterAll instead
 * (`tail: true`), which can miss part of its stack's stop.
 */
import { appendFileSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

const LOG = process.env.TEST_CPU_LOG;
const TESTS_ROOT = path.resolve(__dirname, '..');
/** Clock ticks per second of /proc's times (USER_HZ, 100 on Linux). */
const USER_HZ = 100;

/** utime + stime + cutime + cstime of this process, in ticks (proc(5): fields 14-17, after the command's ')'). */
function cpuTicks(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0);
}

interface Open {
  file: string;
  ticks: number;
  /** Wall clock at the file's start (epoch ms): with `endMs`, when each file ran, to line up with the cores' idle time. */
  startMs: number;
}

function record(open: Open, ticks: number, tail: boolean): void {
  const line = { file: open.file, cpuSeconds: ticks / USER_HZ, startMs: open.startMs, endMs: Date.now(), worker: process.pid, ...(tail ? { tail } : {}) };
  appendFileSync(LOG as string, JSON.stringify(line) + '\n');
}

if (LOG && existsSync('/proc/self/stat')) {
  // One state file per worker process: the module registry is fresh in every test file, the process is not.
  const stateFile = path.join(tmpdir(), `jest-cpu-${process.pid}.json`);
  const file = path
    .relative(TESTS_ROOT, expect.getState().testPath ?? 'unknown')
    .split(path.sep)
    .join('/');
  beforeAll(() => {
    const now = cpuTicks();
    if (existsSync(stateFile)) {
      const open = JSON.parse(readFileSync(stateFile, 'utf8')) as Open;
      record(open, now - open.ticks, false);
      rmSync(stateFile);
    }
    writeFileSync(stateFile, JSON.stringify({ file, ticks: now, startMs: Date.now() } satisfies Open));
  });
  afterAll(() => {
    // Provisional: replaced by the full count when this worker starts another file (reports keep the last line).
    const open = JSON.parse(readFileSync(stateFile, 'utf8')) as Open;
    record(open, cpuTicks() - open.ticks, true);
  });
}
