import { existsSync, readFileSync } from 'node:fs';
import type { JobRecord, PoolRecord } from './types';
import { writeAtomically } from '../runner/sandbox';

/**
 * The account's state as JSON on disk, so a restarted emulator (same dataDir, `persist: true`)
 * still knows its pools, nodes, jobs and tasks, like the real service does after a client restart.
 * Maps, Sets and Dates are tagged; timers and process group ids are not saved.
 */
export interface Snapshot {
  version: 1;
  savedAt: string;
  counters: { ipBase: number; ipCounter: number; nodeCounter: number };
  pools: PoolRecord[];
  jobs: JobRecord[];
}

const SKIP = new Set(['wallClockTimer', 'pgids']);

export function serialize(s: Snapshot): string {
  return JSON.stringify(s, function (this: Record<string, unknown>, key: string, value: unknown) {
    if (SKIP.has(key)) return undefined;
    const raw = this[key];
    if (raw instanceof Date) return { $date: raw.toISOString() };
    if (raw instanceof Map) return { $map: [...raw.entries()] };
    if (raw instanceof Set) return { $set: [...raw.values()] };
    return value;
  });
}

export function deserialize(text: string): Snapshot {
  const s = JSON.parse(text, (_key, value: unknown) => {
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const o = value as Record<string, unknown>;
      if (typeof o.$date === 'string') return new Date(o.$date);
      if (Array.isArray(o.$map)) return new Map(o.$map as [unknown, unknown][]);
      if (Array.isArray(o.$set)) return new Set(o.$set as unknown[]);
    }
    return value;
  }) as Snapshot;
  if (s.version !== 1) throw new Error(`unsupported Batch emulator snapshot version ${String(s.version)}`);
  for (const j of s.jobs) for (const t of j.tasks.values()) t.pgids = new Set();
  return s;
}

export function saveSnapshot(file: string, s: Snapshot): void {
  writeAtomically(file, serialize(s));
}

export function loadSnapshot(file: string): Snapshot | undefined {
  if (!existsSync(file)) return undefined;
  try {
    return deserialize(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read the Batch emulator state in ${file}: ${(e as Error).message}`);
  }
}
