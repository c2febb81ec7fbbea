/** docs/job-spec.md must show the current schema and the committed examples. */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { renderDocs, renderFieldTable } from '../../scripts/docs/specFieldTable';
import { LIMITS } from '../../shared/core/spec';

const docPath = path.join(__dirname, '../../docs/job-spec.md');
const examplesDir = path.join(__dirname, '../../examples/jobs');

test('the generated parts of docs/job-spec.md are current (regenerate: node --import tsx scripts/docs/specFieldTable.ts --write docs/job-spec.md)', () => {
  const doc = readFileSync(docPath, 'utf8');
  expect(renderDocs(doc, examplesDir)).toBe(doc);
});

test('the field table covers every section and key limit', () => {
  const table = renderFieldTable();
  for (const field of [
    '`id`',
    '`name`',
    '`tags`',
    '`pool.nodes`',
    '`pool.lowPriorityNodes`',
    '`container.pullConcurrency`',
    '`container.registry.identity`',
    '`data.shardSizeMB`',
    '`data.inputs[].prefix`',
    '`mpi.processesPerNode`',
    '`mpi.env`',
    '`mpi.sshPort`',
    '`limits.maxWallClock`',
    '`cleanup.deletePool`',
    '`cleanup.keepStagedData`',
  ]) {
    expect(table).toContain(`| ${field} |`);
  }
  expect(table).toMatch(new RegExp(`\\| \`pool.nodes\` \\| integer \\| yes \\|  \\| ≥ 1; ≤ ${LIMITS.maxNodes} \\|`));
  expect(table).toContain('| `container.pullConcurrency` | integer |  | `10` |');
});
