/**
 * A pool's mountConfiguration, modelled: there are no file servers, so each mount is one directory of the emulator
 * (`<dataDir>/mounts/<kind>-<hash of its source>`) that every node of every pool mounting the same source sees at
 * `AZ_BATCH_NODE_MOUNTS_DIR/<relativeMountPath>`, as a symbolic link. What one node writes there the others read,
 * as on a shared file system. Nothing reaches the named server, share or container: a blobfuse mount is not backed by
 * the blob container, an NFS mount by no NFS server.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
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
  /** The shared directory standing in for the file system. */
  target: string;
  kind: string;
  source: string;
}

/** The mounts of a pool's mountConfiguration, each with the directory that models it. */
export function modelledMounts(dataDir: string, mountConfiguration: unknown): ModelledMount[] {
  if (!Array.isArray(mountConfiguration)) return [];
  const out: ModelledMount[] = [];
  for (const m of mountConfiguration as Json[]) {
    for (const [prop, kind, sourceOf] of KINDS) {
      const c = m[prop] as Json | undefined;
      if (!c) continue;
      const source = sourceOf(c);
      const key = `${kind}-${createHash('sha256').update(source).digest('hex').slice(0, 16)}`;
      out.push({ relativeMountPath: String(c.relativeMountPath), target: path.join(dataDir, 'mounts', key), kind, source });
    }
  }
  return out;
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
