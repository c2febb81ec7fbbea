/**
 * Persistence in Azure Storage (Azurite locally), modelled on the Durable Task Azure Storage provider:
 *  - table `<hub>Instances`: one row per instance (status, input, output, custom status, times);
 *  - table `<hub>History`: one row per history event (partition = instance), plus a sentinel row
 *    holding the engine's state of the instance. An episode's rows and the sentinel are written by
 *    entity-group transactions; the sentinel (with its ETag check) goes in the LAST one, so an episode
 *    is committed exactly when the sentinel is: rows past the sentinel's historyLength are leftovers of
 *    a crashed commit and are ignored (and overwritten by the next one);
 *  - queue `<hub>-control-00`: orchestration messages (one history event each; timers are messages
 *    with a visibility delay); queue `<hub>-workitems`: activity work items;
 *  - container `<hub>-largemessages`: a message too large for a queue message (64 KiB), gzipped, as the
 *    provider's large-message support keeps it; the queue message names the blob. Blobs live under the
 *    instance's id and go when the instance is purged, as the provider's do.
 */
import { randomUUID } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { ContainerClient } from '@azure/storage-blob';
import { odata, type TableClient, type TableEntity, type TransactionAction } from '@azure/data-tables';
import type { QueueClient } from '@azure/storage-queue';
import { blobServiceClient, queueServiceClient, tableClient, type StorageConnection } from '../host/storageConnection';
import type { HistoryEvent } from './history';
import { EventType } from './history';
import type { ActivityWorkItem, ControlBatch, ControlEnvelope, ControlMessage, InstanceState, ParentRef, RuntimeStatus, WorkItemMessage } from './state';
import { controlShapeProblem, workItemShapeProblem } from './state';
import { assertTransactionSafe, escapeForTable } from './tableSafe';

const CHUNK = 30_000; // characters per string property (Azure Table's limit is 64 KiB = 32K UTF-16 chars)
const SENTINEL = '~sentinel';
const MAX_BATCH = 100;
/** Azure Storage queue messages are at most 64 KiB; base64 costs a third. */
const MAX_PACK_CHARS = 46 * 1024;
/** The base64 text of a queue message, at most (Azure Storage's limit). */
const MAX_QUEUE_MESSAGE_CHARS = 64 * 1024;
const MAX_ITEMS_PER_MESSAGE = 64;
/** Queue visibility delays are capped at 7 days; longer timers are re-sent when they come back early. */
const MAX_VISIBILITY_SECONDS = 6 * 24 * 3600;

export interface InstanceRow {
  instanceId: string;
  name: string;
  runtimeStatus: RuntimeStatus;
  executionId: string;
  input?: string;
  output?: string;
  customStatus?: string;
  createdTime: string;
  lastUpdatedTime: string;
  parent?: ParentRef;
}

export interface LoadedInstance {
  state: InstanceState;
  etag: string;
  history: HistoryEvent[];
}

export interface ReceivedMessage<T> {
  queueMessageId: string;
  popReceipt: string;
  dequeueCount: number;
  body: T;
}

export interface InstanceQuery {
  createdTimeFrom?: Date;
  createdTimeTo?: Date;
  /** Status names to match (a name no instance has matches nothing). */
  runtimeStatus?: string[];
  instanceIdPrefix?: string;
}

/** Table keys may not contain / \ # ? or control characters. */
export const encodeKey = (s: string): string => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
export const decodeKey = (s: string): string => decodeURIComponent(s);

export function putLarge(entity: Record<string, unknown>, prop: string, value: string | undefined): void {
  if (value === undefined) return;
  if (value.length <= CHUNK) {
    entity[prop] = value;
    return;
  }
  const n = Math.ceil(value.length / CHUNK);
  entity[prop] = value.slice(0, CHUNK);
  for (let i = 1; i < n; i++) entity[`${prop}_${i}`] = value.slice(i * CHUNK, (i + 1) * CHUNK);
  entity[`${prop}_n`] = n;
}

