/**
 * Reads node prices from the Azure Retail Prices API (or a stand-in at another URL): every page of the answer for a
 * region's sizes, validated, then read by shared/core/ops/retailPrices.ts. Public and unauthenticated: no credential.
 */
import { nodePricesFrom, RetailPricesPageSchema, retailPricesUrl, sizeGroups, type NodePrice, type RetailPriceItem } from '../../core/ops/retailPrices';

/** A page limit well above any answer for ten sizes in one region (a few dozen meters), so a looping link ends. */
const MAX_PAGES = 50;
const TIMEOUT_MS = 15_000;

export type Fetch = (
  url: string,
  init?: { signal?: AbortSignal },
) => Promise<{ ok: boolean; status: number; json(): Promise<unknown>; text(): Promise<string> }>;

export async function fetchNodePrices(baseUrl: string, region: string, vmSizes: readonly string[], fetchImpl: Fetch = fetch): Promise<NodePrice[]> {
  const out: NodePrice[] = [];
  for (const group of sizeGroups(vmSizes)) {
    const items: RetailPriceItem[] = [];
    let url: string | null | undefined = retailPricesUrl(baseUrl, region, group);
    for (let page = 0; url; page++) {
      if (page >= MAX_PAGES) throw new Error(`Retail Prices API: more than ${MAX_PAGES} pages for ${group.join(', ')} in ${region}`);
      const res = await fetchImpl(url, { signal: AbortSignal.timeout(TIMEOUT_MS) });
      if (!res.ok) throw new Error(`Retail Prices API answered ${res.status} for ${url}: ${(await res.text().catch(() => '')).slice(0, 300)}`);
      const parsed = RetailPricesPageSchema.safeParse(await res.json());
      if (!parsed.success)
        throw new Error(
          `Retail Prices API: unexpected answer from ${url}: ${parsed.error.issues[0]?.message ?? 'invalid'} at ${parsed.error.issues[0]?.path.join('.') ?? ''}`,
        );
      items.push(...parsed.data.Items);
      url = parsed.data.NextPageLink;
    }
    out.push(...nodePricesFrom(items, region));
  }
  return out;
}
