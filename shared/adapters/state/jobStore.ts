/**
 * JobStore: the Jobs and JobEvents tables behind one small API. Every state change goes through the
 * pure state machine (machine.ts) and is written with the row's ETag, so two writers can never both
 * apply a transition computed from the same old state. Layout: see entityCodec.ts.
 *
 * Listing: job rows live one per partition (PartitionKey = id), so `list` is a server-side filtered
 * scan (RowKey eq 'job' and state/createdAt/tag_<hex> conditions) with Table Storage's own continuation
 * tokens; results come back ordered by job id, not by time. That is fine for the thousands of rows a
 * control plane keeps (rows of old jobs can be archived by the sweep); a time-bucketed index would be
 * the next step if it ever is not.
 */
import { randomUUID } from 'node:crypto';
import type { TokenCredential } from '@azure/core-auth';
import { odata, TableClient, type TableEntityResult } from '@azure/data-tables';
import type { JobSpec } from '../../core/spec';
import { JOB_ID_RE } from '../../core/spec/patterns';
import { entityToEvent, entityToJob, eventToEntity, jobToEntity, JOB_ROW_KEY, tagPropertyName } from '../../core/state/entityCodec';
import { ConcurrencyConflictError, IllegalTransitionError, InvalidContinuationTokenError, JobNotFoundError } from '../../core/state/errors';
import { transition as applyTransition } from '../../core/state/machine';
import type { ArrayMembership, JobEvent, JobPatch, JobRecord, JsonValue, PoolAccessBasis } from '../../core/state/record';
import { isPast, type JobState } from '../../core/state/states';

export const DEFAULT_JOBS_TABLE = 'Jobs';
export const DEFAULT_EVENTS_TABLE = 'JobEvents';

export interface JobStoreOptions {
  jobsTable?: string;
  eventsTable?: string;
  /** Clock (tests pin it). Default: new Date(). */
  now?: () => Date;
  /** ETag retries before ConcurrencyConflictError (default 10). */
  maxAttempts?: number;
  /**
   * Told of each transition once it is recorded (the event relay's announcement, shared/adapters/events), except the creation
   * (see createIfAbsent). Its failure never fails the transition: the relay finds transitions nobody announced.
   */
  onTransition?: (event: JobEvent) => Promise<void>;
}

/** A job to record: an accepted spec, or a rejected submission's document (kept so its sender can see it). */
export type NewJob = {
  id: string;
  specHash: string;
  owner: string;
  /** Display name of the owner (for people reading the job; `owner` is the identity). */
  ownerName?: string;
  /** Why the owner may use pool.poolId (shared/core/intake/poolAccess.ts). */
  poolAccess?: PoolAccessBasis;
  /** Creation reason recorded in the first event (default "submitted"). */
  reason?: string;
  /** A job of an array: which array, and its index. */
  array?: ArrayMembership;
  /** The owner's data area when intake checked the spec's paths against it (JobRecord.dataArea). */
  dataArea?: string;
  /** The job this one reruns (JobRecord.rerunOf). */
  rerunOf?: string;
} & ({ spec: JobSpec } | { rejected: { name: string; document: JsonValue } });

export interface TransitionOutcome {
  job: JobRecord;
  /** The event recorded; undefined when the job already was in the target state. */
  event?: JobEvent;
  /** false when the job already was in the target state (a retried step): nothing was changed. */
  applied: boolean;
}

export interface NoteInput {
  reason: string;
  data?: JsonValue;
  /** Time of the note (default now). Pass a deterministic time with eventId to make the append idempotent. */
  at?: string;
  /** Unique per job; the same eventId and `at` written twice give one event. Default: a random id. */
  eventId?: string;
}

export interface ListJobsQuery {
  /** Only jobs of this owner (the tenancy filter: set for every caller but admins). */
  owner?: string;
  state?: JobState | JobState[];
  /** Tag filter: key only = the tag exists; with value = the tag equals it. */
  tag?: { key: string; value?: string };
  /** Inclusive lower bound on createdAt (ISO 8601). */
  createdFrom?: string;
  /** Exclusive upper bound on createdAt (ISO 8601). */
  createdTo?: string;
  /** Page size, 1–1000 (default 100). */
  top?: number;
  continuationToken?: string;
}

