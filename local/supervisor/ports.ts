/**
 * The ports of a stack that keeps its data. Addresses end up inside what the stack stores: SAS URLs of staged
 * shards in orchestration history and in Batch tasks' resource files, the Batch account URL in every node's
 * environment, the registry's host:port in docker image references, the Functions host's URL in the Durable
 * management links a client was given. So a restarted stack must listen where it listened before.
 *
 * The first start takes the ports it is asked for (0: any free port the OS gives) and records what it got in
 * `<data>/ports.json`; every later start on that folder asks for the recorded ones. An explicit non-zero port
 * wins over the record (and is recorded). A recorded port that something else took meanwhile fails the start
 * with a message naming the service, rather than moving the service and orphaning what points at it.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

export const SERVICE_NAMES = [
  'host',
  'blob',
  'queue',
  'table',
  'batch',
  'registry',
  'webhooks',
  'arm',
  'identity',
  'identityHttp',
  'prices',
  'keyVault',
] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];
export type StackPorts = Record<ServiceName, number>;

/** What each port is for, in messages. */
export const PORT_OWNER: Record<ServiceName, string> = {
  host: 'Functions host',
  blob: 'Azurite blob service',
  queue: 'Azurite queue service',
  table: 'Azurite table service',
  batch: 'Batch emulator',
  registry: 'OCI registry',
  webhooks: 'webhook receiver',
  arm: 'Batch management plane (Resource Manager)',
  // The issuer's https origin is inside every token it signed (iss) and in the CLI's saved authority.
  identity: 'identity service (https issuer)',
  identityHttp: 'identity service (loopback http: metadata, keys, managed identity endpoint)',
  prices: 'Retail Prices API stand-in',
  // KEY_VAULT_URL_TEMPLATE names it, and the app settings of a running host and the explain documents carry it.
  keyVault: 'Key Vault stand-in',
};

export function portsFile(dataDir: string): string {
  return path.join(dataDir, 'ports.json');
}

/** The recorded ports, or an empty record when the folder has none yet. */
export function readPorts(dataDir: string): Partial<StackPorts> {
  const file = portsFile(dataDir);
  if (!existsSync(file)) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read the stack's recorded ports in ${file}: ${(err as Error).message}`);
  }
  const out: Partial<StackPorts> = {};
  for (const name of SERVICE_NAMES) {
    const v = (parsed as Record<string, unknown>)?.[name];
    if (v === undefined) continue;
    if (!isPort(v) || v === 0) throw new Error(`${file}: "${name}" must be a port number in [1, 65535], got ${JSON.stringify(v)}`);
    out[name] = v;
  }
  return out;
}

/** Records ports (merged into what is recorded; 0 is never recorded). */
export function recordPorts(dataDir: string, ports: Partial<StackPorts>): void {
  const merged: Partial<StackPorts> = { ...readPorts(dataDir) };
  for (const name of SERVICE_NAMES) if (ports[name]) merged[name] = ports[name];
  mkdirSync(dataDir, { recursive: true });
  const file = portsFile(dataDir);
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(merged, null, 2) + '\n');
  renameSync(tmp, file);
}

/**
 * The port each service asks for: an explicit non-zero request, else the recorded port, else the request
 * (0 or a default).
 */
export function choosePorts(requested: Partial<StackPorts>, recorded: Partial<StackPorts>): Partial<StackPorts> {
  const out: Partial<StackPorts> = {};
  for (const name of SERVICE_NAMES) {
    const want = requested[name];
    if (want !== undefined && !isPort(want)) throw new Error(`${PORT_OWNER[name]} port must be an integer in [0, 65535], got ${want}`);
    const port = want ? want : (recorded[name] ?? want);
    if (port !== undefined) out[name] = port;
  }
  return out;
}

function isPort(v: unknown): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 65535;
}

/** A listen failure of one service, with what to do about it when the port was taken by something else. */
export function portInUse(err: unknown, name: ServiceName, port: number | undefined, dataDir: string | undefined): Error {
  const text = err instanceof Error ? err.message : String(err);
  if (!port || !new RegExp(`EADDRINUSE.*:${port}\\b`).test(text)) return err instanceof Error ? err : new Error(text);
  const recorded = dataDir
    ? ` It is the port recorded in ${portsFile(dataDir)}: jobs and data of this stack name it, so the service does ` +
      'not move. Stop what listens there (e.g. another stack on the same folder), or delete the file to take new ' +
      'ports (what was submitted before will then point at old addresses).'
    : '';
  return new Error(`${PORT_OWNER[name]}: port ${port} is in use.${recorded}\n${text}`);
}
