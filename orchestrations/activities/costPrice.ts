import * as df from 'durable-functions';
import { Activities } from '../contracts';
import { appConfig } from './services';
import { pricePerNodeHour } from '../../shared/ops/priceTable';
import type { PriceQuote } from '../../shared/ops/cost';

/** The configured price of one node-hour of the job's VM size (the orchestrator never reads configuration). */
export async function costPrice(input: { vmSize: string }): Promise<PriceQuote> {
  const table = appConfig().ops.priceTable;
  return { vmSize: input.vmSize, pricePerNodeHour: pricePerNodeHour(table, input.vmSize), currency: table.currency, source: table.source };
}

df.app.activity(Activities.costPrice, { handler: costPrice });
