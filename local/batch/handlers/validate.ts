import { parseDurationMs } from '../model/duration';
import { errors } from './errors';

const ID = /^[A-Za-z0-9_-]{1,64}$/;

export function requireId(body: Record<string, unknown>, prop = 'id'): string {
  const v = body[prop];
  if (v === undefined || v === null || v === '') throw errors.missing(prop);
  if (typeof v !== 'string' || !ID.test(v)) throw errors.invalid(prop, v, 'ids are 1-64 letters, digits, hyphens or underscores');
  return v;
}

export function requireString(body: Record<string, unknown>, prop: string, path = prop): string {
  const v = body[prop];
  if (v === undefined || v === null || v === '') throw errors.missing(path);
  if (typeof v !== 'string') throw errors.invalid(path, v);
  return v;
}

export function optionalInt(body: Record<string, unknown>, prop: string, min: number, max: number, path = prop): number | undefined {
  const v = body[prop];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) throw errors.invalid(path, v, `must be an integer from ${min} to ${max}`);
  return v;
}

export function optionalDuration(body: Record<string, unknown>, prop: string, path = prop): string | undefined {
  const v = body[prop];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || parseDurationMs(v) === undefined) throw errors.invalid(path, v, 'must be an ISO 8601 duration');
  return v;
}

export function optionalEnum(body: Record<string, unknown>, prop: string, allowed: string[], path = prop): string | undefined {
  const v = body[prop];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string' || !allowed.includes(v.toLowerCase())) throw errors.invalid(path, v, `must be one of ${allowed.join(', ')}`);
  return v.toLowerCase();
}

export function metadataOf(v: unknown, path = 'metadata'): Record<string, unknown>[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw errors.invalid(path, v);
  return v.map((m, i) => {
    if (!m || typeof m !== 'object' || typeof (m as Record<string, unknown>).name !== 'string') throw errors.invalid(`${path}[${i}].name`, m);
    const { name, value } = m as { name: string; value?: unknown };
    return { name, value: typeof value === 'string' ? value : '' };
  });
}
