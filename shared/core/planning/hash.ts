/**
 * Small, dependency-free hashing for planning decisions that must be identical in every replay and on every
 * machine (orchestrators may not use crypto APIs that could differ by platform, and we need speed more than strength).
 */

/** 32-bit FNV-1a over the UTF-16 code units of `text`. */
export function fnv1a32(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/**
 * MurmurHash3's 32-bit finalizer. FNV-1a changes mostly low bits when only the last characters differ
 * (`shard-000001` vs `shard-000002`), so anything that uses high bits (prefixes, [0,1) values) mixes first.
 */
export function mix32(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** Lower-case hex of a 32-bit value, left-padded to 8 digits. */
export function hex32(value: number): string {
  return (value >>> 0).toString(16).padStart(8, '0');
}

/**
 * A deterministic number in [0, 1) derived from a seed string, e.g. `${instanceId}:${nodeId}:${attempt}`.
 * Used wherever a replayable orchestration needs "randomness" (backoff jitter).
 */
export function deterministicRand01(seed: string): number {
  // Two differently-seeded hashes give 53 bits.
  const hi = mix32(fnv1a32(seed)) >>> 5; // 27 bits
  const lo = mix32(fnv1a32(seed, 0x9e3779b9)) >>> 6; // 26 bits
  return (hi * 67108864 + lo) / 9007199254740992;
}
