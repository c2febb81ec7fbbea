/**
 * A pool's mountConfiguration, modelled: there are no file servers, so each mount is one directory of the emulator
 * (`<dataDir>/mounts/<kind>-<hash of its source>`) that every node of every pool mounting the same source sees at
 * `AZ_BATCH_NODE_MOUNTS_DIR/<relativeMountPath>`, as a symbolic link. What one node writes there the others read,
 * as on a shared file system. Nothing reaches the named server, share or container: a blobfuse mount is not backed by
 * the blob container, an NFS mount by no NFS server.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, realpathSync, rmSync, symlinkSync } from 'node:fs';
import path from 'node:path';
import type { Json } from '../model/types';
import { writeAtomically } from './sandbox';

const KINDS = [
  ['nfsMountConfiguration', 'nfs', (c: Json) => String(c.source)],
  ['cifsMountConfiguration', 'cifs', (c: Json) => String(c.source)],
  ['azureFileShareConfiguration', 'azurefiles', (c: Json) => String(c.azureFileUrl).replace(/\/+$/, '').toLowerCase()],
  ['azureBlobFileSystemConfiguration', 'blobfuse', (c: Json) => `${String(c.accountName)}/${String(c.containerName)}`],
] as const;

export interface ModelledMount {
  relativeMountPath: string;
  /**
   * Why the node cannot mount it (a service in another subnet, a path it does not export), or undefined. Batch then
   * makes the node unusable with a MountConfigurationError in node.errors (engine.ts).
   */
  failure?: string;
  /** The shared directory standing in for the file system. */
  target: string;
  kind: string;
  source: string;
}

/** A shared-network service as the mounts see it (networkServices.ts): its address, root and subnet. */
export interface MountableService {
  ip: string;
  root: string;
  subnet: string;
  /** DNS names resolving to ip in the subnet (a private endpoint's). */
  names?: readonly string[];
}

/**
 * The mounts of a pool's mountConfiguration, each with the directory that models it. An NFS source on a
 * shared-network service's address (a head node, NetApp Files, Azure Files NFS in the pool's network) is that
 * service's exported directory, mounted only by a pool in the service's subnet: from anywhere else it fails (the
 * entry carries `failure`, and the node becomes unusable with a MountConfigurationError, as on Batch).
 */
export function modelledMounts(
  dataDir: string,
  mountConfiguration: unknown,
  network: { services?: readonly MountableService[]; subnet?: string } = {},
): ModelledMount[] {
  if (!Array.isArray(mountConfiguration)) return [];
  const out: ModelledMount[] = [];
  for (const m of mountConfiguration as Json[]) {
    for (const [prop, kind, sourceOf] of KINDS) {
      const c = m[prop] as Json | undefined;
      if (!c) continue;
      const source = sourceOf(c);
      const served = kind === 'nfs' ? servedDirectory(source, network) : undefined;
      const key = `${kind}-${createHash('sha256').update(source).digest('hex').slice(0, 16)}`;
      if (typeof served === 'object' && served !== null) {
        out.push({ relativeMountPath: String(c.relativeMountPath), target: '', kind, source, failure: served.failure });
        continue;
      }
      out.push({ relativeMountPath: String(c.relativeMountPath), target: served ?? path.join(dataDir, 'mounts', key), kind, source });
    }
  }
  return out;
}

/**
 * The directory a shared-network service serves for an NFS source: undefined when the host is no service; a failure
 * (mount.nfs's words) when the pool cannot mount it (another subnet, or a path the service does not export).
 */
function servedDirectory(source: string, network: { services?: readonly MountableService[]; subnet?: string }): string | undefined | { failure: string } {
  const host = source.slice(0, source.indexOf(':'));
  const service = network.services?.find((s) => s.ip === host || s.names?.includes(host.toLowerCase()));
  if (!service) return undefined;
  if ((network.subnet ?? '').toLowerCase() !== service.subnet) {
    return {
      failure: `mount.nfs: Connection timed out: ${host} is not reachable from this node (the pool is ${network.subnet ? 'in another subnet' : 'in no virtual network'})`,
    };
  }
  const at = path.join(service.root, path.posix.normalize(source.slice(source.indexOf(':') + 1)));
  try {
    // Only what the service exports (its NFS table: "*<TAB>path<TAB>options" lines).
    const exported = readFileSync(path.join(service.root, 'volatile', 'emulator-nfs', 'exports'), 'utf8')
      .split('\n')
      .map((l) => l.split('\t')[1])
      .filter(Boolean);
    if (!exported.some((e) => at === e || at.startsWith(`${e}/`))) return { failure: `mount.nfs: access denied by server while mounting ${source}` };
    return realpathSync(at);
  } catch {
    return { failure: `mount.nfs: mounting ${source} failed, reason given by server: No such file or directory` };
  }
}

/**
 * The node error Batch reports when a pool mount fails on a node ("If a mount configuration fails, the compute node
 * in the pool fails and the node state becomes unusable": Microsoft's "Mount a virtual file system on a Batch pool").
 */
export function mountConfigurationError(failed: readonly ModelledMount[]): Json {
  return {
    code: 'MountConfigurationError',
    message: `The node could not mount ${failed.map((m) => `${m.relativeMountPath} (${m.source}): ${m.failure ?? 'unknown'}`).join('; ')}`,
    errorDetails: failed.flatMap((m) => [
      { name: 'RelativeMountPath', value: m.relativeMountPath },
      { name: 'Source', value: m.source },
      { name: 'Reason', value: m.failure ?? 'unknown' },
    ]),
  };
}

/** Where a node records its modelled mounts (the output file upload reads it: a mounted file system is on the node). */
export function mountsRecordFile(nodeRoot: string): string {
  return path.join(nodeRoot, 'volatile', 'emulator-mounts.json');
}

/** Makes a node's mounts, as Batch does when the node starts (before its start task). */
export function mountOnNode(nodeRoot: string, mountsDir: string, mounts: ModelledMount[]): void {
  for (const m of mounts) {
    mkdirSync(m.target, { recursive: true });
    const at = path.join(mountsDir, m.relativeMountPath);
    mkdirSync(path.dirname(at), { recursive: true });
    if (isLinkOrDir(at)) rmSync(at, { recursive: false, force: true });
    symlinkSync(m.target, at, 'dir');
  }
  writeAtomically(mountsRecordFile(nodeRoot), JSON.stringify(mounts.map((m) => ({ path: path.join(mountsDir, m.relativeMountPath), target: m.target }))));
}

function isLinkOrDir(p: string): boolean {
  try {
    const st = lstatSync(p);
    return st.isSymbolicLink() || st.isDirectory();
  } catch {
    return false;
  }
}

/**
 * Every directory that is a file system mounted on the node (modelled mounts and the NFS model's mounts, see
 * nodetools/nfs): files there are on the node although they live outside its sandbox.
 */
export function mountedTargets(nodeRoot: string): string[] {
  const targets: string[] = [];
  try {
    for (const m of JSON.parse(readFileSync(mountsRecordFile(nodeRoot), 'utf8')) as { target: string }[]) targets.push(m.target);
  } catch {
    // no modelled mounts on this node
  }
  const nfs = path.join(nodeRoot, 'volatile', 'emulator-nfs', 'mounts');
  if (existsSync(nfs)) {
    for (const line of readFileSync(nfs, 'utf8').split('\n')) {
      const target = line.split('\t')[2];
      if (target) targets.push(target);
    }
  }
  return targets;
}
