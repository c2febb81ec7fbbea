/**
 * The layering rules of .dependency-cruiser.cjs (run by `npm run lint`): the real tree passes them, and a fixture
 * tree with a back-import, a planner doing I/O and a type-only cycle fails each named rule, so the rules can fail.
 * dependency-cruiser runs as a child process, as lint runs it (~10 s each on 2 cores).
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const CONFIG = path.join(ROOT, '.dependency-cruiser.cjs');
const DEPCRUISE = path.join(ROOT, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

function cruise(cwd: string, folders: string[]): Violation[] {
  const r = spawnSync(process.execPath, [DEPCRUISE, '--config', CONFIG, '--output-type', 'json', ...folders], {
    cwd,
    encoding: 'utf8',
    maxBuffer: 256 * 1024 * 1024,
  });
  if (r.error) throw r.error;
  const out = JSON.parse(r.stdout) as { summary: { violations: Violation[] } };
  return out.summary.violations;
}

test('the source tree keeps its layers (no cycle, no back-import, no I/O in the pure core)', () => {
  const violations = cruise(ROOT, ['shared', 'functions', 'orchestrations', 'cli', 'local', 'web/src', 'bench', 'scripts']);
  expect(violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)).toEqual([]);
}, 120_000);

test('a back-import, a planner calling an adapter and a type-only cycle each fail their rule', () => {
  const fixture = path.join(ROOT, 'tests', 'fixtures', 'layering');
  const found = cruise(fixture, ['shared', 'functions'])
    .map((v) => `${v.rule.name}: ${v.from} → ${v.to}`)
    .sort();
  // dependency-cruiser reports a cycle once, at the module it meets first.
  const cycles = found.filter((v) => v.startsWith('no-circular: '));
  expect(cycles).toHaveLength(1);
  expect(cycles[0]).toMatch(/^no-circular: shared\/core\/planning\/cycle[AB]\.ts → shared\/core\/planning\/cycle[AB]\.ts$/);
  expect(found.filter((v) => !v.startsWith('no-circular: '))).toEqual([
    'pure-core-does-no-io: shared/core/planning/ioInCore.ts → shared/adapters/batch/client.ts',
    'shared-imports-nothing-above: shared/core/planning/backImport.ts → functions/trigger.ts',
  ]);
}, 120_000);
