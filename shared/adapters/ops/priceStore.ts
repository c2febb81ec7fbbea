/**
 * The node prices read from the Retail Prices API, kept in host storage with when they were fetched (the NodePrices
 * table: PartitionKey = region, RowKey = the VM size in lower case), so a job's price is one table read and the API
 * is asked once a day by the refresh timer, not once a job.
 */
import type { TokenCredential } from '@azure/core-auth';
import { odata, RestError, TableClient } from '@azure/data-tables';
import type { CachedNodePrice } from '../../core/ops/priceQuote';

export const DEFAULT_PRICES_TABLE = 'NodePrices';

interface PriceRow {
  partitionKey: string;
  rowKey: string;
  vmSize: string;
  currency: string;
  dedicated?: number;
  spot?: number;
  lowPriority?: number;
  effectiveStartDate: string;
  meterName: string;
  fetchedAt: string;
}

const fromRow = (r: PriceRow): CachedNodePrice => ({
  vmSize: r.vmSize,
  region: r.partitionKey,
  currency: r.currency,
  ...(typeof r.dedicated === 'number' ? { dedicated: r.dedicated } : {}),
  ...(typeof r.spot === 'number' ? { spot: r.spot } : {}),
  ...(typeof r.lowPriority === 'number' ? { lowPriority: r.lowPriority } : {}),
  effectiveStartDate: r.effectiveStartDate,
  meterName: r.meterName,
  fetchedAt: r.fetchedAt,
});

export class PriceStore {
  constructor(private readonly table: TableClient) {}

  static fromConnectionString(connectionString: string, table = DEFAULT_PRICES_TABLE): PriceStore {
    const allowInsecureConnection = /DefaultEndpointsProtocol=http;|TableEndpoint=http:|UseDevelopmentStorage=true/i.test(connectionString);
    return new PriceStore(TableClient.fromConnectionString(connectionString, table, { allowInsecureConnection }));
  }

  static fromTableEndpoint(endpoint: string, credential: TokenCredential, table = DEFAULT_PRICES_TABLE): PriceStore {
    return new PriceStore(new TableClient(endpoint, table, credential, { allowInsecureConnection: endpoint.startsWith('http://') }));
  }

  async ensureTable(): Promise<void> {
    await this.table.createTable();
  }

  async get(region: string, vmSize: string): Promise<CachedNodePrice | undefined> {
    try {
      return fromRow(await this.table.getEntity<PriceRow>(region.toLowerCase(), vmSize.toLowerCase()));
    } catch (err) {
      if (err instanceof RestError && err.statusCode === 404) return undefined;
      throw err;
    }
  }

  /** Every size cached for a region (what the daily refresh asks for again). */
  async list(region: string): Promise<CachedNodePrice[]> {
    const out: CachedNodePrice[] = [];
    for await (const r of this.table.listEntities<PriceRow>({ queryOptions: { filter: odata`PartitionKey eq ${region.toLowerCase()}` } })) out.push(fromRow(r));
    return out;
  }

  /** Replaces each size's row (a price the API no longer lists keeps its old row and date). */
  async put(prices: readonly CachedNodePrice[]): Promise<void> {
    for (const p of prices) {
      const row: PriceRow = {
        partitionKey: p.region.toLowerCase(),
        rowKey: p.vmSize.toLowerCase(),
        vmSize: p.vmSize,
        currency: p.currency,
        effectiveStartDate: p.effectiveStartDate,
        meterName: p.meterName,
        fetchedAt: p.fetchedAt,
        ...(p.dedicated !== undefined ? { dedicated: p.dedicated } : {}),
        ...(p.spot !== undefined ? { spot: p.spot } : {}),
        ...(p.lowPriority !== undefined ? { lowPriority: p.lowPriority } : {}),
      };
      await this.table.upsertEntity(row, 'Replace');
    }
  }
}
