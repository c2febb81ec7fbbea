/** The control plane's own cost per job: pure arithmetic over the dated prices (shared/core/ops/controlPlaneCost.ts). */
import fc from 'fast-check';
import { controlPlaneCost, estimateControlPlaneUsage, DEFAULT_USAGE_COEFFICIENTS } from '../../shared/core/ops/controlPlaneCost';
import { CONTROL_PLANE_PRICES, type ControlPlanePrices } from '../../shared/core/ops/controlPlanePrices';

const zero = { cpuSeconds: 0, executions: 0, storage: { table: 0, queue: 0, blobWrite: 0, blobRead: 0 } };

describe('controlPlaneCost', () => {
  it('prices each part by its own rate', () => {
    const prices: ControlPlanePrices = {
      ...CONTROL_PLANE_PRICES,
      flexOnDemandPerGbSecond: 1,
      flexOnDemandPerExecution: 10,
      flexInstanceMemoryGb: 2,
      storagePerTransaction: { table: 100, queue: 1_000, blobWrite: 10_000, blobRead: 100_000 },
    };
    const c = controlPlaneCost({ cpuSeconds: 3, executions: 2, storage: { table: 1, queue: 1, blobWrite: 1, blobRead: 1 } }, prices);
    expect(c.compute).toBe(6);
    expect(c.executions).toBe(20);
    expect(c.storage).toBe(111_100);
    expect(c.total).toBe(111_126);
  });

  it('carries the date and source of the prices, and says they are the dated fallback', () => {
    const c = controlPlaneCost(zero);
    expect(c.total).toBe(0);
    expect(c.asOf).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(c.source).toContain('azure.microsoft.com/pricing');
    expect(c.fallback).toBe(true);
    expect(c.currency).toBe('USD');
  });

  it('refuses negative or non-finite usage, naming the field', () => {
    expect(() => controlPlaneCost({ ...zero, cpuSeconds: -1 })).toThrow(/cpuSeconds/);
    expect(() => controlPlaneCost({ ...zero, storage: { ...zero.storage, queue: Number.NaN } })).toThrow(/storage.queue/);
  });

  it('never falls when usage grows', () => {
    const usage = fc.record({
      cpuSeconds: fc.double({ min: 0, max: 1e4, noNaN: true }),
      executions: fc.double({ min: 0, max: 1e6, noNaN: true }),
      storage: fc.record({ table: fc.nat(1e6), queue: fc.nat(1e6), blobWrite: fc.nat(1e6), blobRead: fc.nat(1e6) }),
    });
    fc.assert(
      fc.property(usage, fc.nat(1000), (u, extra) => {
        const more = { ...u, cpuSeconds: u.cpuSeconds + extra, storage: { ...u.storage, table: u.storage.table + extra } };
        expect(controlPlaneCost(more).total).toBeGreaterThanOrEqual(controlPlaneCost(u).total);
      }),
    );
  });
});

describe('estimateControlPlaneUsage', () => {
  it('is the fixed part for a zero-node, zero-minute job and grows with nodes and minutes', () => {
    expect(estimateControlPlaneUsage({ nodes: 0, minutes: 0 })).toEqual(DEFAULT_USAGE_COEFFICIENTS.fixed);
    const small = estimateControlPlaneUsage({ nodes: 4, minutes: 30 });
    const big = estimateControlPlaneUsage({ nodes: 100, minutes: 240 });
    expect(big.cpuSeconds).toBeGreaterThan(small.cpuSeconds);
    expect(big.storage.table).toBeGreaterThan(small.storage.table);
  });

  it('refuses a negative shape', () => {
    expect(() => estimateControlPlaneUsage({ nodes: -1, minutes: 0 })).toThrow(/nodes/);
    expect(() => estimateControlPlaneUsage({ nodes: 1, minutes: Number.POSITIVE_INFINITY })).toThrow(/minutes/);
  });
});