export function getLarge(entity: Record<string, unknown>, prop: string): string | undefined {
  const first = entity[prop];
  if (typeof first !== 'string') return undefined;
  const n = typeof entity[`${prop}_n`] === 'number' ? (entity[`${prop}_n`] as number) : 1;
  let s = first;
  for (let i = 1; i < n; i++) s += String(entity[`${prop}_${i}`] ?? '');
  return s;
}

const historyRowKey = (executionId: string, index: number): string => `${encodeKey(executionId)}|${String(index).padStart(8, '0')}`;

export class EtagConflictError extends Error {}

/** A queue message no receiver can ever read (not our JSON, or a large message whose blob is gone or damaged). */
export interface UnreadableMessage {
  queue: string;
  queueMessageId: string;
  dequeueCount: number;
  reason: string;
}

export class DurableStore {
  readonly instances: TableClient;
  readonly history: TableClient;
  readonly control: QueueClient;
  readonly workItems: QueueClient;
  readonly largeMessages: ContainerClient;
  /**
   * Told of every unreadable message the store deleted instead of handing out: kept in the queue, it would fail every
   * receive it came back in and stall the instances behind it (a purge deletes the blobs of messages still queued).
   */
  onUnreadable: (m: UnreadableMessage) => void = () => undefined;

  /** `storage`: the host's storage (a connection string, e.g. a timeline tool's `--conn`, or the host's connection). */
  constructor(
    storage: string | StorageConnection,
    readonly hubName: string,
  ) {
    if (!/^[A-Za-z][A-Za-z0-9]{2,44}$/.test(hubName)) {
      throw new Error(`Task hub name "${hubName}" is invalid: use 3-45 letters and digits, starting with a letter`);
    }
    const conn: StorageConnection =
      typeof storage === 'string' ? { kind: 'connectionString', name: 'AzureWebJobsStorage', connectionString: storage } : storage;
    this.instances = tableClient(conn, `${hubName}Instances`);
    this.history = tableClient(conn, `${hubName}History`);
    const qs = queueServiceClient(conn);
    this.control = qs.getQueueClient(`${hubName.toLowerCase()}-control-00`);
    this.workItems = qs.getQueueClient(`${hubName.toLowerCase()}-workitems`);
    this.largeMessages = blobServiceClient(conn).getContainerClient(`${hubName.toLowerCase()}-largemessages`);
  }

  async init(): Promise<void> {
    await Promise.all([
      this.instances.createTable(),
      this.history.createTable(),
      this.control.createIfNotExists(),
      this.workItems.createIfNotExists(),
      this.largeMessages.createIfNotExists(),
    ]);
  }

  // ---- Instances table ------------------------------------------------------------------------

