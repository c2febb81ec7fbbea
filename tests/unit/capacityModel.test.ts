/**
 * The capacity model's pure parts (bench/lib/capacity): the event queue's order, and the job model's invariants over
 * the real planners. No timing: every figure here is simulated time.
 */
import fc from 'fast-check';
import { EventQueue, runEvents } from '../../bench/lib/capacity/eventQueue';
import { bytesPerNode, simulateJob, type JobInputs } from '../../bench/lib/capacity/jobModel';
import { seeded } from '../../bench/lib/capacity/dayModel';
import { CONSERVATIVE_ACCOUNT_LIMITS } from '../../shared/core/planning/stagingModel';

const MiB = 1024 * 1024;
const base: JobInputs = {
  nodes: 12,
  inputBytes: 300_000_000,
  inputFileBytes: 3_000_000,
  imageBytes: 8 * MiB,
  intakeS: 0.2,
  allocationFirstS: 20,
  allocationLastS: 21,
  poll: { baseMs: 500, maxMs: 2000, factor: 2 },
  registryBps: 16 * MiB,
  perPullBps: 1e12,
  pullOverheadS: 0.8,
  peerBps: 4 * MiB,
  peerOverheadS: 2.5,
  copyOverheadS: 0,
  stagingAccounts: 4,
  accountLimits: CONSERVATIVE_ACCOUNT_LIMITS,
  nodeBps: 100 * MiB,
  downloadOverheadS: 0.5,
  preflightS: 5,
  mpiStartS: 0.3,
  pullConcurrency: 10,
};

describe('EventQueue', () => {
  it('pops by time, and events at the same time in the order they were pushed', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (times) => {
        const q = new EventQueue<number>();
        times.forEach((t, i) => q.push(t, i));
        const out: [number, number][] = [];
        runEvents(q, (at, i) => out.push([at, i]));
        const expected = times.map((t, i) => [t, i] as [number, number]).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
        expect(out).toEqual(expected);
      }),
    );
  });

  it('refuses an event in the past and a non-finite time', () => {
    const q = new EventQueue<string>();
    q.push(5, 'a');
    q.pop();
    expect(() => q.push(4, 'b')).toThrow(/before now/);
    expect(() => q.push(Number.NaN, 'c')).toThrow(/finite/);
  });

  it('handlers may schedule more events; a run that never settles stops with an error', () => {
    const q = new EventQueue<number>();
    q.push(0, 0);
    const seen: number[] = [];
    runEvents(q, (at, n) => {
      seen.push(n);
      if (n < 3) q.push(at + 1, n + 1);
    });
    expect(seen).toEqual([0, 1, 2, 3]);
    const forever = new EventQueue<number>();
    forever.push(0, 0);
    expect(() => runEvents(forever, (at) => forever.push(at + 1, 0), 100)).toThrow(/did not settle/);
  });
});

describe('seeded', () => {
  it('gives the same sequence for the same seed, within [0, 1)', () => {
    const a = seeded(30);
    const b = seeded(30);
    for (let i = 0; i < 100; i++) {
      const x = a();
      expect(x).toBe(b());
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
    }
  });
});

describe('simulateJob', () => {
  const designs = [
    { staging: 'sequential', distribution: 'window' },
    { staging: 'sequential', distribution: 'tree' },
    { staging: 'overlapped', distribution: 'window' },
    { staging: 'overlapped', distribution: 'tree' },
  ] as const;

  it('idle is never negative and MPI starts after every node was allocated, whatever the shape', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 2_000_000_000 }),
        fc.double({ min: 0, max: 600, noNaN: true }),
        fc.constantFrom(...designs),
        (nodes, inputBytes, allocation, design) => {
          const f = simulateJob(
            { ...base, nodes, inputBytes, inputFileBytes: 50_000_000, allocationFirstS: allocation, allocationLastS: allocation * 1.5 },
            design,
          );
          expect(f.idleNodeMinutes).toBeGreaterThanOrEqual(0);
          // Sums of floating-point seconds: equal up to rounding.
          expect(f.submitToMpiS).toBeGreaterThanOrEqual(base.intakeS + allocation * 1.5 - 1e-6);
          expect(f.phases.preflight.start).toBeGreaterThanOrEqual(f.phases.images.end);
          if (inputBytes > 0) expect(f.phases.preflight.start).toBeGreaterThanOrEqual(f.phases.downloads.end);
        },
      ),
      { numRuns: 40, seed: 20261127 },
    );
  });

  it('window(10) pulls once per node from the registry: more nodes never serve fewer registry bytes', () => {
    let last = 0;
    for (const nodes of [1, 5, 10, 11, 25, 40, 100]) {
      const f = simulateJob({ ...base, nodes }, { staging: 'sequential', distribution: 'window' });
      expect(f.registryPulls).toBe(nodes);
      expect(f.registryBytes).toBeGreaterThanOrEqual(last);
      last = f.registryBytes;
    }
  });

  it('the tree pulls at most the window from the registry and copies the rest from peers', () => {
    for (const nodes of [4, 10, 40, 100]) {
      const f = simulateJob({ ...base, nodes }, { staging: 'sequential', distribution: 'tree' });
      expect(f.registryPulls).toBe(Math.min(nodes, 10));
      expect(f.peerCopies).toBe(nodes - Math.min(nodes, 10));
    }
  });

  it('overlapping the copy with allocation never makes MPI start later or the idle larger than the sequence', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.double({ min: 1, max: 600, noNaN: true }),
        fc.constantFrom('window', 'tree'),
        (nodes, allocation, distribution) => {
          const i = { ...base, nodes, allocationFirstS: allocation, allocationLastS: allocation };
          const seq = simulateJob(i, { staging: 'sequential', distribution });
          const ovl = simulateJob(i, { staging: 'overlapped', distribution });
          // Within one poll interval: the two runs observe on different poll phases.
          expect(ovl.submitToMpiS).toBeLessThanOrEqual(seq.submitToMpiS + base.poll.maxMs / 1000);
          expect(ovl.idleNodeMinutes).toBeLessThanOrEqual(seq.idleNodeMinutes + (nodes * base.poll.maxMs) / 60_000);
        },
      ),
      { numRuns: 30, seed: 20261127 },
    );
  });

  it('refuses inputs that are not finite and positive where they must be', () => {
    expect(() => simulateJob({ ...base, nodes: 0 }, designs[0])).toThrow(/nodes/);
    expect(() => simulateJob({ ...base, registryBps: Number.NaN }, designs[0])).toThrow(/registryBps/);
    expect(() => simulateJob({ ...base, preflightS: -1 }, designs[0])).toThrow(/preflightS/);
    expect(() => simulateJob({ ...base, allocationFirstS: 5, allocationLastS: 4 }, designs[0])).toThrow(/allocationLastS/);
  });
});

describe('bytesPerNode', () => {
  it('places every input byte on exactly one node (the real shard plan)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 3_000_000_000 }), (nodes, inputBytes) => {
        const fileBytes = 200_000_000;
        const per = bytesPerNode({ nodes, inputBytes, inputFileBytes: fileBytes, stagingAccounts: 4 });
        const files = Math.max(1, Math.round(inputBytes / fileBytes));
        expect(per).toHaveLength(nodes);
        expect(per.reduce((s, x) => s + x, 0)).toBe(Math.floor(inputBytes / files) * files);
      }),
      { numRuns: 30, seed: 20261127 },
    );
  });
});
