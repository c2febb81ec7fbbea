/**
 * Delivery state in the host storage's tables, beside Jobs and JobEvents:
 *
 *   EventCursors   PartitionKey = job id, RowKey = endpoint name: delivered, attempt, nextAttemptAt, lastError and the
 *                  sender's lease (leaseUntil, leaseOwner), changed only with the row's ETag. One more row,
 *                  PartitionKey "~relay" (never a job id), holds the relay's watermark.
 *   EventAttempts  PartitionKey = job id, RowKey = `<endpoint>|<seq, 10 digits>|<try, 4 digits>`: every try of every
 *                  event, written "sending" before the request and given its outcome after it, so a try the host died
 *                  in stays visible as "sending".
 */
import type { TokenCredential } from '@azure/core-auth';
import { odata, TableClient } from '@azure/data-tables';
import type { CursorState } from './cursor';

export const CURSORS_TABLE = 'EventCursors';
export const ATTEMPTS_TABLE = 'EventAttempts';
const RELAY_PARTITION = '~relay';
const WATERMARK_ROW = 'watermark';

export interface StoredCursor extends CursorState {
  jobId: string;
  endpoint: string;
  leaseUntil?: string;
  leaseOwner?: string;
  /** Absent for a cursor not written yet. */
  etag?: string;
}

export type AttemptOutcome = 'sending' | 'delivered' | 'failed' | 'abandoned' | 'missing';

export interface AttemptRecord {
  jobId: string;
  endpoint: string;
  seq: number;
  eventId: string;
  /** 1-based try number of this event at this endpoint. */
  attempt: number;
  startedAt: string;
  outcome: AttemptOutcome;
  finishedAt?: string;
  /** HTTP status the endpoint answered, when it answered. */
  status?: number;
  error?: string;
  durationMs?: number;
}