  async getInstance(instanceId: string): Promise<InstanceRow | undefined> {
    try {
      const e = await this.instances.getEntity<Record<string, unknown>>(encodeKey(instanceId), '');
      return rowFromEntity(e);
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
  }

  async putInstance(row: InstanceRow): Promise<void> {
    await this.instances.upsertEntity(entityFromRow(row), 'Replace');
  }

  /** Inserts a new instance row; false when a row with this id exists (a concurrent start won). */
  async createInstance(row: InstanceRow): Promise<boolean> {
    try {
      await this.instances.createEntity(entityFromRow(row));
      return true;
    } catch (err) {
      if (isStatus(err, 409)) return false;
      throw err;
    }
  }

  async deleteInstance(instanceId: string): Promise<void> {
    await ignore404(this.instances.deleteEntity(encodeKey(instanceId), ''));
  }

  /** One page of instances matching the query; `continuationToken` is the table's own token. */
  async queryInstances(q: InstanceQuery, pageSize: number, continuationToken?: string): Promise<{ rows: InstanceRow[]; next?: string }> {
    const iter = this.instances.listEntities<Record<string, unknown>>({ queryOptions: { filter: instanceFilter(q) } }).byPage({
      maxPageSize: pageSize,
      continuationToken,
    });
    const page = await iter.next();
    if (page.done) return { rows: [] };
    const rows = (page.value as Record<string, unknown>[]).map(rowFromEntity);
    const next = (page.value as { continuationToken?: string }).continuationToken;
    return { rows, next: next || undefined };
  }

  async *allInstances(q: InstanceQuery): AsyncGenerator<InstanceRow> {
    for await (const e of this.instances.listEntities<Record<string, unknown>>({ queryOptions: { filter: instanceFilter(q) } })) {
      yield rowFromEntity(e);
    }
  }

  // ---- History table --------------------------------------------------------------------------

  async load(instanceId: string): Promise<LoadedInstance | undefined> {
    const pk = encodeKey(instanceId);
    let sentinel: Record<string, unknown> & { etag?: string };
    try {
      sentinel = await this.history.getEntity<Record<string, unknown>>(pk, SENTINEL);
    } catch (err) {
      if (isStatus(err, 404)) return undefined;
      throw err;
    }
    const state = JSON.parse(getLarge(sentinel, 'State') ?? 'null') as InstanceState;
    const history = await this.loadHistory(instanceId, state.executionId, state.historyLength);
    return { state, etag: sentinel.etag ?? '', history };
  }

  async loadHistory(instanceId: string, executionId: string, length: number): Promise<HistoryEvent[]> {
    if (length === 0) return [];
    const pk = encodeKey(instanceId);
    const prefix = `${encodeKey(executionId)}|`;
    const filter = odata`PartitionKey eq ${pk} and RowKey ge ${prefix} and RowKey lt ${`${prefix}~`}`;
    const out: HistoryEvent[] = [];
    for await (const e of this.history.listEntities<Record<string, unknown>>({ queryOptions: { filter } })) {
      const index = Number(String(e.rowKey).slice(prefix.length));
      if (index >= length) continue;
      out[index] = JSON.parse(getLarge(e, 'Data') ?? 'null') as HistoryEvent;
    }
    for (let i = 0; i < length; i++) {
      if (!out[i]) throw new Error(`History of instance '${instanceId}' execution '${executionId}' is missing event #${i} (expected ${length})`);
    }
    return out;
  }

  /**
   * Append `events` at `startIndex` of execution `executionId` and replace the sentinel with `state`,
   * failing with EtagConflictError if someone else committed since `etag` was read.
   */
  async commit(
    instanceId: string,
    etag: string | undefined,
    executionId: string,
    startIndex: number,
    events: HistoryEvent[],
    state: InstanceState,
  ): Promise<string> {
    const pk = encodeKey(instanceId);
    const rows: TransactionAction[] = events.map((e, i) => {
      const entity: Record<string, unknown> = {
        partitionKey: pk,
        rowKey: historyRowKey(executionId, startIndex + i),
        ExecutionId: executionId,
        EventType: EventType[e.EventType] ?? String(e.EventType),
        EventId: e.EventId,
        EventTime: e.Timestamp,
      };
      // Name is a diagnostic column (Data holds the event); event names come from callers, so escape them too.
      if (e.Name) entity.Name = escapeForTable(e.Name);
      putLarge(entity, 'Data', escapeForTable(JSON.stringify(e)));
      return ['upsert', entity as TableEntity, 'Replace'];
    });
    const sentinel: Record<string, unknown> = {
      partitionKey: pk,
      rowKey: SENTINEL,
      ExecutionId: state.executionId,
      HistoryLength: state.historyLength,
      RuntimeStatus: state.status,
    };
    putLarge(sentinel, 'State', escapeForTable(JSON.stringify(state)));
    const last: TransactionAction = etag ? ['update', sentinel as TableEntity, 'Replace', { etag }] : ['create', sentinel as TableEntity];
    // Rows first, sentinel in the last batch: the episode is committed iff the sentinel is.
    const batches: TransactionAction[][] = [];
    for (let i = 0; i < rows.length; i += MAX_BATCH - 1) batches.push(rows.slice(i, i + MAX_BATCH - 1));
    if (batches.length === 0) batches.push([]);
    batches[batches.length - 1].push(last);
    // Checked before anything is sent: an unstorable episode writes nothing (see tableSafe.ts).
    for (const batch of batches)
      assertTransactionSafe(
        `Instance '${instanceId}'`,
        batch.map((a) => a[1] as Record<string, unknown>),
      );
    for (let b = 0; b < batches.length - 1; b++) await this.history.submitTransaction(batches[b]);
    try {
      const res = await this.history.submitTransaction(batches[batches.length - 1]);
      const sub = res.subResponses[res.subResponses.length - 1];
      return sub?.etag ?? (await this.history.getEntity(pk, SENTINEL)).etag ?? '';
    } catch (err) {
      // 404: the sentinel we read is gone (the instance was purged meanwhile).
      if (isStatus(err, 412) || isStatus(err, 409) || (etag && isStatus(err, 404))) {
        throw new EtagConflictError(`Instance '${instanceId}' was changed by another writer (sentinel ETag ${etag ?? 'none'})`);
      }
      throw err;
    }
  }

  /** Delete history rows (and, unless `keepExecutionId` is given, the sentinel) of an instance. */
  async deleteHistory(instanceId: string, keepExecutionId?: string): Promise<void> {
    const pk = encodeKey(instanceId);
    const keepPrefix = keepExecutionId !== undefined ? `${encodeKey(keepExecutionId)}|` : undefined;
    const doomed: string[] = [];
    for await (const e of this.history.listEntities({ queryOptions: { filter: odata`PartitionKey eq ${pk}`, select: ['RowKey'] } })) {
      const rk = String(e.rowKey);
      if (keepPrefix !== undefined && (rk === SENTINEL || rk.startsWith(keepPrefix))) continue;
      doomed.push(rk);
    }
    for (let i = 0; i < doomed.length; i += MAX_BATCH) {
      const batch: TransactionAction[] = doomed.slice(i, i + MAX_BATCH).map((rk) => ['delete', { partitionKey: pk, rowKey: rk }]);
      await this.history.submitTransaction(batch);
    }
    if (keepExecutionId === undefined) await this.deleteLargeMessages(instanceId);
  }

  /** The instance's offloaded messages (a purge removes them, as the provider's purge does). */
  private async deleteLargeMessages(instanceId: string): Promise<void> {
    const names: string[] = [];
    for await (const b of this.largeMessages.listBlobsFlat({ prefix: `${encodeKey(instanceId)}/` })) names.push(b.name);
    await inParallel(names, 8, (name) => ignore404(this.largeMessages.deleteBlob(name)));
  }

  /**
   * The queue text of a message: the message itself, or, when it is larger than a queue message, a reference to
   * a blob holding it gzipped (the provider's large-message support: the message size has no limit of its own).
   */
  private async encode(body: { instanceId: string } | WorkItemMessage): Promise<string> {
    const text = Buffer.from(JSON.stringify(body), 'utf8').toString('base64');
    if (text.length <= MAX_QUEUE_MESSAGE_CHARS) return text;
    const instanceId = 'instanceId' in body ? body.instanceId : (body.items[0]?.instanceId ?? '');
    const blob = `${encodeKey(instanceId)}/message-${randomUUID()}.json.gz`;
    const gz = gzipSync(JSON.stringify(body));
    await this.largeMessages.getBlockBlobClient(blob).uploadData(gz, { blobHTTPHeaders: { blobContentType: 'application/json', blobContentEncoding: 'gzip' } });
    return Buffer.from(JSON.stringify({ largeMessageBlob: blob } satisfies LargeMessageRef), 'utf8').toString('base64');
  }

  /** `problem` says why a parsed message is not a T (undefined: it is one); such a message is unreadable. */
  private async receive<T>(q: QueueClient, max: number, visibilityTimeout: number, problem: (v: unknown) => string | undefined): Promise<ReceivedMessage<T>[]> {
    const res = await q.receiveMessages({ numberOfMessages: Math.max(1, Math.min(32, max)), visibilityTimeout });
    const read = await Promise.all(
      res.receivedMessageItems.map(async (m): Promise<ReceivedMessage<T> | undefined> => {
        let value: unknown;
        let why: string | undefined;
        try {
          const text: unknown = JSON.parse(Buffer.from(m.messageText, 'base64').toString('utf8'));
          value = isLargeMessageRef(text) ? await this.readLargeMessage(text.largeMessageBlob) : text;
          why = problem(value);
        } catch (err) {
          // Only what can never be read is dropped: not JSON, the blob gone, not gzip. Anything else (storage or network
          // trouble) says nothing about the message: the receive fails and it comes back.
          const code = (err as { code?: unknown }).code;
          if (!(err instanceof SyntaxError || isStatus(err, 404) || (typeof code === 'string' && code.startsWith('Z_')))) throw err;
          why = isStatus(err, 404) ? 'its large-message blob is gone' : (err as Error).message.split('\n')[0];
        }
        if (why !== undefined) {
          await ignore404(q.deleteMessage(m.messageId, m.popReceipt));
          this.onUnreadable({ queue: q.name, queueMessageId: m.messageId, dequeueCount: m.dequeueCount, reason: why });
          return undefined;
        }
        return { queueMessageId: m.messageId, popReceipt: m.popReceipt, dequeueCount: m.dequeueCount, body: value as T };
      }),
    );
    return read.filter((m): m is ReceivedMessage<T> => m !== undefined);
  }

  private async readLargeMessage(blob: string): Promise<unknown> {
    const data = await this.largeMessages.getBlockBlobClient(blob).downloadToBuffer();
    return JSON.parse(gunzipSync(data).toString('utf8')) as unknown;
  }

  // ---- Queues ---------------------------------------------------------------------------------

  /** Returns the milliseconds until the message becomes visible (delays are whole seconds, at most MAX_VISIBILITY_SECONDS). */
  async sendControl(msg: ControlMessage, delayMs = 0): Promise<number> {
    const text = await this.encode(msg);
    const visibilityTimeout = Math.min(MAX_VISIBILITY_SECONDS, Math.max(0, Math.ceil(delayMs / 1000)));
    await this.control.sendMessage(text, visibilityTimeout > 0 ? { visibilityTimeout } : {});
    return visibilityTimeout * 1000;
  }

  async sendControlBatch(batch: ControlBatch): Promise<void> {
    await this.control.sendMessage(await this.encode(batch));
  }

  /**
   * Send activity work items packed into as few queue messages as fit (Azure Storage queue operations
   * are the engine's main cost). An item too large for a message goes alone, offloaded to a blob.
   */
  async sendWorkItems(items: ActivityWorkItem[], parallelism = 8): Promise<void> {
    const packs: ActivityWorkItem[][] = [];
    let current: ActivityWorkItem[] = [];
    let size = 0;
    for (const item of items) {
      const n = JSON.stringify(item).length + 1;
      if (n > MAX_PACK_CHARS) {
        packs.push([item]);
        continue;
      }
      if (current.length >= MAX_ITEMS_PER_MESSAGE || size + n > MAX_PACK_CHARS) {
        packs.push(current);
        current = [];
        size = 0;
      }
      current.push(item);
      size += n;
    }
    if (current.length) packs.push(current);
    await inParallel(packs, parallelism, async (pack) => this.workItems.sendMessage(await this.encode({ items: pack } satisfies WorkItemMessage)));
  }

  receiveControl(max: number, visibilitySeconds: number): Promise<ReceivedMessage<ControlEnvelope>[]> {
    return this.receive<ControlEnvelope>(this.control, max, visibilitySeconds, controlShapeProblem);
  }

  receiveWorkItems(max: number, visibilitySeconds: number): Promise<ReceivedMessage<WorkItemMessage>[]> {
    return this.receive<WorkItemMessage>(this.workItems, max, visibilitySeconds, workItemShapeProblem);
  }

  async deleteControl(m: { queueMessageId: string; popReceipt: string }): Promise<void> {
    await ignore404(this.control.deleteMessage(m.queueMessageId, m.popReceipt));
  }

  async deleteWorkItem(m: { queueMessageId: string; popReceipt: string }): Promise<void> {
    await ignore404(this.workItems.deleteMessage(m.queueMessageId, m.popReceipt));
  }

  /** Keep a long-running activity's work item invisible; returns the new pop receipt. */
  async extendWorkItem(m: { queueMessageId: string; popReceipt: string }, visibilitySeconds: number): Promise<string | undefined> {
    const r = await this.workItems.updateMessage(m.queueMessageId, m.popReceipt, undefined, visibilitySeconds);
    return r.popReceipt;
  }
}

/** Runs `fn` over `items` with at most `limit` calls in flight. */
export async function inParallel<T>(items: T[], limit: number, fn: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const item = items[next++];
      await fn(item);
    }
  });
  await Promise.all(workers);
}

