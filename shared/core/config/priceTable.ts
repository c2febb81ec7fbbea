/**
 * Node prices per hour, by VM size. The defaults are Linux pay-as-you-go list prices (USD, East US) as
 * recalled from memory for mid-2024: they were NOT checked against the Azure price sheet (no internet here).
 * Operators override or extend them with PRICE_TABLE_JSON, e.g. {"currency":"EUR","prices":{"Standard_HB120rs_v3":3.3}}.
 */
export interface PriceTable {
  currency: string;
  /** Lower-cased VM size → price per node-hour. */
  perNodeHour: Readonly<Record<string, number>>;
  source: string;
  /** The day the prices are stated for (YYYY-MM-DD), when known. */
  asOf?: string;
  /** The sizes as written (Azure's spelling, e.g. Standard_HB120rs_v3: the Retail Prices API matches case). */
  sizes: readonly string[];
}

export const DEFAULT_PRICES_PER_HOUR: Readonly<Record<string, number>> = {
  Standard_HB120rs_v3: 3.6,
  Standard_HB120rs_v2: 3.6,
  Standard_HB176rs_v4: 7.2,
  Standard_HC44rs: 3.168,
  Standard_ND96asr_v4: 27.197,
  Standard_D2s_v3: 0.096,
  Standard_D4s_v3: 0.192,
  Standard_D8s_v3: 0.384,
  Standard_D16s_v3: 0.768,
  Standard_D2s_v5: 0.096,
  Standard_D4s_v5: 0.192,
  Standard_D8s_v5: 0.384,
};

export const DEFAULT_PRICE_SOURCE = 'Linux pay-as-you-go list prices, USD, East US, from memory as of mid-2024 (unverified); override with PRICE_TABLE_JSON';

function lowerKeys(prices: Readonly<Record<string, number>>): Record<string, number> {
  return Object.fromEntries(Object.entries(prices).map(([k, v]) => [k.toLowerCase(), v]));
}

/** The built-in list's date: mid-2024, as recalled (the fallback only; the Retail Prices API is the source). */
export const DEFAULT_PRICES_AS_OF = '2024-07-01';

export const DEFAULT_PRICE_TABLE: PriceTable = Object.freeze({
  currency: 'USD',
  perNodeHour: Object.freeze(lowerKeys(DEFAULT_PRICES_PER_HOUR)),
  source: DEFAULT_PRICE_SOURCE,
  asOf: DEFAULT_PRICES_AS_OF,
  sizes: Object.freeze(Object.keys(DEFAULT_PRICES_PER_HOUR)),
});

/**
 * The effective table: defaults merged with the override. The override is JSON, either a plain map
 * `{ "<vmSize>": price }` or `{ "currency"?: "EUR", "prices": { ... }, "replaceDefaults"?: true, "asOf"?: "2026-11-01" }`.
 * Throws naming the bad entry.
 */
export function parsePriceTable(json: string | undefined): PriceTable {
  if (json === undefined || json.trim() === '') return DEFAULT_PRICE_TABLE;
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch (err) {
    throw new Error(`PRICE_TABLE_JSON is not valid JSON: ${(err as Error).message}`);
  }
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('PRICE_TABLE_JSON must be a JSON object');
  const obj = raw as Record<string, unknown>;
  const wrapped = 'prices' in obj;
  const prices = (wrapped ? obj.prices : obj) as unknown;
  if (!prices || typeof prices !== 'object' || Array.isArray(prices)) throw new Error('PRICE_TABLE_JSON "prices" must be an object of vmSize → price per hour');
  const currency = wrapped && obj.currency !== undefined ? obj.currency : 'USD';
  if (typeof currency !== 'string' || !/^[A-Z]{3}$/.test(currency))
    throw new Error(`PRICE_TABLE_JSON "currency" must be an ISO 4217 code such as "USD", got ${JSON.stringify(currency)}`);
  const entries = Object.entries(prices as Record<string, unknown>);
  for (const [size, price] of entries) {
    if (typeof price !== 'number' || !Number.isFinite(price) || price < 0) {
      throw new Error(`PRICE_TABLE_JSON: price of "${size}" must be a non-negative number per node-hour, got ${JSON.stringify(price)}`);
    }
  }
  const asOf = wrapped ? obj.asOf : undefined;
  if (asOf !== undefined && (typeof asOf !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(asOf) || Number.isNaN(Date.parse(asOf)))) {
    throw new Error(`PRICE_TABLE_JSON "asOf" must be a date YYYY-MM-DD, got ${JSON.stringify(asOf)}`);
  }
  const replace = wrapped && obj.replaceDefaults === true;
  // Defaults are in USD; mixing them with another currency would be wrong, so a foreign currency replaces them.
  const base = replace || currency !== 'USD' ? {} : DEFAULT_PRICE_TABLE.perNodeHour;
  return Object.freeze({
    currency,
    perNodeHour: Object.freeze({ ...base, ...lowerKeys(prices as Record<string, number>) }),
    sizes: Object.freeze([...new Set([...(base === DEFAULT_PRICE_TABLE.perNodeHour ? DEFAULT_PRICE_TABLE.sizes : []), ...entries.map(([k]) => k)])]),
    source: base === DEFAULT_PRICE_TABLE.perNodeHour ? `${DEFAULT_PRICE_SOURCE}; with PRICE_TABLE_JSON overrides` : 'PRICE_TABLE_JSON',
    ...(typeof asOf === 'string' ? { asOf } : base === DEFAULT_PRICE_TABLE.perNodeHour ? { asOf: DEFAULT_PRICES_AS_OF } : {}),
  });
}

/** Price of one node-hour of `vmSize` (case-insensitive), or undefined when the table does not know it. */
export function pricePerNodeHour(table: PriceTable, vmSize: string): number | undefined {
  return table.perNodeHour[vmSize.toLowerCase()];
}
