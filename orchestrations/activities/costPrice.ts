import { nodePrices } from '../../shared/services';
import type { PriceQuote } from '../../shared/core/ops/cost';
import { registerActivity } from './registration';

/**
 * The price of one node-hour of the job's VM size, with where it comes from and as of when (the Retail Prices API
 * through its cache, or the configured table as the marked fallback). Looked up once per job: the orchestrator
 * never reads configuration or the network.
 */
export async function costPrice(input: { vmSize: string }): Promise<PriceQuote> {
  return (await nodePrices()).quote(input.vmSize);
}

registerActivity('costPrice', costPrice);
