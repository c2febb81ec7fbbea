/**
 * Keys that name JavaScript's object machinery (`__proto__`, `constructor`, `prototype`) have no meaning in a job spec,
 * and the layers a spec passes through treat them differently: JSON.parse and the YAML parser keep `__proto__` as a
 * plain key, an object spread or a zod record drops it or turns it into the object's prototype. Rather than let one
 * layer drop a key silently (or another pollute a prototype), the door refuses them anywhere in the body, with the path,
 * for JSON and YAML text and for already-decoded queue messages alike.
 */
import { formatPath, type PathSegment } from './path';

export const FORBIDDEN_KEYS: readonly string[] = ['__proto__', 'constructor', 'prototype'];

export interface ForbiddenKey {
  path: string;
  key: string;
}

/** Every forbidden key in `value` (own keys of plain objects, through arrays), at most `limit` of them. */
export function forbiddenKeys(value: unknown, limit = 100): ForbiddenKey[] {
  const found: ForbiddenKey[] = [];
  // An explicit stack: a decoded queue message was not measured by the text limits, so its depth is unknown.
  const stack: { value: unknown; path: PathSegment[] }[] = [{ value, path: [] }];
  const seen = new Set<object>();
  while (stack.length && found.length < limit) {
    const { value: v, path } = stack.pop()!;
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], path: [...path, i] });
      continue;
    }
    const keys = Object.keys(v);
    for (const key of keys) if (FORBIDDEN_KEYS.includes(key)) found.push({ path: formatPath([...path, key]), key });
    for (let k = keys.length - 1; k >= 0; k--) {
      if (!FORBIDDEN_KEYS.includes(keys[k])) stack.push({ value: (v as Record<string, unknown>)[keys[k]], path: [...path, keys[k]] });
    }
  }
  return found;
}
