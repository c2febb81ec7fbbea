/**
 * The dashboard's running cost (pure): nodes × price × time since the pool was allocated, from what the pipeline
 * publishes beside its progress, with the price's source; nothing before the pool exists or once the final cost is in.
 */
import { runningCost, type JobView } from '../../web/src/model';

const billing = { nodes: 4, since: '2026-11-27T10:00:00.000Z', pricePerNodeHour: 3.6, currency: 'USD', priceSource: 'Azure Retail Prices API: eastus, …' };
const at = (iso: string) => Date.parse(iso);

describe('running cost', () => {
  it('grows with the time the nodes have been billed', () => {
    const job: Pick<JobView, 'progress'> = { progress: { billing } };
    expect(runningCost(job, at('2026-11-27T10:30:00.000Z'))).toBe('7.20 USD so far (4 nodes × 3.6 USD/node-hour; prices: Azure Retail Prices API: eastus, …)');
    expect(runningCost(job, at('2026-11-27T11:00:00.000Z'))).toMatch(/^14\.40 USD so far/);
    expect(runningCost(job, at('2026-11-27T10:00:01.000Z'))).toMatch(/^0\.0040 USD so far/);
  });

  it('shows nothing before allocation, without a price, or once the job has its final cost', () => {
    const now = at('2026-11-27T11:00:00.000Z');
    expect(runningCost({ progress: { billing: { ...billing, since: undefined } } }, now)).toBeUndefined();
    expect(runningCost({ progress: { billing: { ...billing, pricePerNodeHour: undefined } } }, now)).toBeUndefined();
    expect(runningCost({ progress: {} }, now)).toBeUndefined();
    const cost = {
      nodes: 4,
      allocatedAt: billing.since,
      releasedAt: billing.since,
      minutes: 0,
      nodeMinutes: { dedicated: 0, lowPriority: 0, total: 0 },
      perStage: {},
      currency: 'USD',
      priceSource: 's',
    };
    expect(runningCost({ progress: { billing }, cost }, now)).toBeUndefined();
  });
});
