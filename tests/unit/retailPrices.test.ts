/**
 * Reading the Azure Retail Prices API (pure): the query a region's sizes become, which of a size's meters is a Linux
 * node's price, which price a job is costed with (fresh, stale or the marked fallback), and the dry run's estimate.
 * The stand-in's filter parser is checked here too: what it does not understand must refuse, not match everything.
 */
import fc from 'fast-check';
import {
  meterKind,
  nodePricesFrom,
  regionOfBatchAccountUrl,
  retailPricesFilter,
  retailPricesUrl,
  sizeGroups,
  type RetailPriceItem,
} from '../../shared/core/ops/retailPrices';
import { chooseQuote, costEstimate, type CachedNodePrice } from '../../shared/core/ops/priceQuote';
import { DEFAULT_PRICE_TABLE, parsePriceTable } from '../../shared/core/config/priceTable';
import { FilterNotEmulated, parseFilter } from '../../local/prices/filter';
import { standInItems } from '../../local/prices/catalog';

const item = (over: Partial<RetailPriceItem>): RetailPriceItem => ({
  currencyCode: 'USD',
  retailPrice: 3.6,
  armRegionName: 'eastus',
  effectiveStartDate: '2024-07-01T00:00:00Z',
  meterName: 'HB120rs v3',
  productName: 'Virtual Machines HBv3 Series',
  skuName: 'HB120rs v3',
  serviceName: 'Virtual Machines',
  armSkuName: 'Standard_HB120rs_v3',
  unitOfMeasure: '1 Hour',
  type: 'Consumption',
  ...over,
});

describe('the query', () => {
  it('asks for the consumption meters of exactly these sizes in the region, values quoted as OData strings', () => {
    expect(retailPricesFilter('eastus', ['Standard_HB120rs_v3', "Odd'Size"])).toBe(
      "serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq 'eastus' and (armSkuName eq 'Standard_HB120rs_v3' or armSkuName eq 'Odd''Size')",
    );
    const u = new URL(retailPricesUrl('https://prices.azure.com/api/retail/prices', 'eastus', ['Standard_D2s_v5']));
    expect(u.searchParams.get('api-version')).toBe('2023-01-01-preview');
    expect(u.searchParams.get('currencyCode')).toBe('USD');
    expect(() => retailPricesFilter('eastus', [])).toThrow(/no VM sizes/);
  });

  it('splits sizes into groups of ten, each size once', () => {
    const sizes = Array.from({ length: 23 }, (_, i) => `Standard_D${i}s_v5`);
    const groups = sizeGroups([...sizes, sizes[0]]);
    expect(groups.map((g) => g.length)).toEqual([10, 10, 3]);
    expect(groups.flat()).toEqual(sizes);
  });

  it('finds the region in an Azure Batch account URL only', () => {
    expect(regionOfBatchAccountUrl('https://hpcjobs.westeurope.batch.azure.com')).toBe('westeurope');
    expect(regionOfBatchAccountUrl('http://127.0.0.1:4242')).toBeUndefined();
    expect(regionOfBatchAccountUrl('not a url')).toBeUndefined();
  });
});

