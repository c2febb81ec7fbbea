/**
 * The event relay: publishes a job's transitions to each endpoint in seq order, at least once, from the job's own
 * timeline (the outbox) with a per-job, per-endpoint cursor (deliveryStore.ts).
 *
 * - `deliverJob` is run for a job when its transition is announced (queue `job-events`) and by the relay: per
 *   endpoint it takes the cursor's lease (ETag write), sends what is due one event at a time (a try is recorded before
 *   the request and its outcome after), moves the cursor on after each answer, and on a failure schedules the next
 *   try and stops there, so event n+1 is never sent before n was delivered (or given up on after the last try).
 * - `relayOnce` (timer) finds what an announcement missed: jobs whose row changed since its watermark (a host killed
 *   between the row write and the announcement, an announcement that failed) and cursors whose retry is due.
 */
import { randomUUID } from 'node:crypto';
import type { JobEvent, JobRecord } from '../state';
import { jobStateChangedEvent } from './cloudEvent';
import { afterAttempt, nextWatermark, pendingTransitions, type RetryPolicy } from './cursor';
import type { DeliveryStore, StoredCursor } from './deliveryStore';
import type { EventEndpoint } from './endpoint';

/** A sender's hold on one cursor: long enough for one request and the writes around it; renewed at each write. */
export const DEFAULT_LEASE_MS = 30_000;
/** The relay looks again at jobs updated this long before its last run (writers' clocks, write latency). */
export const RELAY_MARGIN_MS = 5 * 60_000;
/** The first relay run (no watermark yet) looks this far back. */
export const RELAY_FIRST_LOOKBACK_MS = 60 * 60_000;
/**
 * A job whose only transition is its creation is left this long to its first transition, whose announcement carries
 * the creation with it (intake does not announce a creation: docs/intake.md). Less than RELAY_MARGIN_MS, so later
 * passes still see the job; a job that stays Submitted longer gets its creation delivered by the relay.
 */
export const RELAY_CREATION_GRACE_MS = 60_000;

export interface JobTimelineReader {
  get(id: string): Promise<JobRecord | undefined>;
  events(id: string): Promise<JobEvent[]>;
  /** Job rows updated at or after `since` (ISO): id, eventSeq, updatedAt. */
  changedSince(since: string): Promise<{ id: string; eventSeq: number; updatedAt: string }[]>;
}

export interface DeliveryDeps {
  jobs: JobTimelineReader;
  deliveries: DeliveryStore;
  endpoints: readonly EventEndpoint[];
  policy: RetryPolicy;
  sourceBaseUrl?: string;
  /** Asks for this job to be delivered again in `delayMs` (a delayed queue message). Optional: the relay retries too. */
  schedule?: (jobId: string, delayMs: number) => Promise<void>;
  now?: () => Date;
  leaseMs?: number;
}

export type EndpointRun =
  | { endpoint: string; state: 'idle' | 'gone' }
  | { endpoint: string; state: 'delivered'; sent: number }
  | { endpoint: string; state: 'waiting'; until: string; sent: number }
  | { endpoint: string; state: 'busy'; until?: string };

const isoIn = (now: Date, ms: number) => new Date(now.getTime() + ms).toISOString();

/** Delivers what is due of one job to every endpoint (endpoints independently: a dead one does not hold the others). */
export async function deliverJob(deps: DeliveryDeps, jobId: string): Promise<EndpointRun[]> {
  if (deps.endpoints.length === 0) return [];
  const job = await deps.jobs.get(jobId);
  if (!job) return deps.endpoints.map((e) => ({ endpoint: e.name, state: 'gone' as const }));
  return Promise.all(deps.endpoints.map((e) => deliverToEndpoint(deps, job, e)));
}

