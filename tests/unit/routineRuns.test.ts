/** Routine timer runs that did nothing are logged at debug, not info (issue 28, item 7: a quiet log). Pure. */
import { relayRunLevel, sweepRunLevel } from '../../shared/core/ops/routineRuns';
import type { SweepReport } from '../../shared/adapters/ops/sweep';

const idleHousekeeping = { dropped: [], admitted: 0, arraysRefreshed: 0, arraysEnded: [], errors: [] };
const sweep = (over: Partial<Pick<SweepReport, 'actions' | 'skipped'>> = {}) =>
  ({ actions: [], skipped: [], ...over }) as Pick<SweepReport, 'actions' | 'skipped'>;

describe('the level of an event relay pass', () => {
  it('is debug when nothing was sent, pending or failed', () => {
    expect(relayRunLevel({ sent: 0, busy: 0, waiting: 0, failed: [] })).toBe('debug');
  });
  it('is info when something was sent or waits for a retry, warn when a delivery failed', () => {
    expect(relayRunLevel({ sent: 1, busy: 0, waiting: 0, failed: [] })).toBe('info');
    expect(relayRunLevel({ sent: 0, busy: 0, waiting: 2, failed: [] })).toBe('info');
    expect(relayRunLevel({ sent: 0, busy: 0, waiting: 0, failed: [{ jobId: 'j', error: 'x' }] })).toBe('warn');
  });
});

describe('the level of a sweep run', () => {
  it('is debug when no rule acted and the scheduler changed nothing (or the run did not hold the lease)', () => {
    expect(sweepRunLevel(sweep(), idleHousekeeping)).toBe('debug');
    expect(sweepRunLevel(sweep(), undefined)).toBe('debug');
  });
  it('is info when a rule acted or the scheduler admitted a job', () => {
    expect(sweepRunLevel(sweep({ actions: [{ ok: true } as SweepReport['actions'][number]] }), idleHousekeeping)).toBe('info');
    expect(sweepRunLevel(sweep(), { ...idleHousekeeping, admitted: 1 })).toBe('info');
  });
  it('is warn when an action failed, something was skipped or the scheduler erred', () => {
    expect(sweepRunLevel(sweep({ actions: [{ ok: false } as SweepReport['actions'][number]] }), idleHousekeeping)).toBe('warn');
    expect(sweepRunLevel(sweep({ skipped: [{} as SweepReport['skipped'][number]] }), undefined)).toBe('warn');
    expect(sweepRunLevel(sweep(), { ...idleHousekeeping, errors: ['admission: down'] })).toBe('warn');
  });
});
