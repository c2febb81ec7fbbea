/**
 * A small file cache for what the contract derives from its inputs (the SDK documents, compiled validators), in
 * node_modules/.cache/batch-contract: each test file that starts an emulator runs in its own module registry, so
 * nothing kept in memory outlives it.
 *
 * An entry is one header line `{"key":…,"sha256":…}` and the body. Writers race safely: each writes its own
 * temporary file and renames it over the entry, which is atomic, so a reader sees a whole entry or none. A damaged
 * entry (truncated, edited, another key under the same name) fails the checks and is treated as absent; an
 * unwritable cache only costs the work it would have saved.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, sep } from 'node:path';

export const sha256 = (text: string | Buffer): string => createHash('sha256').update(text).digest('hex');

/** node_modules/.cache/batch-contract of the node_modules this code resolves its packages from. */
export function contractCacheDir(): string {
  const marker = `${sep}node_modules${sep}`;
  const entry = require.resolve('ajv');
  return join(entry.slice(0, entry.lastIndexOf(marker) + marker.length), '.cache', 'batch-contract');
}

/** The entry's body when the file holds one written under `key` and intact, else undefined. */
export function readCacheEntry(file: string, key: string): string | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const newline = text.indexOf('\n');
  if (newline < 0) return undefined;
  let header: { key?: unknown; sha256?: unknown };
  try {
    header = JSON.parse(text.slice(0, newline)) as typeof header;
  } catch {
    return undefined;
  }
  const body = text.slice(newline + 1);
  return header?.key === key && header.sha256 === sha256(body) ? body : undefined;
}

export function writeCacheEntry(file: string, key: string, body: string): void {
  const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(tmp, `${JSON.stringify({ key, sha256: sha256(body) })}\n${body}`);
    renameSync(tmp, file);
  } catch {
    try {
      unlinkSync(tmp);
    } catch {
      // never written
    }
  }
}
