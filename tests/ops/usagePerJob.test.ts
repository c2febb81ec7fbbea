/** GET /api/usage's per-job rows and the control plane's usage behind its cost (shared/core/ops/usage.ts, pure). */
import { usageReport, jobControlPlaneUsage, PER_JOB_MAX } from '../../shared/core/ops/usage';
import { jobCost } from '../../shared/core/ops/cost';

const cost = (i: number, price?: number) =>
  jobCost(
    {
      dedicatedNodes: 2,
      lowPriorityNodes: 0,
      allocatedAt: new Date(Date.UTC(2026, 2, 1, 0, i)).toISOString(),
      releasedAt: new Date(Date.UTC(2026, 2, 1, 0, i + 10)).toISOString(),
      vmSize: 'Standard_D8s_v5',
    },
    {},
    { pricePerNodeHour: price, currency: 'USD', source: 'table' },
  );

describe('usage per job', () => {
  it("lists each job newest first with the nodes' cost beside the control plane's, capped with a count of the rest", () => {
    const jobs = Array.from({ length: PER_JOB_MAX + 1 }, (_, i) => ({ id: `j${i}`, tags: {}, cost: cost(i, i % 2 ? 0.4 : undefined) }));
    const r = usageReport(jobs);
    expect(r.total.jobs).toBe(PER_JOB_MAX + 1);
    expect(r.perJob).toHaveLength(PER_JOB_MAX);
    expect(r.perJobOmitted).toBe(1);
    expect(r.perJob[0].id).toBe(`j${PER_JOB_MAX}`);
    expect(r.perJob.map((j) => j.id)).not.toContain('j0');
    const one = r.perJob.find((j) => j.id === 'j1');
    expect(one).toMatchObject({
      nodes: 2,
      minutes: 10,
      nodeMinutes: 20,
      estimatedCost: expect.any(Number),
      currency: 'USD',
      priceSource: 'table',
      vmSize: 'Standard_D8s_v5',
    });
    expect(r.perJob.find((j) => j.id === 'j2')?.estimatedCost).toBeUndefined();
    const used = jobControlPlaneUsage({ nodes: 2, minutes: 10 });
    expect(one?.controlPlane.cpuSeconds).toBeCloseTo(used.cpuSeconds, 3);
    expect(one?.controlPlane.storageTransactions.table).toBeCloseTo(used.storage.table, 3);
  });

  it("sums the control plane's usage over the jobs beside its cost", () => {
    const r = usageReport([
      { id: 'a', tags: {}, cost: cost(0, 1) },
      { id: 'b', tags: {}, cost: cost(1, 1) },
      { id: 'c', tags: {} },
    ]);
    const used = jobControlPlaneUsage({ nodes: 2, minutes: 10 });
    expect(r.controlPlane.cpuSeconds).toBeCloseTo(2 * used.cpuSeconds, 3);
    expect(r.controlPlane.executions).toBeCloseTo(2 * used.executions, 3);
    expect(r.controlPlane.storageTransactions.queue).toBeCloseTo(2 * used.storage.queue, 3);
    expect(r.perJob.map((j) => j.id)).toEqual(['b', 'a']);
    expect(usageReport([])).toMatchObject({
      perJob: [],
      perJobOmitted: 0,
      controlPlane: { cpuSeconds: 0, storageTransactions: { table: 0, queue: 0, blobWrite: 0, blobRead: 0 } },
    });
  });
});
