/** docs/workloads.md shows the MPI preset table and the retired VM sizes the code uses. */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { renderPresetTable, renderWorkloadsDoc } from '../../scripts/docs/mpiPresetTable';

const docPath = path.join(__dirname, '../../docs/workloads.md');

test('the generated tables of docs/workloads.md are current (regenerate: node --import tsx scripts/docs/mpiPresetTable.ts --write docs/workloads.md)', () => {
  const doc = readFileSync(docPath, 'utf8');
  expect(renderWorkloadsDoc(doc)).toBe(doc);
});

test('the preset table has a row per runtime generation, with its fabric settings', () => {
  const table = renderPresetTable();
  for (const row of ['Intel MPI 2017–2018', 'Intel MPI 2019+', 'Open MPI 4.x, HPC-X', 'Open MPI 5.x', 'MPICH 3.x', 'MPICH 4.x', 'MVAPICH2 2.x'])
    expect(table).toContain(`| ${row}`);
  expect(table).toContain('`I_MPI_FABRICS=shm:ofa`');
  expect(table).toContain('`--mca osc ucx`');
});

test('every example under examples/workloads is listed in docs/workloads.md', () => {
  const doc = readFileSync(docPath, 'utf8');
  const { readdirSync } = require('node:fs') as typeof import('node:fs');
  for (const f of readdirSync(path.join(__dirname, '../../examples/workloads')).filter((x) => x.endsWith('.yaml'))) expect(doc).toContain(`\`${f}\``);
});

test('the examples table says which run locally, truthfully: each "yes" is run by the e2e test it names, each "no" is marked Azure only in its comment', () => {
  const doc = readFileSync(docPath, 'utf8');
  const { readdirSync } = require('node:fs') as typeof import('node:fs');
  const dir = path.join(__dirname, '../../examples/workloads');
  // The examples table: the rows of four columns that start with an example file.
  const rows = doc
    .split('\n')
    .filter((l) => /^\| `[^`]+\.yaml` \|/.test(l) && l.split(' | ').length === 4)
    .map((l) => {
      const cells = l.split(' | ');
      return { file: /`([^`]+\.yaml)`/.exec(cells[0])?.[1] as string, local: cells[cells.length - 1] };
    });
  expect(rows.map((r) => r.file).sort()).toEqual(
    readdirSync(dir)
      .filter((x) => x.endsWith('.yaml'))
      .sort(),
  );
  const local = rows.filter((r) => r.local.startsWith('yes'));
  expect(local.length).toBeGreaterThanOrEqual(12);
  for (const r of local) {
    const test = /`((?:workloads(?:Data)?|network\w*|secrets)\.test\.ts)`/.exec(r.local)?.[1];
    expect({ file: r.file, test }).toEqual({ file: r.file, test: expect.any(String) });
    expect(readFileSync(path.join(__dirname, '../e2e', test as string), 'utf8')).toContain(r.file);
    expect(readFileSync(path.join(dir, r.file), 'utf8')).not.toMatch(/^# Azure only:/m);
  }
  for (const r of rows.filter((x) => x.local.startsWith('no')))
    expect({ file: r.file, comment: readFileSync(path.join(dir, r.file), 'utf8') }).toEqual({
      file: r.file,
      comment: expect.stringMatching(/^# Azure only: \S/m),
    });
});