async function deliverToEndpoint(deps: DeliveryDeps, first: JobRecord, endpoint: EventEndpoint): Promise<EndpointRun> {
  const now = deps.now ?? (() => new Date());
  const leaseMs = deps.leaseMs ?? DEFAULT_LEASE_MS;
  const name = endpoint.name;
  const read = await deps.deliveries.cursor(first.id, name);
  if (read.delivered >= first.eventSeq) return { endpoint: name, state: 'idle' };
  const t0 = now();
  if (read.nextAttemptAt && Date.parse(read.nextAttemptAt) > t0.getTime()) return { endpoint: name, state: 'waiting', until: read.nextAttemptAt, sent: 0 };
  if (read.leaseUntil && Date.parse(read.leaseUntil) > t0.getTime()) return { endpoint: name, state: 'busy', until: read.leaseUntil };

  const owner = randomUUID();
  const hold = (c: StoredCursor): StoredCursor => ({ ...c, leaseOwner: owner, leaseUntil: isoIn(now(), leaseMs) });
  let cursor = await deps.deliveries.save(hold(read));
  if (!cursor) return { endpoint: name, state: 'busy' };

  let job = first;
  let sent = 0;
  // More transitions may land while we send: look at the row again before letting go (bounded; the next
  // announcement or the relay takes over after that).
  for (let round = 0; round < 5; round++) {
    const timeline = await deps.jobs.events(job.id);
    for (const item of pendingTransitions(timeline, job, cursor.delivered)) {
      const startedAt = now();
      if ('missing' in item) {
        await deps.deliveries.recordAttempt({
          jobId: job.id,
          endpoint: name,
          seq: item.seq,
          eventId: `${job.id}:${item.seq}`,
          attempt: cursor.attempt + 1,
          startedAt: startedAt.toISOString(),
          finishedAt: startedAt.toISOString(),
          outcome: 'missing',
          error: 'the transition is not on the timeline',
        });
        const moved: StoredCursor = hold({
          ...cursor,
          delivered: item.seq,
          attempt: 0,
          nextAttemptAt: undefined,
          lastError: `seq ${item.seq} missing from the timeline`,
        });
        const saved = await deps.deliveries.save(moved);
        if (!saved) return { endpoint: name, state: 'busy' };
        cursor = saved;
        continue;
      }
      const event = jobStateChangedEvent(job, item.event, deps.sourceBaseUrl);
      const attempt = cursor.attempt + 1;
      const base = { jobId: job.id, endpoint: name, seq: item.seq, eventId: event.id, attempt, startedAt: startedAt.toISOString() };
      await deps.deliveries.recordAttempt({ ...base, outcome: 'sending' });
      const result = await endpoint.send(event);
      const finished = now();
      const verdict = afterAttempt(cursor, result.ok, result.error, finished, deps.policy);
      await deps.deliveries.recordAttempt({
        ...base,
        outcome: verdict.outcome === 'retry' ? 'failed' : verdict.outcome,
        finishedAt: finished.toISOString(),
        durationMs: finished.getTime() - startedAt.getTime(),
        ...(result.status !== undefined ? { status: result.status } : {}),
        ...(result.error !== undefined ? { error: result.error } : {}),
      });
      const next: StoredCursor = { jobId: job.id, endpoint: name, etag: cursor.etag, ...verdict.cursor };
      const saved = await deps.deliveries.save(verdict.outcome === 'retry' ? next : hold(next));
      if (!saved) return { endpoint: name, state: 'busy' };
      cursor = saved;
      if (verdict.outcome === 'retry') {
        await deps.schedule?.(job.id, verdict.delayMs);
        return { endpoint: name, state: 'waiting', until: verdict.cursor.nextAttemptAt as string, sent };
      }
      if (verdict.outcome === 'delivered') sent++;
    }
    const fresh = await deps.jobs.get(job.id);
    if (!fresh || fresh.eventSeq <= cursor.delivered) break;
    job = fresh;
  }
  // Let go of the lease (a failure here only delays the next sender until it runs out).
  await deps.deliveries.save({ ...cursor, leaseOwner: undefined, leaseUntil: undefined }).catch(() => undefined);
  return { endpoint: name, state: 'delivered', sent };
}

/**
 * What a relay remembers between its passes in one process: the jobs it found delivered to every endpoint, with the
 * eventSeq their row had. Each pass looks RELAY_MARGIN_MS behind its watermark, so without it every job of that
 * window is read again at every pass (its row and its cursors: 2 reads per job and pass), and a burst of submissions
 * costs the relay thousands of reads in the minutes after it. A job whose row still has the eventSeq it was settled
 * at has nothing due: cursors only move forward, a due retry is found by dueCursors, and a new endpoint comes with a
 * new process (configuration). Jobs that leave the window are forgotten.
 */
export class RelayMemory {
  private readonly settled = new Map<string, number>();

