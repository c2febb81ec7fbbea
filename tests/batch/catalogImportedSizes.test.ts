/**
 * The emulator's size catalog against the sizes `hpcjob import shipyard` keeps: Batch Shipyard's MPI recipes run on
 * STANDARD_D1_V2/D2_V2/D3_V2, which Azure still offers (previous generation, retirement dated 2028), so the
 * emulator must accept them as Batch does, case-insensitively; a retired size is mapped to its successor by the
 * importer and that successor must be in the catalog too. Before the Dv2 series was added, the imported
 * CPU recipes were refused at pool creation by the emulator only.
 */
import * as path from 'node:path';
import { catalogSize } from '../../local/batch/model/catalog';
import { defaultRecipesDir, importCorpus } from '../../cli/import/shipyard/recipeTable';

test('Dv2 sizes are in the catalog with their family, vCPUs and memory', () => {
  expect(catalogSize('STANDARD_D1_V2')).toMatchObject({ name: 'Standard_D1_v2', family: 'standardDv2Family', vCPUs: 1, memoryGiB: 3.5, rdma: false, gpus: 0 });
  expect(catalogSize('Standard_D2_v2')).toMatchObject({ vCPUs: 2, memoryGiB: 7 });
  expect(catalogSize('standard_d3_v2')).toMatchObject({ vCPUs: 4, memoryGiB: 14 });
});

test('every general-purpose (D-series) VM size an imported recipe keeps is one the emulator offers', () => {
  const corpus = importCorpus(defaultRecipesDir(path.join(__dirname, '..', '..')));
  const sizes = new Set<string>();
  for (const { result } of corpus) for (const s of result.specs) sizes.add(String((s.spec.pool as { vmSize?: string } | undefined)?.vmSize));
  const d = [...sizes].filter((s) => /^standard_d\d/i.test(s));
  expect(d.sort()).toEqual(['STANDARD_D1_V2', 'STANDARD_D2_V2', 'STANDARD_D3_V2']);
  expect(d.filter((s) => !catalogSize(s))).toEqual([]);
});
