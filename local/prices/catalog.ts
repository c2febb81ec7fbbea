/**
 * What the local Retail Prices stand-in serves: meters in the Retail Prices API's item format for a few regions.
 * NOT Azure's prices: the pay-as-you-go figures are the project's built-in list (shared/core/config/priceTable.ts,
 * recalled for mid-2024, unverified; this machine cannot reach prices.azure.com), Spot and Low Priority are set at
 * 20% of it and Windows at 1.5×, so the client's choice among a size's meters is exercised as on Azure. Each size
 * gets the meters Azure lists for it: Linux and Windows, each pay-as-you-go, Spot and Low Priority.
 */
import { DEFAULT_PRICES_AS_OF, DEFAULT_PRICES_PER_HOUR } from '../../shared/core/config/priceTable';
import type { RetailPriceItem } from '../../shared/core/ops/retailPrices';

const REGIONS: readonly { armRegionName: string; location: string; factor: number }[] = [
  { armRegionName: 'eastus', location: 'US East', factor: 1 },
  { armRegionName: 'westeurope', location: 'EU West', factor: 1.1 },
  { armRegionName: 'southcentralus', location: 'US South Central', factor: 1 },
];

/** `Standard_HB120rs_v3` → meter "HB120rs v3", product series "HBv3" style names as the API writes them. */
function meterBase(size: string): string {
  return size.replace(/^Standard_/, '').replace(/_/g, ' ');
}

function series(size: string): string {
  const m = /^Standard_([A-Z]+)\d+[a-z]*(?:_(v\d+))?$/.exec(size);
  return m ? `${m[1]}${m[2] ?? ''} Series` : 'Series';
}

const round = (n: number) => Math.round(n * 1e6) / 1e6;

export function standInItems(): RetailPriceItem[] {
  const out: RetailPriceItem[] = [];
  const effective = `${DEFAULT_PRICES_AS_OF}T00:00:00Z`;
  for (const region of REGIONS) {
    for (const [size, price] of Object.entries(DEFAULT_PRICES_PER_HOUR)) {
      const base = meterBase(size);
      for (const os of ['', ' Windows']) {
        for (const [suffix, factor] of [
          ['', 1],
          [' Spot', 0.2],
          [' Low Priority', 0.2],
        ] as const) {
          const retail = round(price * region.factor * factor * (os ? 1.5 : 1));
          out.push({
            currencyCode: 'USD',
            retailPrice: retail,
            unitPrice: retail,
            armRegionName: region.armRegionName,
            location: region.location,
            effectiveStartDate: effective,
            meterName: `${base}${suffix}`,
            productName: `Virtual Machines ${series(size)}${os}`,
            skuName: `${base}${suffix}`,
            serviceName: 'Virtual Machines',
            armSkuName: size,
            unitOfMeasure: '1 Hour',
            type: 'Consumption',
            isPrimaryMeterRegion: true,
          });
        }
      }
    }
  }
  return out;
}
