/** docs/workloads.md shows the MPI preset table and the retired VM sizes the code uses. */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { renderPresetTable, renderWorkloadsDoc } from '../../shared/mpi/presetTable';

const docPath = path.join(__dirname, '../../docs/workloads.md');

test('the generated tables of docs/workloads.md are current (regenerate: node --import tsx shared/mpi/presetTable.ts --write docs/workloads.md)', () => {
  const doc = readFileSync(docPath, 'utf8');
  expect(renderWorkloadsDoc(doc)).toBe(doc);
});

test('the preset table has a row per runtime generation, with its fabric settings', () => {
  const table = renderPresetTable();
  for (const row of ['Intel MPI 2017–2018', 'Intel MPI 2019+', 'Open MPI 4.x, HPC-X', 'Open MPI 5.x', 'MPICH 3.x', 'MPICH 4.x', 'MVAPICH2 2.x']) expect(table).toContain(`| ${row}`);
  expect(table).toContain('`I_MPI_FABRICS=shm:ofa`');
  expect(table).toContain('`--mca osc ucx`');
});

test('every example under examples/workloads is listed in docs/workloads.md', () => {
  const doc = readFileSync(docPath, 'utf8');
  const { readdirSync } = require('node:fs') as typeof import('node:fs');
  for (const f of readdirSync(path.join(__dirname, '../../examples/workloads')).filter((x) => x.endsWith('.yaml'))) expect(doc).toContain(`\`${f}\``);
});