function statusOf(err: unknown): number | undefined {
  const s = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

export function attemptRowKey(endpoint: string, seq: number, attempt: number): string {
  return `${endpoint}|${String(seq).padStart(10, '0')}|${String(attempt).padStart(4, '0')}`;
}

export class DeliveryStore {
  constructor(
    private readonly cursors: TableClient,
    private readonly attempts: TableClient,
  ) {}

  static fromConnectionString(connectionString: string): DeliveryStore {
    const options = { allowInsecureConnection: /DefaultEndpointsProtocol=http;|TableEndpoint=http:|UseDevelopmentStorage=true/i.test(connectionString) };
    return new DeliveryStore(
      TableClient.fromConnectionString(connectionString, CURSORS_TABLE, options),
      TableClient.fromConnectionString(connectionString, ATTEMPTS_TABLE, options),
    );
  }

  static fromTableEndpoint(endpoint: string, credential: TokenCredential): DeliveryStore {
    const options = { allowInsecureConnection: endpoint.startsWith('http://') };
    return new DeliveryStore(new TableClient(endpoint, CURSORS_TABLE, credential, options), new TableClient(endpoint, ATTEMPTS_TABLE, credential, options));
  }

  async ensureTables(): Promise<void> {
    await this.cursors.createTable();
    await this.attempts.createTable();
  }

  async cursor(jobId: string, endpoint: string): Promise<StoredCursor> {
    try {
      const e = await this.cursors.getEntity<Record<string, unknown>>(jobId, endpoint);
      const str = (k: string) => (typeof e[k] === 'string' && e[k] !== '' ? (e[k] as string) : undefined);
      const c: StoredCursor = {
        jobId,
        endpoint,
        etag: e.etag,
        delivered: typeof e.delivered === 'number' ? e.delivered : 0,
        attempt: typeof e.attempt === 'number' ? e.attempt : 0,
      };
      for (const k of ['nextAttemptAt', 'lastError', 'leaseUntil', 'leaseOwner'] as const) {
        const v = str(k);
        if (v !== undefined) c[k] = v;
      }
      return c;
    } catch (err) {
      if (statusOf(err) === 404) return { jobId, endpoint, delivered: 0, attempt: 0 };
      throw err;
    }
  }

  /**
   * Writes the cursor if nobody else wrote it since it was read (its ETag; absent = it must not exist yet). Returns the
   * cursor with its new ETag, or undefined when another sender got there first.
   */
  async save(c: StoredCursor): Promise<StoredCursor | undefined> {
    const entity = {
      partitionKey: c.jobId,
      rowKey: c.endpoint,
      delivered: c.delivered,
      attempt: c.attempt,
      // Replace writes the whole entity: an empty string clears a field.
      nextAttemptAt: c.nextAttemptAt ?? '',
      lastError: c.lastError ?? '',
      leaseUntil: c.leaseUntil ?? '',
      leaseOwner: c.leaseOwner ?? '',
    };
    try {
      const res = c.etag === undefined ? await this.cursors.createEntity(entity) : await this.cursors.updateEntity(entity, 'Replace', { etag: c.etag });
      return { ...c, etag: res.etag };
    } catch (err) {
      if (statusOf(err) === 409 || statusOf(err) === 412 || (c.etag !== undefined && statusOf(err) === 404)) return undefined;
      throw err;
    }
  }

  /** Cursors whose scheduled retry is due (the relay's second source besides recently updated jobs). */
  async dueCursors(now: Date): Promise<{ jobId: string; endpoint: string }[]> {
    const out: { jobId: string; endpoint: string }[] = [];
    const filter = odata`nextAttemptAt ne '' and nextAttemptAt le ${now.toISOString()}`;
    for await (const e of this.cursors.listEntities<Record<string, unknown>>({ queryOptions: { filter, select: ['PartitionKey', 'RowKey'] } })) {
      if (e.partitionKey !== RELAY_PARTITION) out.push({ jobId: String(e.partitionKey), endpoint: String(e.rowKey) });
    }
    return out;
  }

  async recordAttempt(a: AttemptRecord): Promise<void> {
    const entity: { partitionKey: string; rowKey: string } & Record<string, string | number> = {
      partitionKey: a.jobId,
      rowKey: attemptRowKey(a.endpoint, a.seq, a.attempt),
      endpoint: a.endpoint,
      seq: a.seq,
      eventId: a.eventId,
      attempt: a.attempt,
      startedAt: a.startedAt,
      outcome: a.outcome,
    };
    if (a.finishedAt !== undefined) entity.finishedAt = a.finishedAt;
    if (a.status !== undefined) entity.status = a.status;
    if (a.error !== undefined) entity.error = a.error.slice(0, 2_000);
    if (a.durationMs !== undefined) entity.durationMs = a.durationMs;
    await this.attempts.upsertEntity(entity, 'Replace');
  }

  /** Every try recorded for a job, in endpoint, seq and try order. */
  async attemptsOf(jobId: string): Promise<AttemptRecord[]> {
    const out: AttemptRecord[] = [];
    for await (const e of this.attempts.listEntities<Record<string, unknown>>({ queryOptions: { filter: odata`PartitionKey eq ${jobId}` } })) {
      const rec: AttemptRecord = {
        jobId,
        endpoint: String(e.endpoint),
        seq: Number(e.seq),
        eventId: String(e.eventId),
        attempt: Number(e.attempt),
        startedAt: String(e.startedAt),
        outcome: String(e.outcome) as AttemptOutcome,
      };
      if (typeof e.finishedAt === 'string') rec.finishedAt = e.finishedAt;
      if (typeof e.status === 'number') rec.status = e.status;
      if (typeof e.error === 'string') rec.error = e.error;
      if (typeof e.durationMs === 'number') rec.durationMs = e.durationMs;
      out.push(rec);
    }
    return out;
  }

  async watermark(): Promise<{ at?: string; etag?: string }> {
    try {
      const e = await this.cursors.getEntity<Record<string, unknown>>(RELAY_PARTITION, WATERMARK_ROW);
      return { at: typeof e.at === 'string' ? e.at : undefined, etag: e.etag };
    } catch (err) {
      if (statusOf(err) === 404) return {};
      throw err;
    }
  }

  async setWatermark(at: string): Promise<void> {
    await this.cursors.upsertEntity({ partitionKey: RELAY_PARTITION, rowKey: WATERMARK_ROW, at }, 'Replace');
  }

  /** Deletes a job's cursors and attempt records (the retention purge). Already gone is fine. */
  async purge(jobId: string): Promise<number> {
    let n = 0;
    for (const table of [this.cursors, this.attempts]) {
      for await (const e of table.listEntities<Record<string, unknown>>({
        queryOptions: { filter: odata`PartitionKey eq ${jobId}`, select: ['PartitionKey', 'RowKey'] },
      })) {
        try {
          await table.deleteEntity(String(e.partitionKey), String(e.rowKey));
          n++;
        } catch (err) {
          if (statusOf(err) !== 404) throw err;
        }
      }
    }
    return n;
  }
}