describe('usage report: the control plane beside the nodes', () => {
  // Imported here so the pure report is covered without a stack (the route only lists jobs and calls it).
  const { usageReport, jobControlPlaneCost } = require('../../shared/core/ops/usage') as typeof import('../../shared/core/ops/usage');
  const cost = (day: string, nodes: number, minutes: number) => ({
    nodes,
    minutes,
    allocatedAt: `${day}T00:00:00.000Z`,
    releasedAt: `${day}T01:00:00.000Z`,
    nodeMinutes: { dedicated: nodes * minutes, lowPriority: 0, total: nodes * minutes },
    perStage: {},
    currency: 'USD',
    estimatedCost: 1,
    priceSource: 'builtin',
  });

  it("sums each job's control-plane estimate per day and in total, with the prices' date and source", () => {
    const r = usageReport([
      { id: 'a', tags: {}, cost: cost('2026-03-01', 4, 30) },
      { id: 'b', tags: {}, cost: cost('2026-03-01', 100, 240) },
      { id: 'c', tags: {}, cost: cost('2026-03-02', 16, 60) },
      { id: 'd', tags: {} },
    ]);
    const a = jobControlPlaneCost({ nodes: 4, minutes: 30 });
    const b = jobControlPlaneCost({ nodes: 100, minutes: 240 });
    const c = jobControlPlaneCost({ nodes: 16, minutes: 60 });
    expect(b).toBeGreaterThan(a);
    // Each running sum is rounded to 6 decimals: two jobs may be off by up to 1e-6 (as the total below).
    expect(Math.abs(r.controlPlane.perDay['2026-03-01'] - (a + b))).toBeLessThanOrEqual(1e-6);
    expect(r.controlPlane.perDay['2026-03-02']).toBeCloseTo(c, 6);
    // The report rounds each running sum to 6 decimals: three jobs may be off by up to 1.5e-6.
    expect(Math.abs(r.controlPlane.estimatedCost - (a + b + c))).toBeLessThanOrEqual(1.5e-6);
    expect(r.controlPlane).toMatchObject({ currency: 'USD', pricesAsOf: CONTROL_PLANE_PRICES.asOf, fallback: true });
    // The transactions priced, summed from the counted per-job table, with the count's date.
    const tables = [
      [4, 30],
      [100, 240],
      [16, 60],
    ].map(([nodes, minutes]) => estimateControlPlaneUsage({ nodes, minutes }).storage.table);
    expect(r.controlPlane.storageTransactions.table).toBeCloseTo(
      tables.reduce((x, y) => x + y, 0),
      2,
    );
    expect(r.controlPlane.storageCountedAt).toMatch(/^\d{4}-\d{2}-\d{2}$/);
    expect(r.total.jobs).toBe(3);
  });
});

describe('storage transactions from the counted per-job table (shared/core/ops/countedBudget.ts)', () => {
  it('prices the counted intake, fixed part, per node and MPI polls, not a model', async () => {
    const { COUNTED_BUDGET, countedStorage } = await import('../../shared/core/ops/countedBudget');
    const { usageCoefficients } = await import('../../shared/core/ops/controlPlaneCost');
    const c = usageCoefficients(COUNTED_BUDGET);
    expect(c.fixed.storage).toEqual({
      table: COUNTED_BUDGET.intake.table + COUNTED_BUDGET.fixed.table,
      queue: COUNTED_BUDGET.intake.queue + COUNTED_BUDGET.fixed.queue,
      blobWrite: COUNTED_BUDGET.fixed.blobWrite,
      blobRead: COUNTED_BUDGET.fixed.blobRead,
    });
    expect(c.perNode.storage).toEqual(COUNTED_BUDGET.perNode);
    expect(c.perMinute.storage.queue).toBe(COUNTED_BUDGET.perMpiPoll.queue * COUNTED_BUDGET.mpiPollsPerMinute);
    expect(c.basis).toContain(`counted per job at Azurite (${COUNTED_BUDGET.countedAt}`);
    // 10 minutes of a 4-node job: the table's count with 20 polls.
    expect(estimateControlPlaneUsage({ nodes: 4, minutes: 10 }).storage).toEqual(countedStorage({ nodes: 4, mpiPolls: 20 }));
  });
});
