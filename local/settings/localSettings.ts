/**
 * local.settings.json as Core Tools reads it: `Values` become environment variables for the app.
 * As with `func start`, a variable already set in the environment wins over the file.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

function readLocalSettings(appDir: string): { file: string; parsed?: Record<string, unknown> } {
  const file = path.join(appDir, 'local.settings.json');
  if (!existsSync(file)) return { file };
  try {
    return { file, parsed: JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown> };
  } catch (err) {
    throw new Error(`Invalid local.settings.json at ${file}: ${(err as Error).message}`);
  }
}

/** `Host.LocalHttpPort` of local.settings.json (Core Tools' default port for `func start`), if set. */
export function localHttpPort(appDir: string): number | undefined {
  const { file, parsed } = readLocalSettings(appDir);
  const value = (parsed?.Host as { LocalHttpPort?: unknown } | undefined)?.LocalHttpPort;
  if (value === undefined) return undefined;
  const port = Number(value);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${file}: Host.LocalHttpPort must be a port number, got ${JSON.stringify(value)}`);
  return port;
}

export function loadLocalSettings(appDir: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const { file, parsed } = readLocalSettings(appDir);
  if (!parsed) return {};
  if (parsed.IsEncrypted === true) throw new Error(`${file} is encrypted; the local host reads only plain settings`);
  const values = parsed.Values ?? {};
  if (typeof values !== 'object' || Array.isArray(values)) throw new Error(`${file}: "Values" must be an object`);
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(values as Record<string, unknown>)) {
    if (env[key] !== undefined) continue;
    if (typeof value === 'string') out[key] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') out[key] = String(value);
    else throw new Error(`${file}: Values.${key} must be a string, got ${JSON.stringify(value)}`);
  }
  return out;
}
