/**
 * The Admission table: one partition holding the ledger row (reservations, backfill counts, refusals: JSON split over
 * properties as the Jobs table does) and one row per waiting job. Every change to the ledger is committed in one
 * entity-group transaction with the waiting rows it deletes, guarded by the ledger's ETag: of two writers that read
 * the same ledger, one commits and the other re-reads and decides again. Only inserting a waiting row happens outside
 * that guard (the row is immutable, and a pass never grants a job it has not read), and so do inserting an
 * acknowledgement row (a job's run has seen its grant) and a release row (a job's run is over; the next pass folds it
 * into the ledger, under the guard).
 */
import type { TokenCredential } from '@azure/core-auth';
import { TableClient, type TableEntityResult, type TransactionAction } from '@azure/data-tables';
import { getJson, putJson, type EntityProps } from '../../core/state/entityCodec';
import type { PlacementNeeds, WaitingJob } from '../../core/scheduling/admission';
import { EMPTY_LEDGER, type AdmissionSnapshot, type Ledger, type LedgerChange } from '../../core/scheduling/ledger';

export const DEFAULT_ADMISSION_TABLE = 'Admission';
const PARTITION = 'admission';
const LEDGER_ROW = 'ledger';
const WAIT_PREFIX = 'w|';
const ACK_PREFIX = 'a|';
const RELEASE_PREFIX = 'r|';

/** A waiting row as stored: the job's claim plus when it was written. */
export interface StoredWaitingJob extends WaitingJob {
  enqueuedAt: string;
}

export interface ReadSnapshot extends AdmissionSnapshot {
  waiting: StoredWaitingJob[];
  acks: Set<string>;
  releases: Set<string>;
  /** The ledger row's ETag; undefined when the row does not exist yet. */
  etag?: string;
  /** When the read began: what the snapshot holds was written before this time. */
  readAt: Date;
}

export class AdmissionConflictError extends Error {
  constructor(attempts: number) {
    super(`the admission ledger changed under every one of ${attempts} attempts; giving up for now (the next pass continues)`);
    this.name = 'AdmissionConflictError';
  }
}

function statusOf(err: unknown): number | undefined {
  const s = (err as { statusCode?: unknown } | null)?.statusCode;
  return typeof s === 'number' ? s : undefined;
}

type Entity = TableEntityResult<Record<string, unknown>>;

function num(e: Record<string, unknown>, k: string): number {
  return typeof e[k] === 'number' ? (e[k] as number) : Number(e[k] ?? 0);
}

function toWaiting(e: Entity): StoredWaitingJob {
  return {
    jobId: String(e.jobId),
    owner: String(e.owner ?? ''),
    queue: String(e.queue ?? ''),
    priority: num(e, 'priority'),
    order: String(e.order ?? ''),
    family: String(e.family ?? ''),
    cores: num(e, 'cores'),
    nodes: num(e, 'nodes'),
    pools: num(e, 'pools'),
    jumpedBy: 0,
    enqueuedAt: String(e.enqueuedAt ?? ''),
    ...(typeof e.place === 'string' ? { place: parsePlace(e.place) } : {}),
  };
}

function parsePlace(text: string): PlacementNeeds | undefined {
  try {
    const v = JSON.parse(text) as PlacementNeeds;
    return v && typeof v === 'object' ? v : undefined;
  } catch {
    return undefined; // a row written by hand: placed on its demand alone
  }
}

function ledgerEntity(l: Ledger): { partitionKey: string; rowKey: string } & EntityProps {
  const props: EntityProps = { version: l.version, grantSeq: l.grantSeq };
  putJson(props, 'state', { reservations: l.reservations, jumps: l.jumps, refused: l.refused });
  return { partitionKey: PARTITION, rowKey: LEDGER_ROW, ...props };
}

function toLedger(e: Entity): Ledger {
  const state = getJson<Pick<Ledger, 'reservations' | 'jumps' | 'refused'>>(e, 'state') ?? { reservations: {}, jumps: {}, refused: {} };
  return {
    version: num(e, 'version'),
    grantSeq: num(e, 'grantSeq'),
    reservations: state.reservations ?? {},
    jumps: state.jumps ?? {},
    refused: state.refused ?? {},
  };
}

export class AdmissionStore {
  constructor(
    private readonly table: TableClient,
    private readonly maxAttempts = 30,
  ) {}

  static fromConnectionString(connectionString: string, table = DEFAULT_ADMISSION_TABLE): AdmissionStore {
    const allowInsecureConnection = /DefaultEndpointsProtocol=http;|TableEndpoint=http:|UseDevelopmentStorage=true/i.test(connectionString);
    return new AdmissionStore(TableClient.fromConnectionString(connectionString, table, { allowInsecureConnection }));
  }

