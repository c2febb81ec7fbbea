/**
 * How a JobRecord / JobEvent is laid out in Table Storage.
 *
 * Jobs table: PartitionKey = job id, RowKey = "job" (one partition per job: point reads and ETag
 * updates touch one entity, and jobs never contend with each other). JSON-valued fields (spec, progress,
 * result, error, lastEvent, tags) are stored as JSON strings; a string property holds at most 64 KiB
 * (32 K UTF-16 characters), so a long JSON value is split over `<name>_0 … <name>_{n-1}` with
 * `<name>_n` = n (chunks of 30 000 characters). The whole entity must stay under 1 MiB; the spec is
 * capped at 200 000 characters by the schema, which leaves room for the rest. Each tag is also stored as
 * its own property `tag_<hex of key>` so that listing can filter by tag on the server.
 *
 * JobEvents table: PartitionKey = job id, RowKey = `<ISO time>|t|<seq, 10 digits>` for transitions and
 * `<ISO time>|n|<eventId>` for notes, so a partition scan returns the timeline in time order.
 */
import type { TableEntityResult } from '@azure/data-tables';
import { JobRecordTooLargeError } from './errors';
import { POOL_ACCESS_BASES, type JobEvent, type JobRecord, type JsonValue, type PoolAccessBasis } from './record';
import { validateJobSpec } from '../spec/parse';
import type { JobSpec } from '../spec/schema';
import { isJobState, isTerminal } from './states';
import { parseJobResult, type JobResult } from '../contract/jobResult';

export const JOB_ROW_KEY = 'job';
export const CHUNK_CHARS = 30_000;
/** Stay under Table Storage's 1 MiB entity limit with margin for system properties. */
export const ENTITY_BYTE_BUDGET = 1_000_000;

export type EntityProps = Record<string, string | number | boolean>;
export interface JobEntity extends EntityProps {
  partitionKey: string;
  rowKey: string;
}

export function tagPropertyName(key: string): string {
  return `tag_${Buffer.from(key, 'utf8').toString('hex')}`;
}

export function putJson(props: EntityProps, name: string, value: unknown): void {
  if (value === undefined) return;
  const json = JSON.stringify(value);
  if (json.length <= CHUNK_CHARS) {
    props[name] = json;
    return;
  }
  const n = Math.ceil(json.length / CHUNK_CHARS);
  props[`${name}_n`] = n;
  for (let i = 0; i < n; i++) props[`${name}_${i}`] = json.slice(i * CHUNK_CHARS, (i + 1) * CHUNK_CHARS);
}

export function getJson<T>(e: Record<string, unknown>, name: string): T | undefined {
  const json = getJsonText(e, name);
  return json === undefined ? undefined : (JSON.parse(json) as T);
}

/** The stored JSON text of a JSON-valued field (its chunks joined), undefined when absent. */
function getJsonText(e: Record<string, unknown>, name: string): string | undefined {
  let json: string | undefined;
  if (typeof e[name] === 'string') json = e[name] as string;
  else if (typeof e[`${name}_n`] === 'number') {
    const n = e[`${name}_n`] as number;
    const parts: string[] = [];
    for (let i = 0; i < n; i++) {
      const part = e[`${name}_${i}`];
      if (typeof part !== 'string') throw new Error(`entity ${String(e.partitionKey)}: chunk ${name}_${i} of ${n} is missing`);
      parts.push(part);
    }
    json = parts.join('');
  }
  return json;
}

/**
 * Checked values by their stored text. A job's row is read on every look at it (each GET of a watched job, each
 * pipeline step), and checking its spec and result against their schemas (and normalizing the spec) was most of a
 * read's CPU; the answer depends on the text alone, so a text seen before is not checked again. Only values that
 * passed are kept; each reader gets its own copy (readers may change it).
 */
class CheckedByText<T> {
  private readonly kept = new Map<string, T>();
  constructor(private readonly capacity: number) {}

  get(text: string): T | undefined {
    const known = this.kept.get(text);
    return known === undefined ? undefined : structuredClone(known);
  }

  remember(text: string, value: T): void {
    if (this.kept.size >= this.capacity) this.kept.delete(this.kept.keys().next().value as string);
    this.kept.set(text, structuredClone(value));
  }
}

const validSpecs = new CheckedByText<JobSpec>(64);
const validResults = new CheckedByText<JobResult>(64);

function storedSpec(e: Record<string, unknown>): { spec?: JobSpec; submitted?: JsonValue } {
  const text = getJsonText(e, 'spec');
  if (text === undefined) return {};
  const known = validSpecs.get(text);
  if (known) return { spec: known };
  const stored = JSON.parse(text) as JsonValue;
  const validated = validateJobSpec(stored);
  if (!validated.ok) return { submitted: stored };
  validSpecs.remember(text, validated.spec);
  return { spec: validated.spec };
}

function storedResult(e: Record<string, unknown>): JobResult | undefined {
  const text = getJsonText(e, 'result');
  if (text === undefined) return undefined;
  const known = validResults.get(text);
  if (known) return known;
  const result = parseJobResult(JSON.parse(text));
  if (result !== undefined) validResults.remember(text, result);
  return result;
}

function entityBytes(props: EntityProps): number {
  let bytes = 0;
  for (const [k, v] of Object.entries(props)) bytes += k.length * 2 + (typeof v === 'string' ? v.length * 2 + 4 : 8);
  return bytes;
}

