/**
 * Sums a TEST_CPU_LOG (tests/helpers/cpuPerFile.ts): each file's CPU seconds, largest first, and the total, which on
 * this CPU-bound suite is about twice its wall time on 2 workers. Usage: node --import tsx scripts/testCpuReport.ts <log> [top]
 */
import { readFileSync } from 'node:fs';

interface Line {
  file: string;
  cpuSeconds: number;
  tail?: boolean;
}

const [logPath, topArg] = process.argv.slice(2);
if (!logPath) throw new Error('usage: testCpuReport.ts <TEST_CPU_LOG file> [top]');
const byFile = new Map<string, Line>();
/** What each file left running in its jest worker (tests/helpers/leftRunningEnvironment.cjs). */
const leftRunning = new Map<string, string[]>();
for (const text of readFileSync(logPath, 'utf8').split('\n')) {
  if (!text.trim()) continue;
  const parsed = JSON.parse(text) as Line | { file: string; leftRunning: string[] };
  if ('leftRunning' in parsed) {
    leftRunning.set(parsed.file, parsed.leftRunning);
    continue;
  }
  const line = parsed;
  // A full count (to the next file's start) replaces the provisional one taken at the file's own afterAll.
  const seen = byFile.get(line.file);
  if (!seen || seen.tail) byFile.set(line.file, line);
}
const rows = [...byFile.values()].sort((a, b) => b.cpuSeconds - a.cpuSeconds);
const total = rows.reduce((sum, r) => sum + r.cpuSeconds, 0);
for (const r of rows.slice(0, Number(topArg ?? 30))) console.log(`${r.cpuSeconds.toFixed(1).padStart(8)}  ${r.file}${r.tail ? ' (to its afterAll)' : ''}`);
console.log(`${total.toFixed(1).padStart(8)}  total CPU seconds over ${rows.length} files`);
if (leftRunning.size > 0) console.log(`\nleft running in the jest worker after the file's last hook:`);
for (const [file, handles] of leftRunning) console.log(`  ${file}: ${handles.join('; ')}`);
