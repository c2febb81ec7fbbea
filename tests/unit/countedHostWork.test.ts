/**
 * The control plane's CPU-seconds and executions per job are the counted ones (shared/core/ops/countedBudget.ts, `host`:
 * counted by bench/calls.ts and tests/calls/*), not coefficients: the usage estimate and /api/usage's report take them
 * from the dated table.
 */
import { COUNTED_BUDGET, countedHostWork, type CountedBudget } from '../../shared/core/ops/countedBudget';
import { estimateControlPlaneUsage, usageCoefficients } from '../../shared/core/ops/controlPlaneCost';
import { usageReport } from '../../shared/core/ops/usage';

test('the coefficients are the counted host work: fixed, per node, per MPI poll × polls per minute', () => {
  const c = usageCoefficients(COUNTED_BUDGET);
  const { host, mpiPollsPerMinute } = COUNTED_BUDGET;
  expect([c.fixed.executions, c.fixed.cpuSeconds]).toEqual([host.fixed.executions, host.fixed.cpuSeconds]);
  expect([c.perNode.executions, c.perNode.cpuSeconds]).toEqual([host.perNode.executions, host.perNode.cpuSeconds]);
  expect(c.perMinute.executions).toBe(host.perMpiPoll.executions * mpiPollsPerMinute);
  expect(c.perMinute.cpuSeconds).toBeCloseTo(host.perMpiPoll.cpuSeconds * mpiPollsPerMinute, 9);
  expect(c.basis).toContain(`function executions counted and CPU-seconds measured per job on the local host (${host.countedAt}`);
  expect(c.basis).not.toMatch(/estimated/);
});

test("a job of n nodes and m minutes: the table's fixed + n per node + 2m polls", () => {
  const u = estimateControlPlaneUsage({ nodes: 8, minutes: 10 });
  const w = countedHostWork({ nodes: 8, mpiPolls: 10 * COUNTED_BUDGET.mpiPollsPerMinute });
  expect(u.executions).toBe(w.executions);
  expect(u.cpuSeconds).toBeCloseTo(w.cpuSeconds, 9);
});

test('another table gives other figures (nothing else is read)', () => {
  const other: CountedBudget = {
    ...COUNTED_BUDGET,
    host: {
      ...COUNTED_BUDGET.host,
      fixed: { executions: 1, cpuSeconds: 2 },
      perNode: { executions: 0, cpuSeconds: 0 },
      perMpiPoll: { executions: 0, cpuSeconds: 0 },
    },
  };
  const c = usageCoefficients(other);
  expect([c.fixed.executions, c.fixed.cpuSeconds, c.perMinute.executions]).toEqual([1, 2, 0]);
});

test("/api/usage's report names the day the host work was counted", () => {
  expect(usageReport([]).controlPlane.hostWorkCountedAt).toBe(COUNTED_BUDGET.host.countedAt);
  expect(COUNTED_BUDGET.host.countedAt).toMatch(/^\d{4}-\d{2}-\d{2}$/);
});
