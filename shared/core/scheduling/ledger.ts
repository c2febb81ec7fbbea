/**
 * The admission ledger and what a pass, a release, an acknowledgement and a reconciliation do to it. Pure: the store
 * (admissionStore.ts) reads the partition, one of these functions computes the change, and the store commits it in one
 * entity-group transaction guarded by the ledger's ETag (retrying from a fresh read on a conflict).
 */
import { decideAdmission, type AdmissionLimits, type Reservation, type WaitingJob } from './admission';

export interface Ledger {
  /** Bumped by every change (the ETag guards the writes; this is for people reading the table). */
  version: number;
  /** The number of the last grant made. */
  grantSeq: number;
  reservations: Record<string, Reservation>;
  /** How many later jobs started ahead of a waiting job while it was blocked (bounded backfill). */
  jumps: Record<string, number>;
  /** Jobs refused at admission (they can never fit) until their run has seen it. */
  refused: Record<string, { reason: string; at: string; acked?: boolean }>;
}

export const EMPTY_LEDGER: Ledger = { version: 0, grantSeq: 0, reservations: {}, jumps: {}, refused: {} };

/**
 * What the partition holds: the ledger, one row per waiting job, one acknowledgement row per job whose run has seen
 * its grant or refusal, and one release row per job whose run is over (both rows of their own, inserted without the
 * ledger's guard, so hundreds of runs learning their grant or ending at once do not contend for the ledger).
 */
export interface AdmissionSnapshot {
  ledger: Ledger;
  waiting: WaitingJob[];
  acks?: ReadonlySet<string>;
  /** Jobs whose run is over (or that were cancelled while waiting): a release row each, folded in by the next pass. */
  releases?: ReadonlySet<string>;
}

/** A change to commit: the new ledger and the rows to delete. Nothing to commit when `ledger` is undefined. */
export interface LedgerChange {
  ledger?: Ledger;
  deleteWaiting: string[];
  deleteAcks?: string[];
  deleteReleases?: string[];
}

/** Whether the job's run has seen its grant or refusal. */
export function seen(s: AdmissionSnapshot, jobId: string): boolean {
  return !!(s.ledger.reservations[jobId]?.acked || s.ledger.refused[jobId]?.acked || s.acks?.has(jobId));
}

/** The job holds a grant or a refusal its run has not acknowledged yet. */
export function needsAck(s: AdmissionSnapshot, jobId: string): boolean {
  return !!(s.ledger.reservations[jobId] || s.ledger.refused[jobId]) && !seen(s, jobId);
}

export interface PassOutcome extends LedgerChange {
  admitted: Reservation[];
  refused: { jobId: string; reason: string }[];
  /** Grants and refusals older than the re-send delay that their runs have not seen yet: tell them again. */
  resend: string[];
  /** Why each job still waiting waits. */
  waitingReasons: Record<string, string>;
}

/** A pass commits in one entity-group transaction: at most 100 operations, the ledger's update among them. */
export const MAX_OPERATIONS_PER_PASS = 100;
/** Releases folded into the ledger per pass (the rest wait for the next pass, still holding their capacity). */
export const MAX_RELEASES_PER_PASS = 30;

function clone(l: Ledger): Ledger {
  return { version: l.version, grantSeq: l.grantSeq, reservations: { ...l.reservations }, jumps: { ...l.jumps }, refused: { ...l.refused } };
}

/**
 * One admission pass: folds the released jobs in (their reservations, refusals, counts and rows go), grants what fits
 * (decideAdmission), refuses what never fits, records the backfill counts, and lists what to re-send. Grants are
 * numbered in grant order. `ackFor`: the job whose own run makes this pass; a grant or refusal of it made by this pass
 * is marked seen in the same commit (its run learns it from the answer). A pass that changes nothing commits nothing.
 *
 * A release is a row of its own (inserted without the ledger's guard, like a waiting row): hundreds of jobs ending at
 * once do not contend for the ledger, the next pass folds them all in with one commit.
 */
