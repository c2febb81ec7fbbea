/**
 * The Batch accounts' facts kept in host storage with the time they were read (the AccountFacts table: PartitionKey =
 * the Batch account's name, RowKey = the part: `images`, `sizes` or `quota`), so every Functions instance shares one
 * read per time to live and a cold start reads a table row, not the management plane (shared/adapters/batch/facts.ts).
 *
 * A part's value is JSON split over properties `v0`, `v1`, … of at most CHUNK characters: a Table property holds at
 * most 64 KiB (32K UTF-16 characters) and a region's size list can come near that; an entity holds 1 MiB.
 */
import type { TokenCredential } from '@azure/core-auth';
import { RestError, TableClient } from '@azure/data-tables';

export const DEFAULT_FACTS_TABLE = 'AccountFacts';

export type FactPart = 'images' | 'sizes' | 'quota';

/** One part as read: its value and when (epoch ms). */
export interface KeptFact<T> {
  value: T;
  at: number;
}

/** What the facts cache needs from the table (a fake in unit tests, FactsStore over Azurite or Azure). */
export interface FactsPersistence {
  get<T>(account: string, part: FactPart): Promise<KeptFact<T> | undefined>;
  put<T>(account: string, part: FactPart, kept: KeptFact<T>): Promise<void>;
}

const CHUNK = 30_000;
const MAX_CHUNKS = 30; // 30 × 30K characters × 2 bytes stays under the 1 MiB entity limit

type FactRow = { partitionKey: string; rowKey: string; readAt: string; chunks: number } & Record<string, unknown>;

export class FactsStore implements FactsPersistence {
  constructor(private readonly table: TableClient) {}

  static fromConnectionString(connectionString: string, table = DEFAULT_FACTS_TABLE): FactsStore {
    const allowInsecureConnection = /DefaultEndpointsProtocol=http;|TableEndpoint=http:|UseDevelopmentStorage=true/i.test(connectionString);
    return new FactsStore(TableClient.fromConnectionString(connectionString, table, { allowInsecureConnection }));
  }

  static fromTableEndpoint(endpoint: string, credential: TokenCredential, table = DEFAULT_FACTS_TABLE): FactsStore {
    return new FactsStore(new TableClient(endpoint, table, credential, { allowInsecureConnection: endpoint.startsWith('http://') }));
  }

  async ensureTable(): Promise<void> {
    await this.table.createTable();
  }

  async get<T>(account: string, part: FactPart): Promise<KeptFact<T> | undefined> {
    let row: FactRow;
    try {
      row = await this.table.getEntity<FactRow>(account.toLowerCase(), part);
    } catch (err) {
      if (err instanceof RestError && err.statusCode === 404) return undefined;
      throw err;
    }
    const at = Date.parse(row.readAt);
    if (!Number.isFinite(at) || !Number.isInteger(row.chunks) || row.chunks < 1 || row.chunks > MAX_CHUNKS) return undefined;
    let json = '';
    for (let i = 0; i < row.chunks; i++) {
      const piece = row[`v${i}`];
      if (typeof piece !== 'string') return undefined; // a torn or foreign row: read the account again
      json += piece;
    }
    try {
      return { value: JSON.parse(json) as T, at };
    } catch {
      return undefined;
    }
  }

  async put<T>(account: string, part: FactPart, kept: KeptFact<T>): Promise<void> {
    const json = JSON.stringify(kept.value);
    const chunks = Math.max(1, Math.ceil(json.length / CHUNK));
    if (chunks > MAX_CHUNKS) throw new Error(`the ${part} of Batch account ${account} are too large for one table row (${json.length} characters)`);
    const row: FactRow = { partitionKey: account.toLowerCase(), rowKey: part, readAt: new Date(kept.at).toISOString(), chunks };
    for (let i = 0; i < chunks; i++) row[`v${i}`] = json.slice(i * CHUNK, (i + 1) * CHUNK);
    await this.table.upsertEntity(row, 'Replace');
  }
}