describe('the meters of a size', () => {
  it('takes Linux pay-as-you-go as the dedicated price, Spot and Low Priority apart, Windows and other regions never', () => {
    const prices = nodePricesFrom(
      [
        item({ retailPrice: 3.6 }),
        item({ retailPrice: 0.72, skuName: 'HB120rs v3 Spot', meterName: 'HB120rs v3 Spot' }),
        item({ retailPrice: 0.7, skuName: 'HB120rs v3 Low Priority', meterName: 'HB120rs v3 Low Priority' }),
        item({ retailPrice: 5.4, productName: 'Virtual Machines HBv3 Series Windows' }),
        item({ retailPrice: 9.9, armRegionName: 'westeurope' }),
        item({ retailPrice: 1, type: 'Reservation', unitOfMeasure: '1 Hour' }),
      ],
      'eastus',
    );
    expect(prices).toEqual([
      {
        vmSize: 'Standard_HB120rs_v3',
        region: 'eastus',
        currency: 'USD',
        dedicated: 3.6,
        spot: 0.72,
        lowPriority: 0.7,
        effectiveStartDate: '2024-07-01T00:00:00Z',
        meterName: 'HB120rs v3',
      },
    ]);
  });

  it('keeps the newest meter when a price changed', () => {
    const [p] = nodePricesFrom([item({ retailPrice: 3.0, effectiveStartDate: '2023-01-01T00:00:00Z' }), item({ retailPrice: 3.6 })], 'eastus');
    expect(p.dedicated).toBe(3.6);
  });

  it('property: a dedicated price always comes from a Linux consumption meter of that size that is neither Spot nor Low Priority', () => {
    const arb = fc.record({
      retailPrice: fc.double({ min: 0, max: 100, noNaN: true }),
      windows: fc.boolean(),
      suffix: fc.constantFrom('', ' Spot', ' Low Priority'),
      type: fc.constantFrom('Consumption', 'Reservation', 'DevTestConsumption'),
      region: fc.constantFrom('eastus', 'westeurope'),
      size: fc.constantFrom('Standard_A', 'Standard_B'),
      day: fc.integer({ min: 1, max: 28 }),
    });
    fc.assert(
      fc.property(fc.array(arb, { maxLength: 30 }), (rows) => {
        const items = rows.map((r) =>
          item({
            retailPrice: r.retailPrice,
            productName: `Virtual Machines X Series${r.windows ? ' Windows' : ''}`,
            skuName: `X${r.suffix}`,
            type: r.type,
            armRegionName: r.region,
            armSkuName: r.size,
            effectiveStartDate: `2024-01-${String(r.day).padStart(2, '0')}T00:00:00Z`,
          }),
        );
        for (const p of nodePricesFrom(items, 'eastus')) {
          if (p.dedicated === undefined) continue;
          const from = items.filter(
            (i) => i.armSkuName === p.vmSize && i.retailPrice === p.dedicated && meterKind(i) === 'dedicated' && i.armRegionName === 'eastus',
          );
          expect(from.length).toBeGreaterThan(0);
        }
      }),
      { seed: 20261127, numRuns: 300 },
    );
  });
});

describe('which price a job gets', () => {
  const cached: CachedNodePrice = {
    vmSize: 'Standard_HB120rs_v3',
    region: 'eastus',
    currency: 'USD',
    dedicated: 3.42,
    effectiveStartDate: '2026-10-01T00:00:00Z',
    meterName: 'HB120rs v3',
    fetchedAt: '2026-11-26T03:15:00Z',
  };
  const now = new Date('2026-11-27T10:00:00Z');
  const day = 24 * 3_600_000;

  it('a fresh retail price, with its meter and dates', () => {
    const q = chooseQuote({ vmSize: 'Standard_HB120rs_v3', cached, now, maxAgeMs: 2 * day, table: DEFAULT_PRICE_TABLE });
    expect(q).toMatchObject({ pricePerNodeHour: 3.42, currency: 'USD', asOf: '2026-10-01', fallback: false });
    expect(q.source).toBe('Azure Retail Prices API: eastus, Linux pay-as-you-go (HB120rs v3), effective 2026-10-01, fetched 2026-11-26');
  });

  it('a stale one only when the refresh failed, and then it says so', () => {
    const stale = chooseQuote({ vmSize: 'Standard_HB120rs_v3', cached, now, maxAgeMs: day / 2, table: DEFAULT_PRICE_TABLE, refreshFailed: 'HTTP 503' });
    expect(stale.pricePerNodeHour).toBe(3.42);
    expect(stale.source).toMatch(/stale: the last refresh failed/);
    const notFound = chooseQuote({ vmSize: 'Standard_HB120rs_v3', cached, now, maxAgeMs: day / 2, table: DEFAULT_PRICE_TABLE });
    expect(notFound.fallback).toBe(true);
  });

  it('the fallback table is marked, with its date', () => {
    const q = chooseQuote({ vmSize: 'standard_hb120rs_v3', now, maxAgeMs: day, table: DEFAULT_PRICE_TABLE, refreshFailed: 'connect ECONNREFUSED' });
    expect(q).toMatchObject({ pricePerNodeHour: 3.6, fallback: true, asOf: '2024-07-01' });
    expect(q.source).toMatch(/^fallback \(the Retail Prices API could not be read: connect ECONNREFUSED\): .*unverified/);
    const off = chooseQuote({ vmSize: 'Standard_X', now, maxAgeMs: day, table: DEFAULT_PRICE_TABLE, retailDisabled: 'RETAIL_PRICES_URL is off' });
    expect(off.pricePerNodeHour).toBeUndefined();
    expect(off.source).toMatch(/^fallback \(RETAIL_PRICES_URL is off\)/);
  });

  it('an operator table keeps its spelling and date', () => {
    const t = parsePriceTable(JSON.stringify({ prices: { Standard_NC24ads_A100_v4: 3.67 }, asOf: '2026-11-01' }));
    expect(t.sizes).toContain('Standard_NC24ads_A100_v4');
    expect(t.asOf).toBe('2026-11-01');
    expect(() => parsePriceTable(JSON.stringify({ prices: {}, asOf: 'yesterday' }))).toThrow(/asOf/);
  });
});

