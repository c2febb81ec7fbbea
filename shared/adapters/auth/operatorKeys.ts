/**
 * Operator keys (OPERATOR_API_KEYS): compared in constant time. Both sides are hashed first so the comparison
 * takes the same time whatever the lengths, and every configured key is compared (no early exit), so the timing
 * tells nothing about which key, or how much of one, matched.
 */
import { createHash, timingSafeEqual } from 'node:crypto';

const digest = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

export function matchesOperatorKey(presented: string, keys: readonly string[]): boolean {
  const given = digest(presented);
  let matched = false;
  for (const key of keys) matched = timingSafeEqual(given, digest(key)) || matched;
  return matched;
}