  static fromTableEndpoint(endpoint: string, credential: TokenCredential, table = DEFAULT_ADMISSION_TABLE): AdmissionStore {
    return new AdmissionStore(new TableClient(endpoint, table, credential, { allowInsecureConnection: endpoint.startsWith('http://') }));
  }

  async ensureTable(): Promise<void> {
    await this.table.createTable();
  }

  /** The whole partition: the ledger (empty when it was never written) and the waiting rows. */
  async read(): Promise<ReadSnapshot> {
    const readAt = new Date();
    let ledger: Ledger = EMPTY_LEDGER;
    let etag: string | undefined;
    const waiting: StoredWaitingJob[] = [];
    const acks = new Set<string>();
    const releases = new Set<string>();
    const rows = this.table.listEntities<Record<string, unknown>>({ queryOptions: { filter: `PartitionKey eq '${PARTITION}'` } });
    for await (const e of rows) {
      if (e.rowKey === LEDGER_ROW) {
        ledger = toLedger(e);
        etag = e.etag;
      } else if (String(e.rowKey).startsWith(WAIT_PREFIX)) {
        waiting.push(toWaiting(e));
      } else if (String(e.rowKey).startsWith(ACK_PREFIX)) {
        acks.add(String(e.rowKey).slice(ACK_PREFIX.length));
      } else if (String(e.rowKey).startsWith(RELEASE_PREFIX)) {
        releases.add(String(e.rowKey).slice(RELEASE_PREFIX.length));
      }
    }
    return { ledger, waiting, acks, releases, etag, readAt };
  }

  /** Inserts the job's waiting row unless it is there already (a retried call). */
  async enqueue(job: Omit<StoredWaitingJob, 'jumpedBy'>): Promise<void> {
    const { jobId, owner, queue, priority, order, family, cores, nodes, pools, enqueuedAt, place } = job;
    // What placement over several accounts needs (size, Spot cores, staging accounts, budget), as one JSON column.
    const placeProps = place ? { place: JSON.stringify(place) } : {};
    try {
      await this.table.createEntity({
        partitionKey: PARTITION,
        rowKey: WAIT_PREFIX + jobId,
        jobId,
        owner,
        queue,
        priority,
        order,
        family,
        cores,
        nodes,
        pools,
        enqueuedAt,
        ...placeProps,
      });
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
    }
  }

  /** Records that the job's run has seen its grant or refusal (idempotent; outside the ledger's guard on purpose). */
  async ack(jobId: string): Promise<void> {
    await this.insertOnce(ACK_PREFIX, jobId);
  }

  /** Records that the job's run is over: the next pass gives back what it held (idempotent; outside the guard on purpose). */
  async release(jobId: string): Promise<void> {
    await this.insertOnce(RELEASE_PREFIX, jobId);
  }

  private async insertOnce(prefix: string, jobId: string): Promise<void> {
    try {
      await this.table.createEntity({ partitionKey: PARTITION, rowKey: prefix + jobId, jobId });
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
    }
  }

  /**
   * Commits `change` if the ledger is still what `read` saw: false when someone else wrote first (the caller reads
   * again and decides again). A change without a ledger commits nothing.
   */
  async commit(seen: ReadSnapshot, change: LedgerChange): Promise<boolean> {
    if (!change.ledger) return true;
    const ledger = ledgerEntity(change.ledger);
    const actions: TransactionAction[] = [
      seen.etag === undefined ? ['create', ledger] : ['update', ledger, 'Replace', { etag: seen.etag }],
      ...change.deleteWaiting.map((id): TransactionAction => ['delete', { partitionKey: PARTITION, rowKey: WAIT_PREFIX + id }]),
      ...(change.deleteAcks ?? []).map((id): TransactionAction => ['delete', { partitionKey: PARTITION, rowKey: ACK_PREFIX + id }]),
      ...(change.deleteReleases ?? []).map((id): TransactionAction => ['delete', { partitionKey: PARTITION, rowKey: RELEASE_PREFIX + id }]),
    ];
    try {
      await this.table.submitTransaction(actions);
      return true;
    } catch (err) {
      // 412: the ledger changed; 409: another writer created it first; 404: a waiting row is gone (another writer).
      const status = statusOf(err);
      if (status === 412 || status === 409 || status === 404) return false;
      throw err;
    }
  }

  /** Read → plan → commit until a commit lands (jittered retries). Returns the plan that was committed and the snapshot it was planned on. */
  async mutate<T extends LedgerChange>(plan: (s: ReadSnapshot) => T): Promise<{ result: T; snapshot: ReadSnapshot }> {
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const snapshot = await this.read();
      const result = plan(snapshot);
      if (await this.commit(snapshot, result)) return { result, snapshot };
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 10 * attempt)));
    }
    throw new AdmissionConflictError(this.maxAttempts);
  }
}
