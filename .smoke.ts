import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { importShipyard } from './cli/import/shipyard/importShipyard';
const dir = process.argv[2];
const f = (n: string) => existsSync(join(dir, n)) ? { name: n, text: readFileSync(join(dir, n), 'utf8') } : undefined;
const r = importShipyard({ pool: f('pool.yaml')!, jobs: f('jobs.yaml')!, config: f('config.yaml') });
console.log(JSON.stringify({ problems: r.problems, summary: r.summary, outcome: r.outcome }, null, 1));
for (const e of r.entries) console.log(`${e.status.padEnd(12)} ${e.file}:${e.line ?? '-'} ${e.path} -> ${e.target ?? ''} :: ${e.note}`);
for (const s of r.specs) { console.log('----', s.file, JSON.stringify(s.errors)); console.log(s.yaml); }
