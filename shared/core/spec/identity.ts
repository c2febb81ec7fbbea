/**
 * Content hash, job id derivation and spec comparison: what makes intake idempotent.
 *
 * deriveJobId(spec, idempotencyKey?):
 *   1. spec.id when the client gave one (it is the idempotency key);
 *   2. else "k-" + the first 32 hex digits of sha256("idempotency-key\n" + idempotencyKey)
 *      (HTTP `Idempotency-Key` header, or the queue message id, which stays the same on redelivery);
 *   3. else "h-" + the first 32 hex digits of specHash(spec): the same content is the same job.
 * All three match the job id rule ^[a-z0-9][a-z0-9-]{0,63}$ and are valid Batch pool/job ids.
 */
import { createHash } from 'node:crypto';
import { canonicalJson } from './canonical';
import { formatPath, PathSegment } from './path';
import type { JobSpec } from './schema';

/** sha256 (hex) of the canonical JSON of a normalized spec. */
export function specHash(spec: JobSpec): string {
  return createHash('sha256').update(canonicalJson(spec), 'utf8').digest('hex');
}

export function deriveJobId(spec: JobSpec, idempotencyKey?: string): string {
  if (spec.id !== undefined) return spec.id;
  if (idempotencyKey !== undefined && idempotencyKey !== '') {
    return `k-${createHash('sha256').update(`idempotency-key\n${idempotencyKey}`, 'utf8').digest('hex').slice(0, 32)}`;
  }
  return `h-${specHash(spec).slice(0, 32)}`;
}

/**
 * Paths (same format as validation errors) where two specs differ, sorted. Arrays are compared item by
 * item; an item present on one side only is reported at its index. Empty when the specs are equal.
 */
export function diffSpecs(a: unknown, b: unknown): string[] {
  const out: string[] = [];
  walk(a, b, [], out);
  return out.sort();
}

function walk(a: unknown, b: unknown, path: PathSegment[], out: string[]): void {
  if (Array.isArray(a) && Array.isArray(b)) {
    for (let i = 0; i < Math.max(a.length, b.length); i++) walk(a[i], b[i], [...path, i], out);
    return;
  }
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) walk(a[k], b[k], [...path, k], out);
    return;
  }
  if (canonicalJson(a) !== canonicalJson(b)) out.push(formatPath(path));
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
