/**
 * The demo's input data set: files of fixed 64-byte records (16 digits, 47 filler characters, '\n'),
 * generated deterministically from a seed so the expected MPI result is known without reading anything back.
 * The mix of a few large files (which the shard planner must split at record boundaries) and many small
 * ones (which it must pack together) makes shard planning real.
 */
export const RECORD_BYTES = 64;

export interface DatasetShape {
  seed: number;
  /** Sizes of the large files, in records. */
  largeFiles: number[];
  /** Number and size (records) of the small files. */
  smallFiles: { count: number; records: number };
}

export interface DatasetFile {
  name: string;
  records: number;
}

export interface ExpectedResult {
  records: number;
  /** Sum of every record's value modulo 2^64 (the MPI program sums in uint64), as a decimal string. */
  valueSum: string;
  bytes: number;
  files: number;
}

const MODULUS = 10n ** 16n;

/** About `megabytes` MB of input, two thirds in two large files and the rest in 1 MB files. */
export function shapeForSize(megabytes: number, seed = 7): DatasetShape {
  const totalRecords = Math.floor((megabytes * 1_000_000) / RECORD_BYTES);
  const large = Math.floor((totalRecords * 2) / 3 / 2);
  const smallRecords = Math.floor(1_000_000 / RECORD_BYTES);
  const smallCount = Math.max(1, Math.floor((totalRecords - 2 * large) / smallRecords));
  return { seed, largeFiles: [large, large], smallFiles: { count: smallCount, records: smallRecords } };
}

export function datasetFiles(shape: DatasetShape): DatasetFile[] {
  const files: DatasetFile[] = shape.largeFiles.map((records, i) => ({ name: `large/part-${i}.rec`, records }));
  for (let i = 0; i < shape.smallFiles.count; i++) {
    files.push({ name: `small/obs-${String(i).padStart(4, '0')}.rec`, records: shape.smallFiles.records });
  }
  return files;
}

function recordValue(seed: number, fileIndex: number, record: number): bigint {
  // A cheap deterministic mix; only reproducibility matters, not randomness quality.
  return (BigInt(seed) * 1_000_003n + BigInt(fileIndex) * 7_919_000_017n + BigInt(record) * 104_729n) % MODULUS;
}

/** The bytes of one file, built in one buffer (the largest demo file is ~100 MB). */
export function fileContent(shape: DatasetShape, fileIndex: number, records: number): Buffer {
  const buf = Buffer.alloc(records * RECORD_BYTES, 0x2e /* '.' */);
  for (let r = 0; r < records; r++) {
    const off = r * RECORD_BYTES;
    buf.write(recordValue(shape.seed, fileIndex, r).toString().padStart(16, '0'), off, 'latin1');
    buf[off + RECORD_BYTES - 1] = 0x0a;
  }
  return buf;
}

export function expectedResult(shape: DatasetShape): ExpectedResult {
  const files = datasetFiles(shape);
  let sum = 0n;
  let records = 0;
  files.forEach((f, i) => {
    for (let r = 0; r < f.records; r++) sum += recordValue(shape.seed, i, r);
    records += f.records;
  });
  return { records, valueSum: (sum % 2n ** 64n).toString(), bytes: records * RECORD_BYTES, files: files.length };
}
