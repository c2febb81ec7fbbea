/**
 * The cancel `reason` (DELETE /api/jobs/{id}?reason=…) is free text a caller chooses, stored in the job's timeline and
 * sent in signed webhooks and events: it gets the same text rules as the spec's free-text fields (one line, no control,
 * line-separator or bidirectional characters: patterns.ts SINGLE_LINE_TEXT_RE) and a length cap, at the door.
 */
import type { SpecError } from '../spec';
import { SINGLE_LINE_TEXT_RE, SINGLE_LINE_TEXT_RULE } from '../spec/patterns';

/** Longest reason kept: a sentence, not a document (it is repeated in every child of an array and in events). */
export const CANCEL_REASON_MAX_CHARS = 256;
/** What the timeline says when the caller gives no reason. */
export const DEFAULT_CANCEL_REASON = 'cancelled by user';

export type CancelReason = { ok: true; reason: string } | { ok: false; errors: SpecError[] };

/** The `reason` query parameter, checked: absent → the default; present → within the rules or refused with its path. */
export function parseCancelReason(value: string | null | undefined): CancelReason {
  if (value === null || value === undefined) return { ok: true, reason: DEFAULT_CANCEL_REASON };
  const errors: SpecError[] = [];
  if (value.trim() === '') errors.push({ path: 'reason', message: 'must not be empty (leave it out for the default reason)' });
  if (value.length > CANCEL_REASON_MAX_CHARS)
    errors.push({ path: 'reason', message: `must be at most ${CANCEL_REASON_MAX_CHARS} characters, got ${value.length}` });
  if (!SINGLE_LINE_TEXT_RE.test(value)) errors.push({ path: 'reason', message: SINGLE_LINE_TEXT_RULE });
  return errors.length ? { ok: false, errors } : { ok: true, reason: value };
}