describe('the estimate', () => {
  const quote = { vmSize: 'Standard_HB120rs_v3', pricePerNodeHour: 3.6, currency: 'USD', source: 's', asOf: '2024-07-01', fallback: true };

  it('rate and worst case over the wall clock', () => {
    expect(costEstimate({ vmSize: 'Standard_HB120rs_v3', nodes: 4, wallClockMinutes: 120, quote })).toMatchObject({
      perHour: 14.4,
      worstCase: 28.8,
      boundBy: 'maxWallClock',
    });
  });

  it('maxNodeHours and maxCost lower the worst case; a maxCost in another currency is said not to compare', () => {
    expect(costEstimate({ vmSize: 'x', nodes: 4, wallClockMinutes: 120, maxNodeHours: 2, quote })).toMatchObject({ worstCase: 7.2, boundBy: 'maxNodeHours' });
    expect(costEstimate({ vmSize: 'x', nodes: 4, wallClockMinutes: 120, maxCost: { amount: 10, currency: 'USD' }, quote })).toMatchObject({
      worstCase: 10,
      boundBy: 'maxCost',
    });
    const eur = costEstimate({ vmSize: 'x', nodes: 4, wallClockMinutes: 120, maxCost: { amount: 10, currency: 'EUR' }, quote });
    expect(eur).toMatchObject({ worstCase: 28.8, boundBy: 'maxWallClock' });
    expect(eur.notes.join()).toMatch(/not comparable/);
  });

  it('property: the worst case never exceeds nodes × price × wall clock, nor maxCost in the same currency', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 1000 }),
        fc.integer({ min: 1, max: 10_000 }),
        fc.double({ min: 0.01, max: 50, noNaN: true }),
        fc.option(fc.double({ min: 0.01, max: 1e5, noNaN: true })),
        fc.option(fc.double({ min: 0.01, max: 1e5, noNaN: true })),
        (nodes, minutes, price, maxNodeHours, maxCost) => {
          const e = costEstimate({
            vmSize: 'x',
            nodes,
            wallClockMinutes: minutes,
            quote: { ...quote, pricePerNodeHour: price },
            ...(maxNodeHours !== null ? { maxNodeHours } : {}),
            ...(maxCost !== null ? { maxCost: { amount: maxCost, currency: 'USD' } } : {}),
          });
          expect(e.worstCase!).toBeLessThanOrEqual(nodes * price * (minutes / 60) + 1e-3);
          if (maxCost !== null) expect(e.worstCase!).toBeLessThanOrEqual(maxCost + 1e-3);
        },
      ),
      { seed: 20261127, numRuns: 300 },
    );
  });
});

describe("the stand-in's filter", () => {
  const items = standInItems();

  it("matches eq/and/or with parentheses, case-sensitively, priceType as the items' type", () => {
    const pred = parseFilter(retailPricesFilter('eastus', ['Standard_HB120rs_v3', 'Standard_D2s_v5']));
    const got = items.filter(pred);
    expect(new Set(got.map((i) => i.armSkuName))).toEqual(new Set(['Standard_HB120rs_v3', 'Standard_D2s_v5']));
    expect(got.every((i) => i.armRegionName === 'eastus' && i.type === 'Consumption')).toBe(true);
    expect(items.filter(parseFilter("armSkuName eq 'standard_hb120rs_v3'"))).toHaveLength(0);
  });

  it('refuses what it does not emulate rather than matching everything', () => {
    for (const f of ["contains(armSkuName, 'HB')", "armSkuName ne 'x'", "unknownField eq 'x'", "armSkuName eq 'x' and", "(armSkuName eq 'x'"]) {
      expect(() => parseFilter(f)).toThrow(FilterNotEmulated);
    }
  });

  it('serves every fallback size with its Linux pay-as-you-go price, so the stand-in and the fallback agree', () => {
    const east = nodePricesFrom(items, 'eastus');
    for (const size of DEFAULT_PRICE_TABLE.sizes) {
      expect(east.find((p) => p.vmSize === size)?.dedicated).toBeCloseTo(DEFAULT_PRICE_TABLE.perNodeHour[size.toLowerCase()], 6);
    }
  });
});
