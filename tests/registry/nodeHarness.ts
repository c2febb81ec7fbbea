/**
 * Emulated nodes for the registry and node-tool tests: sandbox directories with the AZ_BATCH_* environment the
 * Batch emulator gives tasks, and a runner for the real `docker` / `singularity` commands of
 * local/batch/nodetools/bin (the same executables node tasks find first on their PATH).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';

export const NODETOOLS_BIN = path.resolve(__dirname, '../../local/batch/nodetools/bin');

export interface TestNode {
  id: string;
  root: string;
  taskDir: string;
  env: NodeJS.ProcessEnv;
}

export interface ToolResult {
  code: number;
  stdout: string;
  stderr: string;
}

export async function makeBaseDir(prefix: string): Promise<string> {
  return mkdtemp(path.join(tmpdir(), prefix));
}

export async function makeNode(baseDir: string, id: string, poolId = 'test-pool'): Promise<TestNode> {
  const root = path.join(baseDir, id);
  const taskDir = path.join(root, 'workitems', 'job', 'job-1', 'task', 'wd');
  await mkdir(taskDir, { recursive: true });
  await mkdir(path.join(root, 'startup', 'wd'), { recursive: true });
  // Each node its own /tmp, as the emulator gives its nodes (local/batch/runner/env.ts): Open MPI keeps its session
  // directory under TMPDIR, and two "hosts" sharing one raced there (mpirun exit 139 in CI).
  const tmp = path.join(root, 'node-tmp');
  await mkdir(tmp, { recursive: true });
  const env: NodeJS.ProcessEnv = {
    PATH: `${NODETOOLS_BIN}:${process.env.PATH ?? '/usr/bin:/bin'}`,
    HOME: process.env.HOME,
    TMPDIR: tmp,
    AZ_BATCH_NODE_ROOT_DIR: root,
    AZ_BATCH_NODE_ID: id,
    AZ_BATCH_POOL_ID: poolId,
    AZ_BATCH_NODE_STARTUP_DIR: path.join(root, 'startup'),
    AZ_BATCH_TASK_WORKING_DIR: taskDir,
  };
  return { id, root, taskDir, env };
}

export function runTool(
  node: TestNode,
  tool: 'docker' | 'singularity',
  args: string[],
  opts: { input?: string; cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<ToolResult> {
  return new Promise((resolve) => {
    const child = execFile(
      path.join(NODETOOLS_BIN, tool),
      args,
      { env: { ...node.env, ...opts.env }, cwd: opts.cwd ?? node.taskDir, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
    if (opts.input !== undefined) child.stdin?.end(opts.input);
    else child.stdin?.end();
  });
}

/**
 * Checks a node's image store independently of the docker command: the reference exists and every blob of the
 * image is present with the digest its name claims. Returns the problems found (empty when the image is intact).
 */
export async function verifyNodeImage(node: TestNode, refKey: string): Promise<string[]> {
  const store = path.join(node.root, 'docker', 'images');
  const problems: string[] = [];
  const refs = JSON.parse(await readFile(path.join(store, 'refs.json'), 'utf8').catch(() => '{"refs":{}}')) as {
    refs: Record<string, { manifestDigest: string }>;
  };
  const ref = refs.refs[refKey];
  if (!ref) return [`${node.id}: no ${refKey} in the image store`];
  const blob = async (digest: string): Promise<Buffer | undefined> => readFile(path.join(store, 'blobs', 'sha256', digest.slice(7))).catch(() => undefined);
  const manifestBytes = await blob(ref.manifestDigest);
  if (!manifestBytes) return [`${node.id}: manifest ${ref.manifestDigest} missing`];
  const manifest = JSON.parse(manifestBytes.toString('utf8')) as { config: { digest: string }; layers: { digest: string }[] };
  for (const d of [ref.manifestDigest, manifest.config.digest, ...manifest.layers.map((l) => l.digest)]) {
    const bytes = await blob(d);
    if (!bytes) problems.push(`${node.id}: blob ${d} missing`);
    else if (`sha256:${createHash('sha256').update(bytes).digest('hex')}` !== d) problems.push(`${node.id}: blob ${d} has other content`);
  }
  const leftovers = await readdir(path.join(store, 'tmp')).catch(() => []);
  if (leftovers.length) problems.push(`${node.id}: partial downloads left in tmp: ${leftovers.join(', ')}`);
  return problems;
}

/** Kills whatever containers the nodes under baseDir still run (process groups from their records), then deletes it. */
export async function cleanupNodes(baseDir: string): Promise<void> {
  for (const node of await readdir(baseDir).catch(() => [])) {
    const cdir = path.join(baseDir, node, 'containers');
    for (const name of await readdir(cdir).catch(() => [])) {
      const rec = JSON.parse(await readFile(path.join(cdir, name, 'config.json'), 'utf8').catch(() => '{}')) as { pid?: number; state?: string };
      if (rec.pid && rec.state === 'running') {
        try {
          process.kill(-rec.pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    }
  }
  await rm(baseDir, { recursive: true, force: true });
}
