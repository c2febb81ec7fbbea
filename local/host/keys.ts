/**
 * Host keys for authLevel function/admin. Kept in a git-ignored file (`<appDir>/.local/function-keys.json`
 * by default) created with random keys on first start, so URLs with ?code= keep working across restarts.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

export interface HostKeys {
  /** Accepted for authLevel "function" (the host-level default function key). */
  functionKey: string;
  /** Accepted for every auth level, and the only key for "admin". */
  masterKey: string;
}

export function defaultKeysFile(appDir: string): string {
  return path.join(appDir, '.local', 'function-keys.json');
}

function newKey(): string {
  return randomBytes(30).toString('base64url');
}

export function loadOrCreateKeys(file: string): HostKeys {
  if (existsSync(file)) {
    let parsed: Partial<HostKeys>;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8')) as Partial<HostKeys>;
    } catch (err) {
      throw new Error(`Cannot read host keys file ${file}: ${(err as Error).message}`);
    }
    if (typeof parsed.functionKey !== 'string' || typeof parsed.masterKey !== 'string') {
      throw new Error(`Host keys file ${file} must contain string "functionKey" and "masterKey"`);
    }
    return { functionKey: parsed.functionKey, masterKey: parsed.masterKey };
  }
  const keys: HostKeys = { functionKey: newKey(), masterKey: newKey() };
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
  return keys;
}

export type AuthLevel = 'anonymous' | 'function' | 'admin';

export function normalizeAuthLevel(value: unknown, functionName: string): AuthLevel {
  const level = (typeof value === 'string' ? value : 'function').toLowerCase();
  if (level === 'anonymous' || level === 'function' || level === 'admin') return level;
  // The real host has "user" and "system" too; locally they make no sense, so refuse them loudly.
  throw new Error(`Function "${functionName}": authLevel "${String(value)}" is not supported by the local host`);
}

/** Whether the presented key (header or ?code=) satisfies the level. */
export function isAuthorized(level: AuthLevel, presented: string | undefined, keys: HostKeys): boolean {
  if (level === 'anonymous') return true;
  if (!presented) return false;
  if (presented === keys.masterKey) return true;
  return level === 'function' && presented === keys.functionKey;
}
