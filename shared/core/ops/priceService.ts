/**
 * Node prices for the cost record, budgets and the dry run: the cached Retail Prices answer when fresh, the API asked
 * on a miss (and the answer cached), the configured table when the API is off or unreachable. The daily refresh
 * timer asks again for every size the cache and the table know, so jobs rarely wait on the API.
 */
import type { PriceTable } from '../config/priceTable';
import type { PriceQuote } from './cost';
import { chooseQuote, type CachedNodePrice } from './priceQuote';
import type { NodePrice } from './retailPrices';

export interface PriceServiceDeps {
  /** The region prices are read for; undefined: the Retail Prices API is not used (`retailOff` says why). */
  region?: string;
  retailOff?: string;
  table: PriceTable;
  maxAgeMs: number;
  store: {
    get(region: string, vmSize: string): Promise<CachedNodePrice | undefined>;
    list(region: string): Promise<CachedNodePrice[]>;
    put(p: readonly CachedNodePrice[]): Promise<void>;
  };
  fetchPrices(region: string, vmSizes: readonly string[]): Promise<NodePrice[]>;
  now(): Date;
}

export interface PriceService {
  quote(vmSize: string): Promise<PriceQuote>;
  /** Asks the API again for every known size; returns what was refreshed. */
  refresh(): Promise<{ region: string | null; asked: number; refreshed: number; error?: string }>;
}

export function priceService(deps: PriceServiceDeps): PriceService {
  const { region, table } = deps;
  const stamp = (prices: NodePrice[]): CachedNodePrice[] => {
    const fetchedAt = deps.now().toISOString();
    return prices.map((p) => ({ ...p, fetchedAt }));
  };
  return {
    async quote(asked) {
      // The API matches sizes case-sensitively: ask as Azure spells the size when the table knows it.
      const vmSize = table.sizes.find((s) => s.toLowerCase() === asked.toLowerCase()) ?? asked;
      if (!region)
        return chooseQuote({
          vmSize,
          now: deps.now(),
          maxAgeMs: deps.maxAgeMs,
          table,
          retailDisabled: deps.retailOff ?? 'no region for the Retail Prices API',
        });
      let cached = await deps.store.get(region, vmSize).catch(() => undefined);
      const fresh = cached && deps.now().getTime() - Date.parse(cached.fetchedAt) <= deps.maxAgeMs;
      let refreshFailed: string | undefined;
      if (!fresh) {
        try {
          const got = stamp(await deps.fetchPrices(region, [vmSize]));
          if (got.length) {
            await deps.store.put(got).catch(() => undefined);
            cached = got.find((p) => p.vmSize.toLowerCase() === vmSize.toLowerCase()) ?? cached;
          }
        } catch (err) {
          refreshFailed = (err as Error).message;
        }
      }
      return chooseQuote({ vmSize, cached, now: deps.now(), maxAgeMs: deps.maxAgeMs, table, refreshFailed });
    },
    async refresh() {
      if (!region) return { region: null, asked: 0, refreshed: 0, error: deps.retailOff ?? 'no region' };
      // Sizes as Azure spells them (the cache keeps the API's spelling, the table the operator's).
      const bySpelling = new Map<string, string>();
      for (const s of [...table.sizes, ...(await deps.store.list(region)).map((p) => p.vmSize)]) bySpelling.set(s.toLowerCase(), s);
      const sizes = [...bySpelling.values()];
      try {
        const got = stamp(await deps.fetchPrices(region, sizes));
        await deps.store.put(got);
        return { region, asked: sizes.length, refreshed: got.length };
      } catch (err) {
        return { region, asked: sizes.length, refreshed: 0, error: (err as Error).message };
      }
    },
  };
}