export interface ListJobsPage {
  jobs: JobRecord[];
  /** Present when more rows may match: pass it back to get the next page. */
  continuationToken?: string;
  /** Rows of this page that could not be read (damaged, or written by an incompatible version): left out, named here. */
  unreadable?: { id: string; error: string }[];
}

type Entity = TableEntityResult<Record<string, unknown>>;

function statusOf(err: unknown): number | undefined {
  return typeof err === 'object' && err !== null && typeof (err as { statusCode?: unknown }).statusCode === 'number'
    ? (err as { statusCode: number }).statusCode
    : undefined;
}

export class JobStore {
  private readonly now: () => Date;
  private readonly maxAttempts: number;
  private readonly onTransition?: (event: JobEvent) => Promise<void>;

  constructor(
    private readonly jobs: TableClient,
    private readonly eventsTable: TableClient,
    options: JobStoreOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.maxAttempts = options.maxAttempts ?? 10;
    this.onTransition = options.onTransition;
  }

  /** Build from a storage connection string (Azurite's or a real account's). */
  static fromConnectionString(connectionString: string, options: JobStoreOptions = {}): JobStore {
    // Plain http is only ever Azurite on loopback; real accounts use https.
    const clientOptions = { allowInsecureConnection: /DefaultEndpointsProtocol=http;|TableEndpoint=http:|UseDevelopmentStorage=true/i.test(connectionString) };
    return new JobStore(
      TableClient.fromConnectionString(connectionString, options.jobsTable ?? DEFAULT_JOBS_TABLE, clientOptions),
      TableClient.fromConnectionString(connectionString, options.eventsTable ?? DEFAULT_EVENTS_TABLE, clientOptions),
      options,
    );
  }

  /** Build from a table service URL and a credential (in Azure: the app's managed identity). */
  static fromTableEndpoint(endpoint: string, credential: TokenCredential, options: JobStoreOptions = {}): JobStore {
    const clientOptions = { allowInsecureConnection: endpoint.startsWith('http://') };
    return new JobStore(
      new TableClient(endpoint, options.jobsTable ?? DEFAULT_JOBS_TABLE, credential, clientOptions),
      new TableClient(endpoint, options.eventsTable ?? DEFAULT_EVENTS_TABLE, credential, clientOptions),
      options,
    );
  }

  /** Create both tables if missing (idempotent; call once at start-up). */
  async ensureTables(): Promise<void> {
    await this.jobs.createTable();
    await this.eventsTable.createTable();
  }

  /**
   * Insert the job in state Submitted unless a row with this id exists. Exactly one of any number of
   * concurrent callers gets created: true (Table Storage answers 409 to the others); they get the
   * existing row, which the caller compares with its own spec (specHash / diffSpecs) to answer 200 or 409.
   *
   * `deferFirstEvent`: the creation event stays in the row (its lastEvent) and the job's next transition writes it to
   * the timeline (every transition writes the previous one first: repairLastEvent); `events(id, row)` shows it
   * meanwhile and the event relay reads it from there. Intake's choice: a submission costs the row write alone.
   *
   * The creation is not announced (onTransition): the job's next transition is, and its sender delivers every seq due,
   * this one included; the event relay finds a job that never moves on. Announcing it would start a sender per new job
   * in the middle of a burst of submissions, for an event the next announcement carries anyway (docs/intake.md).
   */
  async createIfAbsent(input: NewJob, options: { deferFirstEvent?: boolean } = {}): Promise<{ created: boolean; job: JobRecord }> {
    // The id becomes a PartitionKey and part of URLs: refuse anything the spec rules would refuse.
    if (!JOB_ID_RE.test(input.id)) throw new RangeError(`job id ${JSON.stringify(input.id)} does not match ${JOB_ID_RE}`);
    const at = this.now().toISOString();
    const first: JobEvent = { jobId: input.id, at, kind: 'transition', seq: 1, from: null, to: 'Submitted', reason: input.reason ?? 'submitted' };
    const record: JobRecord = {
      id: input.id,
      name: 'spec' in input ? input.spec.name : input.rejected.name,
      owner: input.owner,
      ...(input.ownerName !== undefined ? { ownerName: input.ownerName } : {}),
      ...(input.poolAccess !== undefined ? { poolAccess: input.poolAccess } : {}),
      tags: 'spec' in input ? { ...input.spec.tags } : {},
      specHash: input.specHash,
      ...('spec' in input ? { spec: input.spec } : { submitted: input.rejected.document }),
      state: 'Submitted',
      stage: 'Submitted',
      progress: null,
      createdAt: at,
      updatedAt: at,
      eventSeq: 1,
      lastEvent: first,
      ...(input.array ? { array: input.array } : {}),
      ...(input.dataArea !== undefined ? { dataArea: input.dataArea } : {}),
      ...(input.rerunOf !== undefined ? { rerunOf: input.rerunOf } : {}),
    };
    try {
      await this.jobs.createEntity(jobToEntity(record));
    } catch (err) {
      if (statusOf(err) !== 409) throw err;
      const existing = await this.get(input.id);
      // A row that vanished between the 409 and the read was deleted by someone else: report it as such.
      if (!existing) throw new JobNotFoundError(input.id);
      await this.repairLastEvent(existing);
      return { created: false, job: existing };
    }
    if (!options.deferFirstEvent) await this.writeEvent(first);
    return { created: true, job: record };
  }