/** A queue message that stands for a larger one kept in the large-messages container. */
interface LargeMessageRef {
  largeMessageBlob: string;
}

const isLargeMessageRef = (b: unknown): b is LargeMessageRef =>
  typeof b === 'object' && b !== null && typeof (b as LargeMessageRef).largeMessageBlob === 'string';

function instanceFilter(q: InstanceQuery): string | undefined {
  const parts: string[] = [];
  if (q.createdTimeFrom) parts.push(odata`CreatedTime ge ${q.createdTimeFrom}`);
  if (q.createdTimeTo) parts.push(odata`CreatedTime le ${q.createdTimeTo}`);
  if (q.runtimeStatus && q.runtimeStatus.length > 0) {
    parts.push(`(${q.runtimeStatus.map((s) => odata`RuntimeStatus eq ${s}`).join(' or ')})`);
  }
  if (q.instanceIdPrefix) {
    const p = encodeKey(q.instanceIdPrefix);
    parts.push(odata`PartitionKey ge ${p} and PartitionKey lt ${`${p}~`}`);
  }
  return parts.length ? parts.join(' and ') : undefined;
}

function entityFromRow(r: InstanceRow): TableEntity<Record<string, unknown>> {
  const e: Record<string, unknown> = {
    partitionKey: encodeKey(r.instanceId),
    rowKey: '',
    Name: r.name,
    RuntimeStatus: r.runtimeStatus,
    ExecutionId: r.executionId,
    CreatedTime: new Date(r.createdTime),
    LastUpdatedTime: new Date(r.lastUpdatedTime),
  };
  // JSON texts, escaped as in the History table (tableSafe.ts): JSON.parse reads back the same values.
  const json = (text: string | undefined): string | undefined => (text === undefined ? undefined : escapeForTable(text));
  putLarge(e, 'Input', json(r.input));
  putLarge(e, 'Output', json(r.output));
  putLarge(e, 'CustomStatus', json(r.customStatus));
  if (r.parent) e.Parent = escapeForTable(JSON.stringify(r.parent));
  return e as TableEntity<Record<string, unknown>>;
}