export function jobToEntity(rec: JobRecord): JobEntity {
  const props: EntityProps = {
    id: rec.id,
    name: rec.name,
    owner: rec.owner,
    specHash: rec.specHash,
    state: rec.state,
    stage: rec.stage,
    createdAt: rec.createdAt,
    updatedAt: rec.updatedAt,
    eventSeq: rec.eventSeq,
  };
  for (const [k, v] of Object.entries({
    ownerName: rec.ownerName,
    poolAccess: rec.poolAccess,
    batchPoolId: rec.batchPoolId,
    batchJobId: rec.batchJobId,
    batchAccount: rec.batchAccount,
    cancelRequestedAt: rec.cancelRequestedAt,
    containersCheckedAt: rec.containersCheckedAt,
    dataArea: rec.dataArea,
    endingAs: rec.endingAs,
    rerunOf: rec.rerunOf,
  })) {
    if (v !== undefined) props[k] = v;
  }
  putJson(props, 'tags', rec.tags);
  for (const [k, v] of Object.entries(rec.tags)) props[tagPropertyName(k)] = v;
  putJson(props, 'spec', rec.spec ?? rec.submitted);
  putJson(props, 'progress', rec.progress);
  putJson(props, 'result', rec.result);
  putJson(props, 'error', rec.error);
  putJson(props, 'lastEvent', rec.lastEvent);
  putJson(props, 'array', rec.array);
  const bytes = entityBytes(props);
  if (bytes > ENTITY_BYTE_BUDGET) throw new JobRecordTooLargeError(rec.id, 'the job row', bytes, ENTITY_BYTE_BUDGET);
  return { partitionKey: rec.id, rowKey: JOB_ROW_KEY, ...props };
}

export function entityToJob(e: TableEntityResult<Record<string, unknown>>): JobRecord {
  const state = e.state;
  if (!isJobState(state)) throw new Error(`job ${String(e.partitionKey)}: stored state ${JSON.stringify(state)} is not a job state`);
  const str = (k: string) => (typeof e[k] === 'string' ? (e[k] as string) : undefined);
  const rec: JobRecord = {
    id: str('id') ?? String(e.partitionKey),
    name: str('name') ?? '',
    owner: str('owner') ?? '',
    tags: getJson<Record<string, string>>(e, 'tags') ?? {},
    specHash: str('specHash') ?? '',
    state,
    stage: str('stage') ?? state,
    progress: getJson(e, 'progress') ?? null,
    createdAt: str('createdAt') ?? '',
    updatedAt: str('updatedAt') ?? '',
    eventSeq: typeof e.eventSeq === 'number' ? e.eventSeq : 0,
  };
  const { spec, submitted } = storedSpec(e);
  const optional = {
    spec,
    submitted,
    ownerName: str('ownerName'),
    poolAccess: poolAccessOf(str('poolAccess')),
    batchPoolId: str('batchPoolId'),
    batchJobId: str('batchJobId'),
    batchAccount: str('batchAccount'),
    cancelRequestedAt: str('cancelRequestedAt'),
    containersCheckedAt: str('containersCheckedAt'),
    dataArea: str('dataArea'),
    endingAs: ((s) => (s !== undefined && isTerminal(s) ? s : undefined))(str('endingAs')),
    rerunOf: str('rerunOf'),
    result: storedResult(e),
    error: getJson<JobRecord['error']>(e, 'error'),
    lastEvent: getJson<JobRecord['lastEvent']>(e, 'lastEvent'),
    array: getJson<JobRecord['array']>(e, 'array'),
  };
  for (const [k, v] of Object.entries(optional)) if (v !== undefined) (rec as unknown as Record<string, unknown>)[k] = v;
  return rec;
}

/** A stored basis this version knows, else nothing (an unknown value grants nothing at the admission check). */
function poolAccessOf(v: string | undefined): PoolAccessBasis | undefined {
  return v !== undefined && (POOL_ACCESS_BASES as readonly string[]).includes(v) ? (v as PoolAccessBasis) : undefined;
}

export function eventRowKey(ev: JobEvent): string {
  if (ev.kind === 'transition') return `${ev.at}|t|${String(ev.seq ?? 0).padStart(10, '0')}`;
  return `${ev.at}|n|${ev.eventId ?? ''}`;
}

export function eventToEntity(ev: JobEvent): JobEntity {
  const props: EntityProps = { jobId: ev.jobId, at: ev.at, kind: ev.kind, reason: ev.reason };
  if (ev.seq !== undefined) props.seq = ev.seq;
  if (ev.from !== undefined) props.from = ev.from ?? '';
  if (ev.to !== undefined) props.to = ev.to;
  if (ev.eventId !== undefined) props.eventId = ev.eventId;
  if (ev.data !== undefined) {
    const json = JSON.stringify(ev.data);
    if (json.length > CHUNK_CHARS) throw new JobRecordTooLargeError(ev.jobId, 'event data', json.length * 2, CHUNK_CHARS * 2);
    props.data = json;
  }
  return { partitionKey: ev.jobId, rowKey: eventRowKey(ev), ...props };
}

export function entityToEvent(e: TableEntityResult<Record<string, unknown>>): JobEvent {
  const ev: JobEvent = {
    jobId: String(e.jobId ?? e.partitionKey),
    at: String(e.at),
    kind: e.kind === 'note' ? 'note' : 'transition',
    reason: String(e.reason ?? ''),
  };
  if (typeof e.seq === 'number') ev.seq = e.seq;
  if (typeof e.from === 'string') ev.from = isJobState(e.from) ? e.from : null;
  if (isJobState(e.to)) ev.to = e.to;
  if (typeof e.eventId === 'string') ev.eventId = e.eventId;
  if (typeof e.data === 'string') ev.data = JSON.parse(e.data);
  return ev;
}
