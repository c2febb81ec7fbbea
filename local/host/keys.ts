/**
 * Host keys, as the Functions host keeps them: the host-level default function key, the master key, and
 * the system keys of extension webhooks (`durabletask_extension` for /runtime/webhooks/durabletask).
 * Kept in a git-ignored file (`<appDir>/.local/function-keys.json` by default) created with random keys on
 * first start, so URLs with ?code= keep working across restarts. A system key is created the first time its
 * extension asks for its webhook URL, as the host does, and saved to the file.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { IncomingMessage } from 'node:http';
import * as path from 'node:path';

export interface HostKeys {
  /** Accepted for authLevel "function" (the host-level default function key). */
  functionKey: string;
  /** Accepted for every auth level and every webhook, and the only key for "admin". */
  masterKey: string;
  /** Webhook keys by name (`<extension>_extension`, lower case); each opens only its extension's webhook. */
  systemKeys?: Record<string, string>;
}

export function defaultKeysFile(appDir: string): string {
  return path.join(appDir, '.local', 'function-keys.json');
}

function newKey(): string {
  return randomBytes(30).toString('base64url');
}

/** Written to a temporary file and renamed, so a host starting meanwhile never reads half a file. */
function writeKeys(file: string, keys: HostKeys): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  writeFileSync(tmp, JSON.stringify(keys, null, 2) + '\n', { mode: 0o600 });
  renameSync(tmp, file);
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
    const system = parsed.systemKeys ?? {};
    if (typeof system !== 'object' || system === null || Object.values(system).some((v) => typeof v !== 'string')) {
      throw new Error(`Host keys file ${file}: "systemKeys" must map key names to strings`);
    }
    return { functionKey: parsed.functionKey, masterKey: parsed.masterKey, systemKeys: { ...system } };
  }
  const keys: HostKeys = { functionKey: newKey(), masterKey: newKey(), systemKeys: {} };
  writeKeys(file, keys);
  return keys;
}

/** The system key name of an extension's webhook (the host's DefaultScriptWebHookProvider naming). */
export const webhookKeyName = (extensionName: string): string => `${extensionName.toLowerCase()}_extension`;

/** The host's keys plus where they are saved; creates system keys on demand. */
export class KeyStore {
  readonly keys: HostKeys;

  constructor(
    keys: HostKeys,
    /** Where created system keys are saved; undefined when the keys were given in code (tests). */
    private readonly file?: string,
  ) {
    this.keys = { ...keys, systemKeys: { ...(keys.systemKeys ?? {}) } };
  }

  /** The system key `name`, created (and saved) on first use. */
  systemKey(name: string): string {
    const system = this.keys.systemKeys!;
    const existing = findKey(system, name);
    if (existing !== undefined) return existing;
    const key = newKey();
    system[name.toLowerCase()] = key;
    if (this.file) writeKeys(this.file, this.keys);
    return key;
  }
}

function findKey(keys: Record<string, string>, name: string): string | undefined {
  const lower = name.toLowerCase();
  const match = Object.keys(keys).find((k) => k.toLowerCase() === lower);
  return match === undefined ? undefined : keys[match];
}

/** Constant-time comparison (both sides hashed first, so lengths do not leak either). */
export function sameKey(presented: string, expected: string): boolean {
  const a = createHash('sha256').update(presented).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** The key a request presents, as the host reads it: the x-functions-key header wins over ?code=. */
export function presentedKey(req: IncomingMessage, url: URL): string | undefined {
  const header = req.headers['x-functions-key'];
  const value = (Array.isArray(header) ? header[0] : header) ?? url.searchParams.get('code') ?? undefined;
  return value === '' ? undefined : value;
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
  if (sameKey(presented, keys.masterKey)) return true;
  return level === 'function' && sameKey(presented, keys.functionKey);
}

/**
 * Whether the presented key opens the webhook of `extensionName`: the master key, or that extension's own
 * system key (the host's SystemKeyAuthLevel policy; a function key or another extension's key does not).
 */
export function isWebhookAuthorized(extensionName: string, presented: string | undefined, keys: HostKeys): boolean {
  if (!presented) return false;
  if (sameKey(presented, keys.masterKey)) return true;
  const own = findKey(keys.systemKeys ?? {}, webhookKeyName(extensionName));
  return own !== undefined && sameKey(presented, own);
}
