import fc from 'fast-check';
import { budgetVerdict, jobCost, nodeHoursSoFar } from '../../shared/core/ops/cost';
import { DEFAULT_PRICE_TABLE, parsePriceTable, pricePerNodeHour } from '../../shared/core/config/priceTable';
import { usageReport } from '../../shared/core/ops/usage';

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (min: number) => new Date(T0 + min * 60_000).toISOString();

describe('price table', () => {
  it('has defaults for the common HPC sizes, case-insensitive', () => {
    for (const size of ['Standard_HB120rs_v3', 'standard_hb176rs_v4', 'STANDARD_HC44RS', 'Standard_HB120rs_v2', 'Standard_ND96asr_v4', 'Standard_D2s_v3']) {
      expect(pricePerNodeHour(DEFAULT_PRICE_TABLE, size)).toBeGreaterThan(0);
    }
    expect(pricePerNodeHour(DEFAULT_PRICE_TABLE, 'Standard_Unknown')).toBeUndefined();
    expect(DEFAULT_PRICE_TABLE.source).toMatch(/from memory/);
  });

  it('merges a USD override, replaces defaults for another currency, and names bad entries', () => {
    const t = parsePriceTable('{"Standard_HB120rs_v3": 2.5, "Custom_X": 1}');
    expect(pricePerNodeHour(t, 'standard_hb120rs_v3')).toBe(2.5);
    expect(pricePerNodeHour(t, 'Standard_HC44rs')).toBe(DEFAULT_PRICE_TABLE.perNodeHour.standard_hc44rs);
    const eur = parsePriceTable('{"currency":"EUR","prices":{"Custom_X":1}}');
    expect(eur.currency).toBe('EUR');
    expect(pricePerNodeHour(eur, 'Standard_HC44rs')).toBeUndefined();
    expect(() => parsePriceTable('{"Standard_HC44rs": -1}')).toThrow(/Standard_HC44rs.*non-negative/);
    expect(() => parsePriceTable('[1]')).toThrow(/object/);
    expect(() => parsePriceTable('{')).toThrow(/not valid JSON/);
  });
});

describe('job cost', () => {
  it('is nodes × minutes from allocation to release, split per stage, priced from the table', () => {
    const cost = jobCost(
      { vmSize: 'Standard_HB120rs_v3', dedicatedNodes: 4, lowPriorityNodes: 0, allocatedAt: at(1), releasedAt: at(31) },
      {
        Provisioning: { startedAt: at(0), endedAt: at(6) },
        Running: { startedAt: at(6), endedAt: at(30) },
        CleaningUp: { startedAt: at(30), endedAt: at(32) },
      },
      { pricePerNodeHour: 3.6, currency: 'USD', source: 'test' },
    );
    expect(cost.nodeMinutes).toEqual({ dedicated: 120, lowPriority: 0, total: 120 });
    expect(cost.perStage).toEqual({ Provisioning: 20, Running: 96, CleaningUp: 4 });
    expect(cost.estimatedCost).toBe(7.2);
  });

  it('per-stage node-minutes never exceed the total (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 400 }), fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 2, maxLength: 8 }), (nodes, cuts) => {
        const sorted = [...cuts].sort((a, b) => a - b);
        const timings = Object.fromEntries(sorted.slice(1).map((c, i) => [`s${i}`, { startedAt: at(sorted[i]), endedAt: at(c) }]));
        const cost = jobCost({ dedicatedNodes: nodes, lowPriorityNodes: 0, allocatedAt: at(sorted[0]), releasedAt: at(sorted.at(-1)!) }, timings, {
          currency: 'USD',
          source: 't',
        });
        const sum = Object.values(cost.perStage).reduce((a, b) => a + b, 0);
        expect(sum).toBeLessThanOrEqual(cost.nodeMinutes.total + 0.01 * Object.keys(timings).length + 0.01);
        expect(cost.estimatedCost).toBeUndefined();
      }),
    );
  });
});

describe('budget', () => {
  it('trips on node-hours, on cost in the same currency, and explains why maxCost cannot be enforced otherwise', () => {
    expect(nodeHoursSoFar(4, T0, T0 + 30 * 60_000)).toBe(2);
    expect(budgetVerdict({ maxNodeHours: 1.5 }, { nodeHours: 2, currency: 'USD' })).toEqual({
      exceeded: true,
      reason: expect.stringMatching(/^budget: 2\.0000 node-hours used, limit maxNodeHours 1\.5/),
    });
    expect(budgetVerdict({ maxNodeHours: 3 }, { nodeHours: 2, currency: 'USD' }).exceeded).toBe(false);
    expect(budgetVerdict({ maxCost: { amount: 5, currency: 'USD' } }, { nodeHours: 2, pricePerNodeHour: 3.6, currency: 'USD' })).toEqual({
      exceeded: true,
      reason: expect.stringMatching(/^budget: estimated 7\.2000 USD/),
    });
    expect(budgetVerdict({ maxCost: { amount: 5, currency: 'EUR' } }, { nodeHours: 2, pricePerNodeHour: 3.6, currency: 'USD' })).toEqual({
      exceeded: false,
      note: expect.stringMatching(/EUR/),
    });
    expect(budgetVerdict({ maxCost: { amount: 5, currency: 'USD' } }, { nodeHours: 2, currency: 'USD' })).toEqual({
      exceeded: false,
      note: expect.stringMatching(/not in the price table/),
    });
  });
});

describe('usage report', () => {
  it('sums per day and per tag, counting unpriced jobs apart', () => {
    const c = (rel: string, nm: number, est?: number) =>
      jobCost(
        { dedicatedNodes: 1, lowPriorityNodes: 0, allocatedAt: new Date(Date.parse(rel) - nm * 60_000).toISOString(), releasedAt: rel },
        {},
        { pricePerNodeHour: est, currency: 'USD', source: 't' },
      );
    const r = usageReport([
      { id: 'a', tags: { team: 'cfd' }, cost: c('2026-03-01T10:00:00Z', 60, 2) },
      { id: 'b', tags: { team: 'cfd', env: 'dev' }, cost: c('2026-03-01T23:00:00Z', 30) },
      { id: 'c', tags: {}, cost: c('2026-03-02T01:00:00Z', 120, 1) },
      { id: 'd', tags: { team: 'cfd' } },
    ]);
    expect(r.total).toEqual({ jobs: 3, nodeMinutes: 210, estimatedCost: 4, unpriced: 1 });
    expect(r.perDay['2026-03-01']).toEqual({ jobs: 2, nodeMinutes: 90, estimatedCost: 2, unpriced: 1 });
    expect(r.perDay['2026-03-02']).toEqual({ jobs: 1, nodeMinutes: 120, estimatedCost: 2, unpriced: 0 });
    expect(r.perTag['team=cfd']).toEqual({ jobs: 2, nodeMinutes: 90, estimatedCost: 2, unpriced: 1 });
    expect(r.perTag['env=dev'].jobs).toBe(1);
  });
});
