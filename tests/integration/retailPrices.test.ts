/**
 * Node prices over real parts: the local Retail Prices stand-in (the API's format and paging) and a real Azurite
 * table as the cache. A job's price is one API round trip the first time, a table read after; a failing API leaves
 * the cached price (marked stale) or the marked fallback; the daily refresh asks for every known size in groups.
 */
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startRetailPricesStandIn, type RetailPricesStandIn } from '../../local/prices';
import { DEFAULT_PRICE_TABLE } from '../../shared/core/config/priceTable';
import { PriceStore } from '../../shared/adapters/ops/priceStore';
import { priceService } from '../../shared/core/ops/priceService';
import { fetchNodePrices } from '../../shared/adapters/ops/retailPricesClient';

let azurite: AzuriteHandle;
let api: RetailPricesStandIn;
let tables = 0;

beforeAll(async () => {
  azurite = await startAzurite();
  // Three items a page, so one size's six meters take two pages: the client must follow NextPageLink.
  api = await startRetailPricesStandIn({ pageSize: 3 });
}, 60_000);

afterAll(async () => {
  await api?.stop();
  await azurite?.stop();
});

async function service(now: () => Date, maxAgeHours = 48) {
  const store = PriceStore.fromConnectionString(azurite.connectionString(), `NodePrices${process.pid}x${++tables}`);
  await store.ensureTable();
  const svc = priceService({
    region: 'eastus',
    table: DEFAULT_PRICE_TABLE,
    maxAgeMs: maxAgeHours * 3_600_000,
    store,
    fetchPrices: (r, s) => fetchNodePrices(api.url, r, s),
    now,
  });
  return { store, svc };
}

describe('node prices from the Retail Prices API', () => {
  it('follows the pages of an answer and reads the Linux pay-as-you-go price', async () => {
    const before = api.requests();
    const [p] = await fetchNodePrices(api.url, 'westeurope', ['Standard_HB120rs_v3']);
    // 2 OS × 3 meters = 6 items at 3 a page.
    expect(api.requests() - before).toBe(2);
    expect(p).toMatchObject({ vmSize: 'Standard_HB120rs_v3', region: 'westeurope', currency: 'USD', meterName: 'HB120rs v3' });
    expect(p.dedicated).toBeCloseTo(3.96, 6);
    expect(p.spot).toBeCloseTo(0.792, 6);
  });

  it('asks the API once per size, then reads the cache until the price is older than PRICES_MAX_AGE_HOURS', async () => {
    let now = new Date('2026-11-27T10:00:00Z');
    const { svc, store } = await service(() => now);
    const start = api.requests();
    const first = await svc.quote('standard_hb120rs_v3');
    expect(first).toMatchObject({ vmSize: 'Standard_HB120rs_v3', pricePerNodeHour: 3.6, fallback: false, asOf: '2024-07-01' });
    expect(first.source).toMatch(/^Azure Retail Prices API: eastus, Linux pay-as-you-go \(HB120rs v3\), effective 2024-07-01, fetched 2026-11-27$/);
    const afterFirst = api.requests();
    expect(afterFirst - start).toBe(2);
    await svc.quote('Standard_HB120rs_v3');
    expect(api.requests()).toBe(afterFirst);
    expect((await store.get('eastus', 'Standard_HB120rs_v3'))?.fetchedAt).toBe('2026-11-27T10:00:00.000Z');
    now = new Date('2026-11-30T10:00:00Z');
    await svc.quote('Standard_HB120rs_v3');
    expect(api.requests()).toBeGreaterThan(afterFirst);
    expect((await store.get('eastus', 'Standard_HB120rs_v3'))?.fetchedAt).toBe('2026-11-30T10:00:00.000Z');
  });

  it('a failing API leaves the cached price marked stale, or the fallback marked as such', async () => {
    let now = new Date('2026-11-27T10:00:00Z');
    const { svc } = await service(() => now, 1);
    await svc.quote('Standard_D4s_v5');
    now = new Date('2026-11-28T10:00:00Z');
    api.failNext(1, 503);
    const stale = await svc.quote('Standard_D4s_v5');
    expect(stale).toMatchObject({ pricePerNodeHour: 0.192, fallback: false });
    expect(stale.source).toMatch(/stale: the last refresh failed/);
    api.failNext(1, 503);
    const never = await svc.quote('Standard_D8s_v5');
    expect(never).toMatchObject({ pricePerNodeHour: 0.384, fallback: true });
    expect(never.source).toMatch(/^fallback \(the Retail Prices API could not be read: Retail Prices API answered 503/);
  });

  it('a size the API does not list gets the fallback, saying why', async () => {
    const { svc } = await service(() => new Date('2026-11-27T10:00:00Z'));
    const q = await svc.quote('Standard_Bogus9');
    expect(q).toMatchObject({ fallback: true });
    expect(q.pricePerNodeHour).toBeUndefined();
    expect(q.source).toMatch(/lists no Linux pay-as-you-go price for Standard_Bogus9/);
  });

  it('the daily refresh asks for every size the table and the cache know, ten a request', async () => {
    const { svc, store } = await service(() => new Date('2026-11-27T03:15:00Z'));
    const report = await svc.refresh();
    expect(report).toEqual({ region: 'eastus', asked: DEFAULT_PRICE_TABLE.sizes.length, refreshed: DEFAULT_PRICE_TABLE.sizes.length });
    const rows = await store.list('eastus');
    expect(rows.map((r) => r.vmSize).sort()).toEqual([...DEFAULT_PRICE_TABLE.sizes].sort());
    expect(rows.every((r) => r.fetchedAt === '2026-11-27T03:15:00.000Z')).toBe(true);
  });

  it('answers 501 for what the stand-in does not emulate', async () => {
    const u = new URL(api.url);
    u.searchParams.set('$filter', "contains(armSkuName, 'HB')");
    const res = await fetch(u);
    expect(res.status).toBe(501);
    expect(((await res.json()) as { Error: { Code: string } }).Error.Code).toBe('NotEmulated');
  });
});
