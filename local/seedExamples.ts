/**
 * What the committed examples read, put where they name it: `npm start` runs this once the stack is up, so every
 * example docs/workloads.md marks "runs locally" (and examples/jobs/native-openmpi.yaml) runs as written. The blobs go
 * to the local data account's shared read-only areas the examples name (LOCAL_SHARED_AREAS: `software`, `cases`,
 * `inputs/demo/`), written by the operator (the stack's admin). Idempotent: a blob that already has the file's MD5 is
 * left alone, so a restart uploads nothing and a changed source is uploaded again.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { BlobServiceClient } from '@azure/storage-blob';
import { shapeForSize } from '../examples/data/dataset';
import { uploadDataset } from '../examples/data/upload';

export interface ExampleSeed {
  container: string;
  blob: string;
  /** The file, relative to the repository root. */
  file: string;
}

const MPI_SOURCES = ['shardsum.c', 'osu_pingpong.c', 'hpl_lu.c', 'hpcg_cg.c', 'heat1d.c', 'mpibench.c', 'ranks.c', 'scratchio.c'];
const WORKLOAD_FILES = ['mklvars.sh', 'run-solver.sh', 'HPL.dat', 'hpcg.dat', 'set_up_sample.sh', 'solver.pbs', 'solver.slurm'];
const HEAT1D_CASE = ['system/controlDict', '0/T'];

/** Every blob the examples name, and the file it comes from. */
export const EXAMPLE_SEEDS: readonly ExampleSeed[] = [
  ...MPI_SOURCES.map((f) => ({ container: 'software', blob: f, file: path.join('examples', 'mpi', f) })),
  ...WORKLOAD_FILES.map((f) => ({ container: 'software', blob: f, file: path.join('examples', 'workloads', 'files', f) })),
  ...HEAT1D_CASE.map((f) => ({ container: 'cases', blob: `heat1d/${f}`, file: path.join('examples', 'workloads', 'heat1d-case', ...f.split('/')) })),
];

/** The input data set examples/jobs/native-openmpi.yaml reads (inputs/demo/): small, the demo (`npm run demo`) grows it. */
export const EXAMPLE_DATASET_MB = 20;

export interface SeedReport {
  uploaded: string[];
  unchanged: number;
}

export async function seedExamples(data: BlobServiceClient, repoRoot: string): Promise<SeedReport> {
  const report: SeedReport = { uploaded: [], unchanged: 0 };
  const containers = new Set<string>();
  for (const seed of EXAMPLE_SEEDS) {
    const cc = data.getContainerClient(seed.container);
    if (!containers.has(seed.container)) {
      await cc.createIfNotExists();
      containers.add(seed.container);
    }
    const content = readFileSync(path.join(repoRoot, seed.file));
    const md5 = createHash('md5').update(content).digest();
    const blob = cc.getBlockBlobClient(seed.blob);
    const existing = await blob.getProperties().catch(() => undefined);
    if (existing?.contentMD5 && Buffer.from(existing.contentMD5).equals(md5)) {
      report.unchanged += 1;
      continue;
    }
    await blob.uploadData(content, { blobHTTPHeaders: { blobContentMD5: md5 } });
    report.uploaded.push(`${seed.container}/${seed.blob}`);
  }
  // The demo's data set under inputs/demo/ (the demo uploads its own size over it; files already there are kept).
  const demoFirstFile = data.getContainerClient('inputs').getBlobClient('demo/large/part-0.rec');
  if (!(await demoFirstFile.exists().catch(() => false))) {
    await uploadDataset(data, 'inputs', 'demo/', shapeForSize(EXAMPLE_DATASET_MB));
    report.uploaded.push('inputs/demo/');
  }
  return report;
}