  /** Whether `jobId` was found fully delivered while its row had this eventSeq. */
  isSettled(jobId: string, eventSeq: number): boolean {
    return this.settled.get(jobId) === eventSeq;
  }

  remember(jobId: string, eventSeq: number): void {
    this.settled.set(jobId, eventSeq);
  }

  /** Forgets every job not in `window` (the jobs the last scan returned). */
  keepOnly(window: ReadonlySet<string>): void {
    for (const id of this.settled.keys()) if (!window.has(id)) this.settled.delete(id);
  }

  get size(): number {
    return this.settled.size;
  }
}

export interface RelayReport {
  since: string;
  watermark: string;
  /** Jobs looked at (changed in the window and not remembered settled, or with a retry due). */
  jobs: number;
  /** Jobs changed in the window that an earlier pass found delivered, at the same eventSeq: not read again. */
  settled: number;
  /** Jobs with only their creation, younger than the creation grace: left to their first transition for now. */
  young: number;
  sent: number;
  busy: number;
  waiting: number;
  failed: { jobId: string; error: string }[];
}

/**
 * One relay pass: deliver every job with something due that the announcements may have missed. `memory` (one per
 * process, kept across passes) skips the jobs an earlier pass found delivered and that have not changed since.
 */
export async function relayOnce(
  deps: DeliveryDeps,
  opts: { concurrency?: number; marginMs?: number; memory?: RelayMemory; creationGraceMs?: number } = {},
): Promise<RelayReport> {
  const now = (deps.now ?? (() => new Date()))();
  const marginMs = opts.marginMs ?? RELAY_MARGIN_MS;
  const creationGraceMs = opts.creationGraceMs ?? RELAY_CREATION_GRACE_MS;
  const { memory } = opts;
  const mark = await deps.deliveries.watermark();
  const since = mark.at ?? new Date(now.getTime() - RELAY_FIRST_LOOKBACK_MS).toISOString();
  const report: RelayReport = { since, watermark: since, jobs: 0, settled: 0, young: 0, sent: 0, busy: 0, waiting: 0, failed: [] };
  if (deps.endpoints.length === 0) return report;

  const changed = await deps.jobs.changedSince(since);
  memory?.keepOnly(new Set(changed.map((j) => j.id)));
  const due = new Set((await deps.deliveries.dueCursors(now)).map((c) => c.jobId));
  const candidates = new Map<string, { updatedAt?: string; eventSeq?: number }>();
  // Young creations hold the watermark back like unsettled jobs: a later pass must still find them.
  const unsettled: string[] = [];
  for (const j of changed) {
    if (due.has(j.id)) candidates.set(j.id, { updatedAt: j.updatedAt, eventSeq: j.eventSeq });
    else if (memory?.isSettled(j.id, j.eventSeq)) report.settled++;
    else if (j.eventSeq === 1 && now.getTime() - Date.parse(j.updatedAt) < creationGraceMs) {
      report.young++;
      unsettled.push(j.updatedAt);
    } else candidates.set(j.id, { updatedAt: j.updatedAt, eventSeq: j.eventSeq });
  }
  for (const jobId of due) if (!candidates.has(jobId)) candidates.set(jobId, {});
  report.jobs = candidates.size;

  const queue = [...candidates.entries()];
  const worker = async (): Promise<void> => {
    for (let next = queue.shift(); next; next = queue.shift()) {
      const [jobId, { updatedAt, eventSeq }] = next;
      try {
        const runs = await deliverJob(deps, jobId);
        for (const r of runs) {
          if (r.state === 'delivered' || r.state === 'waiting') report.sent += r.sent;
          if (r.state === 'waiting') report.waiting++;
          if (r.state === 'busy') report.busy++;
        }
        // Idle everywhere: every endpoint had everything up to the row's eventSeq (at least the scanned one).
        if (eventSeq !== undefined && runs.length > 0 && runs.every((r) => r.state === 'idle')) memory?.remember(jobId, eventSeq);
        if (updatedAt !== undefined && runs.some((r) => r.state === 'busy')) unsettled.push(updatedAt);
      } catch (err) {
        report.failed.push({ jobId, error: (err as Error).message });
        if (updatedAt !== undefined) unsettled.push(updatedAt);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, opts.concurrency ?? 4) }, worker));
  report.watermark = nextWatermark(now, marginMs, unsettled, since);
  await deps.deliveries.setWatermark(report.watermark);
  return report;
}
