/**
 * Refreshes the cached node prices from the Azure Retail Prices API once a day (PRICES_REFRESH_SCHEDULE), for every
 * size the cache or the price table knows, so a job's price is a table read. Adapter only; one log line a run.
 */
import { app, type InvocationContext, type Timer } from '@azure/functions';
import { pricesRefreshSchedule } from '../shared/adapters/config';
import { nodePrices } from '../shared/services';

export async function pricesRefreshTimer(_timer: Timer, context: InvocationContext): Promise<void> {
  const report = await (await nodePrices()).refresh();
  const line = JSON.stringify({ event: 'pricesRefresh', ...report });
  if (report.error) context.warn(line);
  else context.info(line);
}

app.timer('pricesRefresh', { schedule: pricesRefreshSchedule(), runOnStartup: false, handler: pricesRefreshTimer });