export function planPass(s: AdmissionSnapshot, limits: AdmissionLimits, now: Date, resendAfterMs: number, ackFor?: string): PassOutcome {
  const releasing = new Set(s.releases ?? []);
  const fold = [...releasing].sort().slice(0, MAX_RELEASES_PER_PASS);
  const ledger = clone(s.ledger);
  for (const id of fold) {
    delete ledger.reservations[id];
    delete ledger.jumps[id];
    delete ledger.refused[id];
  }
  const foldedAcks = fold.filter((id) => s.acks?.has(id));
  // Waiting rows that must go: a released job's, and a row left by a retried enqueue of a job that holds a grant or a
  // refusal already (never granted twice).
  const stale = new Set(
    s.waiting.filter((w) => (releasing.has(w.jobId) ? fold.includes(w.jobId) : ledger.reservations[w.jobId] || ledger.refused[w.jobId])).map((w) => w.jobId),
  );
  const waiting = s.waiting.filter((w) => !stale.has(w.jobId) && !releasing.has(w.jobId)).map((w) => ({ ...w, jumpedBy: ledger.jumps[w.jobId] ?? 0 }));
  const used = 1 + fold.length + foldedAcks.length + stale.size;
  const room = Math.max(0, MAX_OPERATIONS_PER_PASS - used);
  const decision = decideAdmission(limits, Object.values(ledger.reservations), waiting, room);
  const refused = decision.refuse.slice(0, Math.max(0, room - decision.admit.length));
  const at = now.toISOString();
  const resend = [
    ...Object.values(ledger.reservations)
      .filter((r) => !seen(s, r.jobId) && now.getTime() - Date.parse(r.grantedAt) >= resendAfterMs)
      .map((r) => r.jobId),
    ...Object.entries(ledger.refused)
      .filter(([id, r]) => !seen(s, id) && now.getTime() - Date.parse(r.at) >= resendAfterMs)
      .map(([id]) => id),
  ].filter((id) => id !== ackFor);
  const changed = fold.length > 0 || decision.admit.length > 0 || refused.length > 0 || stale.size > 0 || Object.keys(decision.jumped).length > 0;
  if (!changed) return { deleteWaiting: [], admitted: [], refused: [], resend, waitingReasons: decision.waiting };
  ledger.version++;
  const admitted: Reservation[] = decision.admit.map((w) => ({
    jobId: w.jobId,
    owner: w.owner,
    queue: w.queue,
    family: w.family,
    cores: w.cores,
    nodes: w.nodes,
    pools: w.pools,
    grantedAt: at,
    grant: ++ledger.grantSeq,
    acked: w.jobId === ackFor,
    ...(w.enqueuedAt ? { waitingSince: w.enqueuedAt } : {}),
    ...(decision.placed[w.jobId] ? { account: decision.placed[w.jobId].account, placedBecause: decision.placed[w.jobId].reason } : {}),
    ...(w.place?.spotCores ? { place: { spotCores: w.place.spotCores } } : {}),
  }));
  for (const r of admitted) {
    ledger.reservations[r.jobId] = r;
    delete ledger.jumps[r.jobId];
  }
  for (const r of refused) {
    ledger.refused[r.jobId] = { reason: r.reason, at, ...(r.jobId === ackFor ? { acked: true } : {}) };
    delete ledger.jumps[r.jobId];
  }
  for (const [id, n] of Object.entries(decision.jumped)) ledger.jumps[id] = n;
  return {
    ledger,
    deleteWaiting: [...stale, ...admitted.map((r) => r.jobId), ...refused.map((r) => r.jobId)],
    deleteAcks: foldedAcks,
    deleteReleases: fold,
    admitted,
    refused,
    resend,
    waitingReasons: decision.waiting,
  };
}

/**
 * Drops what belongs to jobs that ended or no longer exist (a crashed or terminated run never released): `ended`
 * names them. Capacity is never leaked for good.
 */
export function planReconcile(s: AdmissionSnapshot, ended: ReadonlySet<string>): LedgerChange & { dropped: string[] } {
  const dropped = new Set<string>();
  for (const id of [
    ...Object.keys(s.ledger.reservations),
    ...Object.keys(s.ledger.refused),
    ...Object.keys(s.ledger.jumps),
    ...s.waiting.map((w) => w.jobId),
    ...(s.acks ?? []),
    ...(s.releases ?? []),
  ]) {
    if (ended.has(id)) dropped.add(id);
  }
  if (!dropped.size) return { deleteWaiting: [], dropped: [] };
  const ledger = clone(s.ledger);
  ledger.version++;
  for (const id of dropped) {
    delete ledger.reservations[id];
    delete ledger.jumps[id];
    delete ledger.refused[id];
  }
  return {
    ledger,
    deleteWaiting: s.waiting.filter((w) => dropped.has(w.jobId)).map((w) => w.jobId),
    deleteAcks: [...(s.acks ?? [])].filter((id) => dropped.has(id)),
    deleteReleases: [...(s.releases ?? [])].filter((id) => dropped.has(id)),
    dropped: [...dropped],
  };
}

/** What a job's run learns when it asks. */
export type AdmissionStatus =
  | { state: 'granted'; grant: number; grantedAt: string; waitingSince?: string; queue?: string; account?: string; placedBecause?: string }
  | { state: 'refused'; reason: string }
  | { state: 'waiting'; reason: string; position?: { inQueue: number; overall: number } }
  | { state: 'absent' };

export function statusOf(s: AdmissionSnapshot, jobId: string): Exclude<AdmissionStatus, { state: 'waiting' }> | { state: 'waiting' } {
  const r = s.ledger.reservations[jobId];
  if (r) {
    return {
      state: 'granted',
      grant: r.grant,
      grantedAt: r.grantedAt,
      ...(r.waitingSince ? { waitingSince: r.waitingSince } : {}),
      queue: r.queue,
      ...(r.account ? { account: r.account } : {}),
      ...(r.placedBecause ? { placedBecause: r.placedBecause } : {}),
    };
  }
  const f = s.ledger.refused[jobId];
  if (f) return { state: 'refused', reason: f.reason };
  if (s.waiting.some((w) => w.jobId === jobId)) return { state: 'waiting' };
  return { state: 'absent' };
}
