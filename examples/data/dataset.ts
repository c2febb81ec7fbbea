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

/** A record's value is (base + record × STEP) mod MODULUS: an arithmetic progression per file. */
const STEP = 104_729;
const HALF = 100_000_000; // 10^8: a value < 10^16 is kept as two halves so it never needs BigInt per record

function fileBase(seed: number, fileIndex: number): bigint {
  // A cheap deterministic mix; only reproducibility matters, not randomness quality.
  return (BigInt(seed) * 1_000_003n + BigInt(fileIndex) * 7_919_000_017n) % MODULUS;
}

/** The record's value as a BigInt (the reference definition; the fast paths below must agree with it). */
export function recordValue(seed: number, fileIndex: number, record: number): bigint {
  return (fileBase(seed, fileIndex) + BigInt(record) * BigInt(STEP)) % MODULUS;
}

/**
 * Writes `value` (0 <= value < 10^8) as 8 decimal digits at `off`. Plain arithmetic only: under jest modules run in a
 * vm context, where a global lookup such as `Math.floor` in this loop made it ~40 times slower.
 */
function writeDigits8(buf: Buffer, off: number, value: number): void {
  for (let i = 7; i >= 0; i--) {
    const digit = value % 10;
    buf[off + i] = 0x30 + digit;
    value = (value - digit) / 10;
  }
}

/**
 * The bytes of one file, built in one buffer (the largest demo file is ~100 MB). The values are produced by stepping
 * the progression in two 8-digit halves (numbers, not BigInt: 10^16 is beyond 2^53), which costs a few additions per
 * record instead of BigInt arithmetic and a string per record.
 */
export function fileContent(shape: DatasetShape, fileIndex: number, records: number): Buffer {
  const buf = Buffer.alloc(records * RECORD_BYTES, 0x2e /* '.' */);
  const base = fileBase(shape.seed, fileIndex);
  let hi = Number(base / BigInt(HALF));
  let lo = Number(base % BigInt(HALF));
  for (let r = 0; r < records; r++) {
    const off = r * RECORD_BYTES;
    writeDigits8(buf, off, hi);
    writeDigits8(buf, off + 8, lo);
    buf[off + RECORD_BYTES - 1] = 0x0a;
    lo += STEP;
    if (lo >= HALF) {
      lo -= HALF;
      hi = hi + 1 === HALF ? 0 : hi + 1;
    }
  }
  return buf;
}

/** Σ_{i=0}^{n-1} floor((a·i + b) / m) for n, m > 0 and a, b >= 0, in O(log) steps (the classic floor-sum). */
export function floorSum(n: bigint, m: bigint, a: bigint, b: bigint): bigint {
  let sum = 0n;
  for (;;) {
    if (a >= m) {
      sum += ((n * (n - 1n)) / 2n) * (a / m);
      a %= m;
    }
    if (b >= m) {
      sum += n * (b / m);
      b %= m;
    }
    const yMax = a * n + b;
    if (yMax < m) return sum;
    n = yMax / m;
    b = yMax % m;
    [m, a] = [a, m];
  }
}

/** Σ_{r<n} (base + r·STEP) mod MODULUS in closed form: the plain sum minus MODULUS once per wrap-around. */
function fileValueSum(base: bigint, records: number): bigint {
  const n = BigInt(records);
  if (n === 0n) return 0n;
  const step = BigInt(STEP);
  return n * base + (step * n * (n - 1n)) / 2n - MODULUS * floorSum(n, MODULUS, step, base);
}

export function expectedResult(shape: DatasetShape): ExpectedResult {
  const files = datasetFiles(shape);
  let sum = 0n;
  let records = 0;
  files.forEach((f, i) => {
    sum += fileValueSum(fileBase(shape.seed, i), f.records);
    records += f.records;
  });
  return { records, valueSum: (sum % 2n ** 64n).toString(), bytes: records * RECORD_BYTES, files: files.length };
}
