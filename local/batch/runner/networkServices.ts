/**
 * Shared-network services: file servers that live in a virtual network (a head node's NFS export, NetApp Files,
 * Azure Files NFS), declared in the emulator's configuration for one subnet. Each is an entry of the hosts map at its
 * address, marked as a service of that subnet (5th column), whose root is `<dataDir>/network-services/<address>`:
 * its exports are that root's NFS table (nodetools/nfs), each export path a link to the directory configured for it.
 * The node tool `mount` mounts one only on a node whose pool is in the same subnet
 * (AZ_BATCH_EMULATOR_NODE_SUBNET); anywhere else the mount times out, as an unreachable server does.
 * A service may also declare TCP ports (a licence server's lmgrd and vendor daemon), served by a server of the local
 * stack and reached from the subnet's nodes only through a connect() shim (tcpServices.ts).
 * Not modelled: routing between peered networks, latency.
 */
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import { writeAtomically } from './sandbox';
import type { NetworkServiceTcpPort } from './tcpServices';

export interface NetworkServiceExport {
  /** The path clients mount (`<address>:<path>`), absolute. */
  path: string;
  /** The directory on this machine holding the exported files. */
  directory: string;
}

export interface NetworkService {
  /** A name for logs and docs. */
  name: string;
  /** The subnet (ARM id) the service is in: only nodes of pools in it reach the service. */
  subnetId: string;
  /** Its private address, e.g. 10.20.0.4 (must not be an emulated node's: those are 127.x). */
  address: string;
  /**
   * DNS names that resolve to the address in the subnet, e.g. `<account>.file.core.windows.net` for an Azure Files
   * NFS share reached through a private endpoint (the private DNS zone answers its address): a Batch NFS mount of
   * `<name>:/path` is this service's export.
   */
  names?: string[];
  exports: NetworkServiceExport[];
  /** TCP ports the service listens on, each served by a local server (tcpServices.ts). */
  tcp?: NetworkServiceTcpPort[];
}

export interface ServiceHostEntry {
  ip: string;
  root: string;
  subnet: string;
  /** NetworkService.names, lower case. */
  names: string[];
}

/** Lays out each service's root (export links and the NFS export table) and returns its hosts-map entries. */
export function prepareNetworkServices(dataDir: string, services: readonly NetworkService[]): ServiceHostEntry[] {
  return services.map((s) => {
    if (!/^\d{1,3}(?:\.\d{1,3}){3}$/.test(s.address) || s.address.startsWith('127.')) {
      throw new Error(`network service ${s.name}: address ${s.address} must be an IPv4 address outside 127.0.0.0/8 (emulated nodes use those)`);
    }
    const root = path.join(dataDir, 'network-services', s.address);
    rmSync(root, { recursive: true, force: true });
    mkdirSync(path.join(root, 'volatile', 'emulator-nfs'), { recursive: true });
    const table: string[] = [];
    for (const e of s.exports) {
      if (!e.path.startsWith('/') || e.path.split('/').includes('..')) throw new Error(`network service ${s.name}: export path ${e.path} must be absolute`);
      const at = path.join(root, e.path);
      mkdirSync(path.dirname(at), { recursive: true });
      mkdirSync(e.directory, { recursive: true });
      symlinkSync(e.directory, at, 'dir');
      table.push(`*\t${at}\trw`);
    }
    writeAtomically(path.join(root, 'volatile', 'emulator-nfs', 'exports'), table.length ? `${table.join('\n')}\n` : '');
    return { ip: s.address, root, subnet: s.subnetId.toLowerCase(), names: (s.names ?? []).map((n) => n.toLowerCase()) };
  });
}
