/**
 * The Azure Retail Prices API as far as node prices go: the query for a region's VM sizes and the reading of its
 * answer. Pure. The API is public and unauthenticated (https://prices.azure.com/api/retail/prices, documented at
 * learn.microsoft.com/rest/api/cost-management/retail-prices/azure-retail-prices): each page is
 * `{ BillingCurrency, CustomerEntityId, CustomerEntityType, Items: [...], NextPageLink, Count }`, at most 100 items,
 * the next page at NextPageLink (null on the last). Filter values are case-sensitive from api-version
 * 2023-01-01-preview on, so sizes are asked for as Azure spells them (`Standard_HB120rs_v3`).
 *
 * A VM size has several meters in a region: Linux and Windows (productName ends with " Windows"), pay-as-you-go,
 * Spot (skuName ends with " Spot") and Low Priority (" Low Priority"), each `type: "Consumption"` at `"1 Hour"`;
 * reservations and savings plans are other types. Batch nodes run Linux here, so the Linux meters are the ones read.
 */
import { z } from 'zod';

export const RETAIL_PRICES_API_VERSION = '2023-01-01-preview';
/** Where Azure serves it (RETAIL_PRICES_URL overrides, e.g. the local stack's stand-in). */
export const RETAIL_PRICES_URL = 'https://prices.azure.com/api/retail/prices';
/** Sizes asked for in one request: the filter stays short, and one answer stays within a few pages. */
export const SIZES_PER_QUERY = 10;

export const RetailPriceItemSchema = z.object({
  currencyCode: z.string(),
  retailPrice: z.number(),
  unitPrice: z.number().optional(),
  armRegionName: z.string(),
  location: z.string().optional(),
  effectiveStartDate: z.string(),
  meterName: z.string(),
  productName: z.string(),
  skuName: z.string(),
  serviceName: z.string(),
  armSkuName: z.string(),
  unitOfMeasure: z.string(),
  type: z.string(),
  isPrimaryMeterRegion: z.boolean().optional(),
});
export type RetailPriceItem = z.infer<typeof RetailPriceItemSchema>;

export const RetailPricesPageSchema = z.object({
  BillingCurrency: z.string().optional(),
  Items: z.array(RetailPriceItemSchema),
  NextPageLink: z.string().nullable().optional(),
  Count: z.number().optional(),
});
export type RetailPricesPage = z.infer<typeof RetailPricesPageSchema>;

/** One VM size's node-hour prices in one region, as the API states them. */
export interface NodePrice {
  vmSize: string;
  region: string;
  currency: string;
  /** Pay-as-you-go (dedicated nodes). */
  dedicated?: number;
  /** Spot nodes. */
  spot?: number;
  /** Low-priority nodes (Batch's older name for evictable nodes). */
  lowPriority?: number;
  /** When the dedicated price took effect (else the newest of the others). */
  effectiveStartDate: string;
  meterName: string;
}

/** OData string literal: a quote is doubled. */
const literal = (v: string) => `'${v.replace(/'/g, "''")}'`;

/** The $filter for the Linux-and-Windows consumption meters of these sizes in a region (Windows is dropped on reading). */
export function retailPricesFilter(region: string, vmSizes: readonly string[]): string {
  if (!vmSizes.length) throw new Error('retailPricesFilter: no VM sizes to ask for');
  const sizes = vmSizes.map((s) => `armSkuName eq ${literal(s)}`).join(' or ');
  return `serviceName eq 'Virtual Machines' and priceType eq 'Consumption' and armRegionName eq ${literal(region)} and (${sizes})`;
}

/** The first page's URL for these sizes. */
export function retailPricesUrl(baseUrl: string, region: string, vmSizes: readonly string[], currency = 'USD'): string {
  const u = new URL(baseUrl);
  u.searchParams.set('api-version', RETAIL_PRICES_API_VERSION);
  u.searchParams.set('currencyCode', currency);
  u.searchParams.set('$filter', retailPricesFilter(region, vmSizes));
  return u.toString();
}

type Kind = 'dedicated' | 'spot' | 'lowPriority';

/** Which node price a meter is, or undefined for one a Linux Batch node is not billed by. */
export function meterKind(item: RetailPriceItem): Kind | undefined {
  if (item.serviceName !== 'Virtual Machines' || item.type !== 'Consumption' || item.unitOfMeasure !== '1 Hour') return undefined;
  if (/\bWindows\b/i.test(item.productName)) return undefined;
  if (/ Spot$/i.test(item.skuName)) return 'spot';
  if (/ Low Priority$/i.test(item.skuName)) return 'lowPriority';
  return 'dedicated';
}

/**
 * The node prices in a set of answer items for one region: per size, the newest meter of each kind (a price change
 * leaves the old meter listed with an earlier effectiveStartDate). Sizes are keyed as the API spells them.
 */
export function nodePricesFrom(items: readonly RetailPriceItem[], region: string): NodePrice[] {
  const newest = new Map<string, Partial<Record<Kind, RetailPriceItem>>>();
  for (const item of items) {
    if (item.armRegionName.toLowerCase() !== region.toLowerCase()) continue;
    const kind = meterKind(item);
    if (!kind || !Number.isFinite(item.retailPrice) || item.retailPrice < 0) continue;
    const bySize = newest.get(item.armSkuName) ?? {};
    const held = bySize[kind];
    if (!held || Date.parse(item.effectiveStartDate) > Date.parse(held.effectiveStartDate)) bySize[kind] = item;
    newest.set(item.armSkuName, bySize);
  }
  return [...newest.entries()].map(([vmSize, kinds]) => {
    const main = kinds.dedicated ?? kinds.spot ?? kinds.lowPriority!;
    return {
      vmSize,
      region: region.toLowerCase(),
      currency: main.currencyCode,
      ...(kinds.dedicated ? { dedicated: kinds.dedicated.retailPrice } : {}),
      ...(kinds.spot ? { spot: kinds.spot.retailPrice } : {}),
      ...(kinds.lowPriority ? { lowPriority: kinds.lowPriority.retailPrice } : {}),
      effectiveStartDate: main.effectiveStartDate,
      meterName: main.meterName,
    };
  });
}

/** `<account>.<region>.batch.azure.com` → region; undefined for any other host (the local stack's loopback). */
export function regionOfBatchAccountUrl(accountUrl: string): string | undefined {
  try {
    const m = /^[a-z0-9]+\.([a-z0-9]+)\.batch\.azure\.com$/i.exec(new URL(accountUrl).hostname);
    return m ? m[1].toLowerCase() : undefined;
  } catch {
    return undefined;
  }
}

/** Splits sizes into the groups asked for per request. */
export function sizeGroups(vmSizes: readonly string[], per = SIZES_PER_QUERY): string[][] {
  const unique = [...new Set(vmSizes)];
  const out: string[][] = [];
  for (let i = 0; i < unique.length; i += per) out.push(unique.slice(i, i + per));
  return out;
}