  async get(id: string): Promise<JobRecord | undefined> {
    const found = await this.read(id);
    return found?.job;
  }

  /**
   * Move the job to `to` through the state machine, applying `patch` in the same write. On an ETag
   * conflict the row is re-read and the transition re-checked against the new state, so it is applied
   * only if still legal (IllegalTransitionError otherwise). If the job already is in `to`, nothing is
   * written and applied = false: a retried activity may call this twice.
   */
  async transition(id: string, to: JobState, reason: string, patch?: JobPatch): Promise<TransitionOutcome> {
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const current = await this.read(id);
      if (!current) throw new JobNotFoundError(id);
      if (current.job.state === to) {
        await this.repairLastEvent(current.job);
        return { job: current.job, applied: false };
      }
      const { row, event } = applyTransition(current.job, to, reason, this.now());
      const next = withPatch(row, patch);
      // The row about to be replaced may be the only record of its transition (the process that wrote it died before
      // the event write): write that event first, so no seq is ever missing from the timeline (the event relay's outbox).
      await this.repairLastEvent(current.job);
      if (await this.replace(next, current.etag)) {
        await this.writeEvent(event);
        await this.announce(event);
        return { job: next, event, applied: true };
      }
      await backoff(attempt);
    }
    throw new ConcurrencyConflictError(id, this.maxAttempts);
  }

  /**
   * The pipeline's transition: like `transition`, but a row that has already gone past `to` (finished, or at a later
   * stage) is left as it is (applied = false, stale = true) instead of being an error. Durable Functions runs a step
   * again when the host dies between its effect and the history write, and a job the sweep ended stays ended.
   */
  async advance(id: string, to: JobState, reason: string, patch?: JobPatch): Promise<TransitionOutcome & { stale: boolean }> {
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      try {
        return { ...(await this.transition(id, to, reason, patch)), stale: false };
      } catch (err) {
        if (!(err instanceof IllegalTransitionError)) throw err;
        const job = await this.get(id);
        if (!job) throw new JobNotFoundError(id);
        if (isPast(job.state, to)) return { job, applied: false, stale: true };
        // Illegal, and not because the row moved on: a real bug (a stage skipped backwards), not a replay.
        if (job.state !== err.from) throw err;
      }
    }
    throw new ConcurrencyConflictError(id, this.maxAttempts);
  }

  /**
   * Change non-state fields (stage, progress, Batch ids, result, error, cancelRequestedAt) with ETag
   * concurrency. A function patch is re-evaluated on the fresh row after a conflict.
   */
  async update(id: string, patch: JobPatch | ((job: JobRecord) => JobPatch)): Promise<JobRecord> {
    for (let attempt = 1; attempt <= this.maxAttempts; attempt++) {
      const current = await this.read(id);
      if (!current) throw new JobNotFoundError(id);
      const changes = typeof patch === 'function' ? patch(current.job) : patch;
      const next = { ...withPatch(current.job, changes), updatedAt: this.now().toISOString() };
      if (await this.replace(next, current.etag)) return next;
      await backoff(attempt);
    }
    throw new ConcurrencyConflictError(id, this.maxAttempts);
  }

  /** Append a note (not a state change) to the job's timeline, e.g. "pulled 12/40 nodes". */
  async appendEvent(id: string, note: NoteInput): Promise<JobEvent> {
    // The eventId is part of the RowKey, where "/", "\", "#" and "?" are not allowed.
    if (note.eventId !== undefined && !/^[A-Za-z0-9._:@=+-]{1,200}$/.test(note.eventId)) {
      throw new RangeError(`job ${id}: eventId ${JSON.stringify(note.eventId)} must be 1-200 characters of letters, digits and "._:@=+-"`);
    }
    const event: JobEvent = {
      jobId: id,
      at: note.at ?? this.now().toISOString(),
      kind: 'note',
      reason: note.reason,
      eventId: note.eventId ?? randomUUID(),
      ...(note.data !== undefined ? { data: note.data } : {}),
    };
    await this.eventsTable.upsertEntity(eventToEntity(event), 'Replace');
    return event;
  }

  /**
   * Deletes the job row and its timeline (the retention purge of the operations sweep). Events go first, so an
   * interrupted purge leaves a row that the next purge finds again. Already gone is fine.
   */
  async purge(id: string): Promise<{ events: number; row: boolean }> {
    let events = 0;
    const iter = this.eventsTable.listEntities<Record<string, unknown>>({
      queryOptions: { filter: odata`PartitionKey eq ${id}`, select: ['PartitionKey', 'RowKey'] },
    });
    for await (const e of iter) {
      try {
        await this.eventsTable.deleteEntity(String(e.partitionKey), String(e.rowKey));
        events++;
      } catch (err) {
        if (statusOf(err) !== 404) throw err;
      }
    }
    try {
      await this.jobs.deleteEntity(id, JOB_ROW_KEY);
      return { events, row: true };
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
      return { events, row: false };
    }
  }

  /**
   * The whole timeline in time order (transitions and notes). Given the job's row, its last transition is included
   * when the timeline does not have it yet (written by the row alone: a deferred creation event, or a writer that died
   * between the row and the event).
   */
  async events(id: string, row?: Pick<JobRecord, 'lastEvent'>): Promise<JobEvent[]> {
    const out: JobEvent[] = [];
    const iter = this.eventsTable.listEntities<Record<string, unknown>>({ queryOptions: { filter: odata`PartitionKey eq ${id}` } });
    for await (const e of iter) out.push(entityToEvent(e));
    const last = row?.lastEvent;
    if (last?.kind === 'transition' && !out.some((e) => e.kind === 'transition' && e.seq === last.seq)) out.push(last);
    // RowKeys already sort by time; sorting again keeps the order independent of the store's scan order.
    return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : (a.seq ?? 0) - (b.seq ?? 0)));
  }

  /** Job rows updated at or after `since` (ISO 8601): the event relay's scan for transitions nobody announced. */
  async changedSince(since: string): Promise<{ id: string; eventSeq: number; updatedAt: string }[]> {
    const out: { id: string; eventSeq: number; updatedAt: string }[] = [];
    const filter = odata`RowKey eq ${JOB_ROW_KEY} and updatedAt ge ${isoBound('since', since)}`;
    const iter = this.jobs.listEntities<Record<string, unknown>>({ queryOptions: { filter, select: ['PartitionKey', 'eventSeq', 'updatedAt'] } });
    for await (const e of iter) {
      out.push({ id: String(e.partitionKey), eventSeq: typeof e.eventSeq === 'number' ? e.eventSeq : 0, updatedAt: String(e.updatedAt ?? '') });
    }
    return out;
  }

  async list(query: ListJobsQuery = {}): Promise<ListJobsPage> {
    const top = Math.min(Math.max(Math.trunc(query.top ?? 100), 1), 1000);
    const filter = buildListFilter(query);
    let token = query.continuationToken;
    if (token !== undefined) assertContinuationToken(token);
    const jobs: JobRecord[] = [];
    const unreadable: { id: string; error: string }[] = [];
    const done = (continuationToken?: string): ListJobsPage => ({
      jobs,
      ...(continuationToken ? { continuationToken } : {}),
      ...(unreadable.length ? { unreadable } : {}),
    });
    // A filtered scan may return short or empty pages with a token; keep reading (bounded) until the
    // page is full, asking each time only for what is still missing so no row is skipped.
    for (let request = 0; request < 20; request++) {
      const pages = this.jobs
        .listEntities<Record<string, unknown>>({ queryOptions: { filter } })
        .byPage({ maxPageSize: top - jobs.length, ...(token !== undefined ? { continuationToken: token } : {}) });
      let page;
      try {
        page = await pages.next();
      } catch (err) {
        if (query.continuationToken !== undefined && statusOf(err) === 400) throw new InvalidContinuationTokenError(query.continuationToken);
        throw err;
      }
      if (page.done) return done();
      for (const e of page.value) {
        // One damaged row must never fail a list (or the sweep that reads every row): it is named and left out.
        try {
          jobs.push(entityToJob(e as Entity));
        } catch (err) {
          unreadable.push({ id: String((e as Entity).partitionKey), error: err instanceof Error ? err.message : String(err) });
        }
      }
      token = page.value.continuationToken;
      if (!token) return done();
      if (jobs.length + unreadable.length >= top) break;
    }
    return done(token);
  }

  private async read(id: string): Promise<{ job: JobRecord; etag: string } | undefined> {
    try {
      const e = await this.jobs.getEntity<Record<string, unknown>>(id, JOB_ROW_KEY);
      return { job: entityToJob(e), etag: e.etag };
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  /** Replace the row if its ETag is unchanged; false on 412 (someone else wrote first). */
  private async replace(job: JobRecord, etag: string): Promise<boolean> {
    try {
      // Replace (not Merge) so that JSON chunks of a value that shrank do not linger.
      await this.jobs.updateEntity(jobToEntity(job), 'Replace', { etag });
      return true;
    } catch (err) {
      if (statusOf(err) === 412) return false;
      if (statusOf(err) === 404) throw new JobNotFoundError(job.id);
      throw err;
    }
  }

  private async writeEvent(event: JobEvent): Promise<void> {
    // Upsert: the RowKey is fully determined by the event, so a repeat is a no-op rewrite.
    await this.eventsTable.upsertEntity(eventToEntity(event), 'Replace');
  }

  private async announce(event: JobEvent): Promise<void> {
    try {
      await this.onTransition?.(event);
    } catch {
      // Announcing is best effort (see JobStoreOptions.onTransition); the listener reports its own failures.
    }
  }

  /**
   * The row is the commit point and the event is written right after it; if the process died in
   * between, the row's lastEvent still has it. Re-writing it on the next touch makes the timeline whole.
   */
  private async repairLastEvent(job: JobRecord): Promise<void> {
    if (job.lastEvent) await this.writeEvent(job.lastEvent);
  }
}

function withPatch<R extends JobRecord>(row: R, patch: JobPatch | undefined): R {
  if (!patch) return row;
  const next = { ...row };
  for (const [k, v] of Object.entries(patch)) if (v !== undefined) (next as Record<string, unknown>)[k] = v;
  return next;
}

export function buildListFilter(query: ListJobsQuery): string {
  const parts: string[] = [odata`RowKey eq ${JOB_ROW_KEY}`];
  if (query.owner !== undefined) parts.push(odata`owner eq ${query.owner}`);
  const states = query.state === undefined ? [] : Array.isArray(query.state) ? query.state : [query.state];
  if (states.length > 0) parts.push(`(${states.map((s) => odata`state eq ${s}`).join(' or ')})`);
  // createdAt is a fixed-format ISO string (toISOString), so string order is time order.
  if (query.createdFrom !== undefined) parts.push(odata`createdAt ge ${isoBound('createdFrom', query.createdFrom)}`);
  if (query.createdTo !== undefined) parts.push(odata`createdAt lt ${isoBound('createdTo', query.createdTo)}`);
  if (query.tag) {
    const prop = tagPropertyName(query.tag.key); // hex-encoded: always a valid, injection-free property name
    // `ge ''` matches any string value, i.e. "the property exists".
    parts.push(query.tag.value === undefined ? `${prop} ge ''` : `${prop} eq ${quote(query.tag.value)}`);
  }
  return parts.join(' and ');
}

/** An OData string literal: single quotes doubled, so a value can never end the literal early. */
function quote(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

function isoBound(name: string, value: string): string {
  const t = Date.parse(value);
  if (Number.isNaN(t)) throw new RangeError(`${name} must be an ISO 8601 date-time, got ${JSON.stringify(value)}`);
  return new Date(t).toISOString();
}

function assertContinuationToken(token: string): void {
  try {
    const decoded = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { nextPartitionKey?: unknown };
    if (typeof decoded?.nextPartitionKey === 'string') return;
  } catch {
    // fall through
  }
  throw new InvalidContinuationTokenError(token);
}

async function backoff(attempt: number): Promise<void> {
  // Jitter keeps two retrying writers from colliding again in lock-step.
  await new Promise((r) => setTimeout(r, Math.random() * 10 * attempt));
}
