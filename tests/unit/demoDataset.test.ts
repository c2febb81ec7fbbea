import { datasetFiles, expectedResult, fileContent, floorSum, RECORD_BYTES, recordValue, shapeForSize, type DatasetShape } from '../../examples/data/dataset';

// The data set's bytes and expected sum are produced without BigInt per record (4.5 CPU-s per e2e file went
// into that). These tests pin them to the reference definition, computed here the slow way, record by record.
const MODULUS = 10n ** 16n;

function referenceValue(seed: number, fileIndex: number, record: number): bigint {
  return (BigInt(seed) * 1_000_003n + BigInt(fileIndex) * 7_919_000_017n + BigInt(record) * 104_729n) % MODULUS;
}

function referenceContent(seed: number, fileIndex: number, records: number): Buffer {
  const buf = Buffer.alloc(records * RECORD_BYTES, 0x2e);
  for (let r = 0; r < records; r++) {
    buf.write(referenceValue(seed, fileIndex, r).toString().padStart(16, '0'), r * RECORD_BYTES, 'latin1');
    buf[r * RECORD_BYTES + RECORD_BYTES - 1] = 0x0a;
  }
  return buf;
}

function referenceSum(shape: DatasetShape): string {
  let sum = 0n;
  datasetFiles(shape).forEach((f, i) => {
    for (let r = 0; r < f.records; r++) sum += referenceValue(shape.seed, i, r);
  });
  return (sum % 2n ** 64n).toString();
}

/** A seed whose values are near 9 × 10^15. */
const HIGH_SEED = Number((9n * 10n ** 15n) / 1_000_003n);

/** A seed whose file 0 starts a few steps below 10^16, so its progression wraps (both 8-digit halves roll over). */
const WRAP_SEED = Number((MODULUS - 40n * 104_729n) / 1_000_003n);

describe('demo data set without BigInt per record', () => {
  it('the wrapping seed does wrap within the first records', () => {
    expect(referenceValue(WRAP_SEED, 0, 0)).toBeGreaterThan(MODULUS - 50n * 104_729n);
    expect(referenceValue(WRAP_SEED, 0, 60)).toBeLessThan(100n * 104_729n);
  });

  it.each([
    [7, 0, 5000],
    [7, 3, 2000],
    [WRAP_SEED, 0, 200],
    [WRAP_SEED, 1, 200],
    [0, 0, 10],
  ])('file bytes equal the reference (seed %d, file %d, %d records)', (seed, fileIndex, records) => {
    const shape: DatasetShape = { seed, largeFiles: [], smallFiles: { count: 0, records: 0 } };
    expect(fileContent(shape, fileIndex, records).equals(referenceContent(seed, fileIndex, records))).toBe(true);
  });

  it('recordValue is the reference definition', () => {
    for (const [s, f, r] of [
      [7, 2, 123456],
      [WRAP_SEED, 0, 45],
      [1, 0, 0],
    ])
      expect(recordValue(s, f, r)).toBe(referenceValue(s, f, r));
  });

  it.each([
    ['a 2 MB demo set', shapeForSize(2)],
    ['a wrapping set', { seed: WRAP_SEED, largeFiles: [300, 7], smallFiles: { count: 3, records: 50 } }],
    ['empty files', { seed: 5, largeFiles: [0, 1], smallFiles: { count: 2, records: 0 } }],
  ])('the expected sum equals the record-by-record sum (%s)', (_name, shape) => {
    const r = expectedResult(shape);
    expect(r.valueSum).toBe(referenceSum(shape));
    const files = datasetFiles(shape);
    expect(r.records).toBe(files.reduce((n, f) => n + f.records, 0));
    expect(r.files).toBe(files.length);
  });

  it('a sum beyond 2^64 wraps modulo 2^64 like the MPI program', () => {
    // Values near 9e15: 2 × 3000 of them sum to ~5.4e19, beyond 2^64 (1.8e19), so the modulo is exercised.
    const shape = { seed: HIGH_SEED, largeFiles: [3000, 3000], smallFiles: { count: 0, records: 0 } };
    const total = datasetFiles(shape).reduce((sum, f, i) => sum + BigInt(f.records) * referenceValue(HIGH_SEED, i, 0), 0n);
    expect(total).toBeGreaterThan(2n ** 64n);
    expect(expectedResult(shape).valueSum).toBe(referenceSum(shape));
  });

  it('floorSum equals the brute-force sum', () => {
    for (const [n, m, a, b] of [
      [1n, 1n, 0n, 0n],
      [10n, 7n, 3n, 5n],
      [1000n, 97n, 1234n, 99999n],
      [37n, 10n ** 6n, 104_729n, 999_999n],
    ]) {
      let brute = 0n;
      for (let i = 0n; i < n; i++) brute += (a * i + b) / m;
      expect(floorSum(n, m, a, b)).toBe(brute);
    }
  });
});
