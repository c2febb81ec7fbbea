import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { shellQuote } from '../nodetools/lib/shellQuote';

/** Where the emulator keeps a node's files; each node's root mirrors /mnt/batch/tasks on a Linux node. */
export interface NodeDirs {
  root: string;
  shared: string;
  startup: string;
  workitems: string;
  mounts: string;
  certs: string;
  applications: string;
  volatile: string;
  containers: string;
  /** Shell-sourceable node environment used by the ssh launcher (kept outside the node root). */
  envFile: string;
  tmp: string;
}

export function nodeDirs(dataDir: string, poolId: string, nodeId: string): NodeDirs {
  const base = path.join(dataDir, 'nodes', safeSegment(poolId));
  const root = path.join(base, nodeId);
  return {
    root,
    shared: path.join(root, 'shared'),
    startup: path.join(root, 'startup'),
    workitems: path.join(root, 'workitems'),
    mounts: path.join(root, 'fsmounts'),
    certs: path.join(root, 'certs'),
    applications: path.join(root, 'applications'),
    volatile: path.join(root, 'volatile'),
    containers: path.join(root, 'containers'),
    envFile: path.join(base, `${nodeId}.env`),
    tmp: nodeTmpDir(root),
  };
}

/**
 * The node's own temporary directory (its /tmp). Every real Batch node has one; emulated nodes share one machine, and
 * without it the ORTE daemons of a 40-node mpirun race creating and removing the same session directory under /tmp
 * (`mkdir /tmp/ompi.<host>.0/jf.N/...: No such file or directory`, mpirun exit 213). It is short on purpose:
 * PMIx puts Unix sockets in it, and socket paths are limited to 108 bytes.
 */
export function nodeTmpDir(nodeRoot: string): string {
  return path.join(tmpdir(), `bnode-${createHash('sha1').update(nodeRoot).digest('hex').slice(0, 12)}`);
}

/** Pool and job ids are [A-Za-z0-9_-]{1,64}, but a defensive pass keeps paths inside the data dir. */
export function safeSegment(id: string): string {
  return id.replace(/[^A-Za-z0-9_.-]/g, '_');
}

export function createNodeSandbox(d: NodeDirs): void {
  for (const dir of [d.shared, d.startup, path.join(d.startup, 'wd'), d.workitems, d.mounts, d.certs, d.applications, d.volatile, d.containers, d.tmp]) {
    mkdirSync(dir, { recursive: true });
  }
}

/** Task root relative to the node root, as Batch reports it in nodeInfo.taskRootDirectory. */
export function taskRootRelative(jobId: string, taskId: string): string {
  return `workitems/${safeSegment(jobId)}/job-1/${safeSegment(taskId)}`;
}

export function writeEnvFile(file: string, env: Record<string, string>): void {
  const body = Object.entries(env)
    .map(([k, v]) => `export ${k}=${shellQuote(v)}`)
    .join('\n');
  writeAtomically(file, body + '\n');
}

export function writeAtomically(file: string, content: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, content);
  renameSync(tmp, file);
}

/**
 * The hosts map read by the ssh launcher: `ip<TAB>nodeRoot<TAB>envFile<TAB>faults` per live node, where faults is
 * `-` or comma-separated `refuse` / `delay=<ms>` (the node's injected ssh faults).
 */
export function writeHostsFile(file: string, entries: { ip: string; root: string; envFile: string; faults?: string[]; subnet?: string }[]): void {
  // The 5th column marks a shared-network service and its subnet (networkServices.ts); nodes have none.
  writeAtomically(
    file,
    entries.map((e) => `${e.ip}\t${e.root}\t${e.envFile}\t${e.faults?.length ? e.faults.join(',') : '-'}${e.subnet ? `\t${e.subnet}` : ''}`).join('\n') + '\n',
  );
}
