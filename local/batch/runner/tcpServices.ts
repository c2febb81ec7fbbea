/**
 * TCP services in the emulator's virtual networks: a port of a shared-network service (networkServices.ts), such as
 * a FlexLM licence server's lmgrd at 10.0.0.4:27000, served by a server of the local stack on 127.0.0.1:<target>.
 * Nodes of pools in the service's subnet connect to the modelled address with ordinary tools (bash's /dev/tcp, a
 * licence client); from any other node the connection times out, as behind a network security group that drops it.
 *
 * Emulated nodes are processes of one machine, so 10.0.0.4 is no address here: every process of a node runs with
 * the small connect() shim tcpshim/emutcp.c preloaded (LD_PRELOAD), compiled at the emulator's start with the
 * machine's C compiler into its data folder. The shim reads the table written here and, per connection, the node's
 * subnet (AZ_BATCH_EMULATOR_NODE_SUBNET): it really routes the connection to the stack's port, or fails it.
 * Not modelled: latency, peering and routes between networks, UDP, IPv6, statically linked clients (they bypass
 * the shim and see the machine's own network), and the address a server sees (127.0.0.1, not the node's).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { writeAtomically } from './sandbox';

/** One modelled port of a network service and the local port that serves it. */
export interface NetworkServiceTcpPort {
  /** The port clients connect to at the service's address (e.g. 27000). */
  port: number;
  /** The port on 127.0.0.1 where the local stack's server for it listens. */
  target: number;
}

/** What the emulator needs of a service here (a NetworkService has these). */
export interface TcpServiceInput {
  name: string;
  subnetId: string;
  address: string;
  tcp?: readonly NetworkServiceTcpPort[];
}

/** Whether nodes reach the TCP services, and the environment that makes them (empty when there are none). */
export interface TcpServices {
  /** False when services declare ports but the shim could not be built here (`reason` says why). */
  available: boolean;
  reason?: string;
  /** LD_PRELOAD and AZ_BATCH_EMULATOR_TCP_SERVICES for every process of every node; empty without services. */
  env: Record<string, string>;
}

export const TCP_SHIM_SOURCE = path.join(__dirname, 'tcpshim', 'emutcp.c');

const isPort = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535;

/** The shim's table ("address<TAB>port<TAB>subnet<TAB>target" lines); throws on a malformed or repeated port. */
export function tcpServicesTable(services: readonly TcpServiceInput[]): string {
  const seen = new Set<string>();
  const lines: string[] = [];
  for (const s of services) {
    for (const [i, p] of (s.tcp ?? []).entries()) {
      if (!isPort(p.port)) throw new Error(`network service ${s.name}: tcp[${i}].port must be an integer in [1, 65535], got ${JSON.stringify(p.port)}`);
      if (!isPort(p.target)) throw new Error(`network service ${s.name}: tcp[${i}].target must be an integer in [1, 65535], got ${JSON.stringify(p.target)}`);
      const key = `${s.address}:${p.port}`;
      if (seen.has(key)) throw new Error(`network service ${s.name}: ${key} is declared twice`);
      seen.add(key);
      lines.push(`${s.address}\t${p.port}\t${s.subnetId.toLowerCase()}\t${p.target}`);
    }
  }
  return lines.length ? `${lines.join('\n')}\n` : '';
}

/**
 * Writes the table and builds the shim into `<dataDir>/tcp-services/` when some service declares ports. Without a C
 * compiler (or when it fails) nodes get no shim: `available` is false and `reason` says why.
 */
export function prepareTcpServices(dataDir: string, services: readonly TcpServiceInput[], compiler = process.env.CC || 'cc'): TcpServices {
  const table = tcpServicesTable(services);
  if (!table) return { available: true, env: {} };
  const dir = path.join(dataDir, 'tcp-services');
  mkdirSync(dir, { recursive: true });
  const tableFile = path.join(dir, 'table');
  writeAtomically(tableFile, table);
  const library = path.join(dir, 'emutcp.so');
  const built = spawnSync(compiler, ['-shared', '-fPIC', '-O2', '-Wall', '-o', library, TCP_SHIM_SOURCE, '-ldl', '-lpthread'], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (built.error || built.status !== 0) {
    const why = built.error ? built.error.message : (built.stderr || `exit code ${built.status}`).trim();
    return { available: false, reason: `cannot build the connect() shim ${TCP_SHIM_SOURCE} with ${compiler}: ${why}`, env: {} };
  }
  // The loader ignores a library it cannot preload (with a warning on every process's stderr): check it loads.
  const loads = spawnSync('/bin/sh', ['-c', 'true'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LD_PRELOAD: library },
    timeout: 10_000,
  });
  if (loads.status !== 0 || loads.stderr.trim())
    return { available: false, reason: `the connect() shim ${library} does not load: ${loads.stderr.trim() || `exit code ${loads.status}`}`, env: {} };
  return { available: true, env: { LD_PRELOAD: library, AZ_BATCH_EMULATOR_TCP_SERVICES: tableFile } };
}
