/** Reading host.json and the TimeSpan strings ("hh:mm:ss", "d.hh:mm:ss.fff") it uses for durations. */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

export type HostJson = Record<string, unknown>;

export function readHostJson(appDir: string): HostJson {
  const file = path.join(appDir, 'host.json');
  if (!existsSync(file)) return { version: '2.0' };
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as HostJson;
  } catch (err) {
    throw new Error(`Invalid host.json at ${file}: ${(err as Error).message}`);
  }
}

/** `host.json` → extensions.<name>, or {} when absent. */
export function extensionSection(hostJson: HostJson, name: string): Record<string, unknown> {
  const ext = hostJson.extensions as Record<string, unknown> | undefined;
  const section = ext?.[name];
  return section && typeof section === 'object' ? (section as Record<string, unknown>) : {};
}

/** Milliseconds of a TimeSpan string: `[d.]hh:mm:ss[.fffffff]`. Numbers are taken as milliseconds. */
export function parseTimeSpan(value: unknown, what: string): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  const m = typeof value === 'string' ? /^(?:(\d+)\.)?(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{1,7}))?$/.exec(value.trim()) : null;
  if (!m) throw new Error(`${what}: expected a TimeSpan like "00:00:30", got ${JSON.stringify(value)}`);
  const [, days, h, min, s, frac] = m;
  const fraction = frac ? Number(`0.${frac}`) : 0;
  return ((Number(days ?? 0) * 24 + Number(h)) * 3600 + Number(min) * 60 + Number(s) + fraction) * 1000;
}

export function httpRoutePrefix(hostJson: HostJson): string {
  const prefix = extensionSection(hostJson, 'http').routePrefix;
  if (prefix === undefined) return 'api';
  if (typeof prefix !== 'string') throw new Error(`host.json extensions.http.routePrefix must be a string, got ${JSON.stringify(prefix)}`);
  return prefix.replace(/^\/+|\/+$/g, '');
}

const LEVELS: Record<string, string> = {
  trace: 'trace',
  debug: 'debug',
  information: 'info',
  warning: 'warn',
  error: 'error',
  critical: 'fatal',
  none: 'silent',
};

/** pino level for host.json `logging.logLevel.default` (Information when absent). */
export function hostJsonLogLevel(hostJson: HostJson): string {
  const logging = hostJson.logging as { logLevel?: { default?: unknown } } | undefined;
  const value = logging?.logLevel?.default;
  if (value === undefined) return 'info';
  const level = typeof value === 'string' ? LEVELS[value.toLowerCase()] : undefined;
  if (!level) throw new Error(`host.json logging.logLevel.default must be one of ${Object.keys(LEVELS).join(', ')} (any case), got ${JSON.stringify(value)}`);
  return level;
}
