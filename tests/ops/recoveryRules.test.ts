/**
 * Recovery after an unclean stop, as the sweep decides it (pure): a submission whose orchestration start was lost is
 * re-driven from its row (after the grace, or at once on the first run after the host started); what cannot be
 * re-driven is failed with the reason; a job whose run exists is never re-driven.
 */
import fc from 'fast-check';
import {
  planSweep,
  shouldRedrive,
  type ObservedJobRow,
  type ObservedOrchestration,
  type SweepObservation,
  type SweepSettings,
} from '../../shared/core/ops/sweepRules';
import { JOB_STATES } from '../../shared/core/state/states';

const S: SweepSettings = { stallLimitMs: 10 * 60_000, graceMs: 10 * 60_000, stagingRetentionMs: 60 * 60_000 };
const NOW = '2026-01-01T12:00:00.000Z';
const NOW_MS = Date.parse(NOW);
const ago = (min: number) => new Date(NOW_MS - min * 60_000).toISOString();

function submitted(id: string, patch: Partial<ObservedJobRow> = {}): ObservedJobRow {
  return { id, state: 'Submitted', createdAt: ago(7), updatedAt: ago(7), keepsPool: false, redrivable: true, ...patch };
}
function obs(jobs: ObservedJobRow[], orchestrations: [string, ObservedOrchestration][] = []): SweepObservation {
  return { now: NOW, jobs: new Map(jobs.map((j) => [j.id, j])), orchestrations: new Map(orchestrations), pools: [], batchJobs: [], staging: [] };
}

describe('recovery: a lost orchestration start', () => {
  it('the half-lost job (row Submitted for 7 minutes, no instance) waits for the grace on an ordinary run', () => {
    expect(planSweep(obs([submitted('a')]), S)).toEqual([]);
  });

  it('is re-driven at once on the first run after the host started', () => {
    const plan = planSweep(obs([submitted('a')]), { ...S, redriveAtOnce: true });
    expect(plan).toEqual([
      { kind: 'redriveJob', rule: 'lostStart', jobId: 'a', reason: expect.stringMatching(/start was lost.*first sweep since the host started/) },
    ]);
  });

  it('is re-driven, not failed, once past the grace on any run', () => {
    const plan = planSweep(obs([submitted('a', { updatedAt: ago(11) })]), S);
    expect(plan.map((a) => [a.kind, a.rule])).toEqual([['redriveJob', 'lostStart']]);
  });

  it('an array row left in Submitted (its intake stopped half-way) is re-driven too', () => {
    expect(planSweep(obs([submitted('arr', { isArray: true })]), { ...S, redriveAtOnce: true }).map((a) => a.kind)).toEqual(['redriveJob']);
  });

  it('a Submitted row that cannot be re-driven (no valid spec) is failed past the grace, with the reason', () => {
    const plan = planSweep(obs([submitted('a', { redrivable: false, updatedAt: ago(11) })]), { ...S, redriveAtOnce: true });
    expect(plan).toEqual([
      { kind: 'failJob', rule: 'lostRun', jobId: 'a', reason: expect.stringMatching(/^lost: orchestration never started, and it cannot be started again/) },
    ]);
  });

  it('a row whose run had begun and whose history is gone is failed, saying where it was', () => {
    const plan = planSweep(obs([submitted('a', { state: 'Running', updatedAt: ago(11) })]), { ...S, redriveAtOnce: true });
    expect(plan).toEqual([{ kind: 'failJob', rule: 'lostRun', jobId: 'a', reason: expect.stringMatching(/^lost: orchestration missing .*reached Running/) }]);
  });

  it('a cancel asked for while the start was lost cancels the job instead', () => {
    const plan = planSweep(obs([submitted('a', { cancelRequestedAt: ago(1) })]), { ...S, redriveAtOnce: true });
    expect(plan.map((a) => [a.kind, a.rule])).toEqual([['cancelJob', 'cancelledRun']]);
  });

  it('never re-drives a job that has an instance (any status), is past Submitted, or asked to cancel', () => {
    const statuses = ['Pending', 'Running', 'Completed', 'Failed', 'Terminated', 'Suspended', 'ContinuedAsNew', 'whatever'];
    fc.assert(
      fc.property(
        fc.constantFrom(...JOB_STATES),
        fc.option(fc.constantFrom(...statuses), { nil: undefined }),
        fc.boolean(),
        fc.boolean(),
        fc.integer({ min: 0, max: 60 }),
        fc.boolean(),
        (state, status, cancel, redrivable, ageMin, atOnce) => {
          const row = submitted('a', { state, updatedAt: ago(ageMin), redrivable, ...(cancel ? { cancelRequestedAt: ago(0) } : {}) });
          const orch = status ? { runtimeStatus: status, lastUpdatedTime: ago(ageMin) } : undefined;
          const redriven = planSweep(obs([row], orch ? [['a', orch]] : []), { ...S, redriveAtOnce: atOnce }).some((a) => a.kind === 'redriveJob');
          const expected = state === 'Submitted' && !orch && !cancel && redrivable && (atOnce || ageMin * 60_000 > S.graceMs);
          expect(redriven).toBe(expected);
          expect(shouldRedrive(row, orch, NOW_MS, { ...S, redriveAtOnce: atOnce })).toBe(expected);
        },
      ),
    );
  });
});
