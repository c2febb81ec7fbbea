import { appConfig } from '../../shared/services';
import { pricePerNodeHour } from '../../shared/config/priceTable';
import type { PriceQuote } from '../../shared/ops/cost';
import { registerActivity } from '../runtime/activityCalls';

/** The configured price of one node-hour of the job's VM size (the orchestrator never reads configuration). */
export async function costPrice(input: { vmSize: string }): Promise<PriceQuote> {
  const table = appConfig().ops.priceTable;
  return { vmSize: input.vmSize, pricePerNodeHour: pricePerNodeHour(table, input.vmSize), currency: table.currency, source: table.source };
}

registerActivity('costPrice', costPrice);