function rowFromEntity(e: Record<string, unknown>): InstanceRow {
  const time = (v: unknown): string => (v instanceof Date ? v.toISOString() : new Date(String(v)).toISOString());
  return {
    instanceId: decodeKey(String(e.partitionKey)),
    name: String(e.Name ?? ''),
    runtimeStatus: String(e.RuntimeStatus) as RuntimeStatus,
    executionId: String(e.ExecutionId ?? ''),
    input: getLarge(e, 'Input'),
    output: getLarge(e, 'Output'),
    customStatus: getLarge(e, 'CustomStatus'),
    createdTime: time(e.CreatedTime),
    lastUpdatedTime: time(e.LastUpdatedTime),
    parent: typeof e.Parent === 'string' ? (JSON.parse(e.Parent) as ParentRef) : undefined,
  };
}

export function rowFromState(s: InstanceState): InstanceRow {
  return {
    instanceId: s.instanceId,
    name: s.name,
    runtimeStatus: s.status,
    executionId: s.executionId,
    input: s.input,
    output: s.output,
    customStatus: s.customStatus,
    createdTime: s.createdTime,
    lastUpdatedTime: s.lastUpdatedTime,
    parent: s.parent,
  };
}

export function isStatus(err: unknown, code: number): boolean {
  return typeof err === 'object' && err !== null && (err as { statusCode?: number }).statusCode === code;
}

/** A message already deleted (404), or received again by someone since (400 PopReceiptMismatch), is not ours to delete. */
async function ignore404(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (isStatus(err, 404)) return;
    if (isStatus(err, 400) && (err as { code?: string }).code === 'PopReceiptMismatch') return;
    throw err;
  }
}
