/**
 * Fixed paths (/apps, /data, /home/<user>) on emulated nodes. On Azure the pool's start task bind-mounts a Batch
 * mount at its fixed path, as root, in the node's one mount table. Emulated nodes are processes of one machine: a
 * real /apps would be the same for every node of every pool. So every process the emulator starts on a node (tasks,
 * start tasks, and what the ssh stand-in runs there) runs in a private mount namespace of its own (unshare -m), where
 * bin/node-namespace bind-mounts the node's fixed paths from its table (NODE_ROOT/volatile/emulator-binds, written
 * by the node tool `mount --bind`). The binds are real kernel bind mounts, private to the node's processes; the
 * mount points are empty directories made on this machine. Needs unshare(1) and the right to make mount namespaces
 * (root, as the stack runs here); without it nothing is wrapped and `mount --bind` on a node says why.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { LAUNCHER_BIN_DIR } from './env';

export const NODE_NAMESPACE = path.join(LAUNCHER_BIN_DIR, 'node-namespace');

let available: boolean | undefined;

/** Whether this machine lets the emulator make private mount namespaces (checked once). */
export function mountNamespacesAvailable(): boolean {
  if (available === undefined) {
    const r = spawnSync('unshare', ['-m', '--propagation', 'private', '--', 'true'], { stdio: 'ignore', timeout: 10_000 });
    available = r.status === 0;
  }
  return available;
}

/** The node's fixed-path table (path, source, ro|rw per line). */
export function bindsFile(nodeRoot: string): string {
  return path.join(nodeRoot, 'volatile', 'emulator-binds');
}

/** `argv` as it runs on the node: in a mount namespace holding the node's fixed paths, when the machine allows it. */
export function inNodeNamespace(nodeRoot: string, argv: string[]): string[] {
  return mountNamespacesAvailable() ? ['unshare', '-m', '--propagation', 'private', '--', NODE_NAMESPACE, nodeRoot, ...argv] : argv;
}
