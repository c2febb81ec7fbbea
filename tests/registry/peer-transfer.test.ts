/**
 * Image copies between emulated nodes, as the PullingImages stage issues them (shared/core/mpi/imageTransfer.ts): a seed
 * pulls from the local registry, the other nodes copy from a peer through the emulator's ssh stand-in with the real
 * node `docker save | docker load`, and every copy checks the digests. Real processes, real bytes; the registry's
 * own counters show it served the image once.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { RegistryHandle, startRegistry } from '../../local/registry';
import { writeEnvFile, writeHostsFile } from '../../local/batch/runner/sandbox';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { bashCommandLine } from '../../shared/core/mpi/shellQuote';
import { GLUE_STRICT } from '../../shared/core/mpi/userShell';
import { SOURCE_LOST_EXIT, parseDigestLines, peerCopyScriptLines, seedScriptLines } from '../../shared/core/mpi/imageTransfer';
import { pullLines } from '../../shared/core/mpi/commands';
import { createHash } from 'node:crypto';
import { splitCommandLine } from '../../local/batch/runner/commandLine';
import { TestNode, cleanupNodes, makeBaseDir, makeNode, verifyNodeImage } from './nodeHarness';

const SSH_BIN = path.resolve(__dirname, '../../local/batch/runner/bin');
const JOB = 'job-peers';
let registry: RegistryHandle;
let base: string;
let ref: string;
const nodes: Record<string, TestNode & { ip: string }> = {};

async function node(name: string, ip: string, extraEnv: Record<string, string> = {}): Promise<TestNode & { ip: string }> {
  const n = await makeNode(base, name);
  const shared = path.join(n.root, 'shared');
  await mkdir(shared, { recursive: true });
  const env = {
    ...n.env,
    PATH: `${SSH_BIN}:${n.env.PATH}`,
    AZ_BATCH_NODE_SHARED_DIR: shared,
    AZ_BATCH_EMULATOR_HOSTS: path.join(base, 'hosts'),
    AZ_BATCH_EMULATOR_NODE_IP: ip,
    ...extraEnv,
  } as Record<string, string>;
  writeEnvFile(path.join(base, `${name}.env`), Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined)) as Record<string, string>);
  const made = { ...n, env, ip };
  nodes[name] = made;
  writeHostsFile(
    path.join(base, 'hosts'),
    Object.values(nodes).map((x) => ({ ip: x.ip, root: x.root, envFile: path.join(base, `${x.id}.env`) })),
  );
  return made;
}

/** Runs a Batch command line on a node the way the emulator does (no shell around it: split, then exec). */
function runOn(n: TestNode, commandLine: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const [cmd, ...args] = splitCommandLine(commandLine);
  return new Promise((resolve) => {
    // stdin from /dev/null as Batch gives tasks (a socket on stdin makes bash believe sshd started it).
    const child = spawn(cmd, args, { env: n.env, cwd: n.taskDir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

const images = () => ({ runtime: 'docker' as const, refs: [ref] });
const seed = (n: TestNode) => runOn(n, bashCommandLine([GLUE_STRICT, ...seedScriptLines(JOB, images(), [`docker pull -q ${ref}`])].join('; ')));
const copy = (n: TestNode, from: TestNode & { ip: string }, extra: { expected?: string[]; waitSeconds?: number; turn?: number } = {}) =>
  runOn(
    n,
    bashCommandLine(
      [GLUE_STRICT, ...peerCopyScriptLines({ jobKey: JOB, images: images(), source: { nodeId: from.id, ipAddress: from.ip }, ...extra })].join('; '),
    ),
  );
const refKey = () => ref;

beforeAll(async () => {
  base = await makeBaseDir('peer-transfer-');
  registry = await startRegistry({ images: [await buildDemoImage({ fillerBytes: 512 * 1024 })], maxConcurrentPulls: 10 });
  ref = `${registry.host}/hpc/mpi-demo:1.0`;
  await node('a', '127.0.10.1');
  await node('b', '127.0.10.2');
  await node('c', '127.0.10.3');
}, 120_000);

afterAll(async () => {
  await registry?.stop();
  if (base) await cleanupNodes(base);
});

test('a seed pulls from the registry; a chain of peers copies from it; every node reports the same verified digest; the registry served one pull', async () => {
  registry.resetStats();
  const a = await seed(nodes.a);
  expect(a.stderr).toBe('');
  expect(a.code).toBe(0);
  const digests = parseDigestLines(a.stdout, 1)!;
  expect(digests[0]).toMatch(/^sha256:[a-f0-9]{64}$/);
  const b = await copy(nodes.b, nodes.a);
  expect(b.stderr).toBe('');
  expect(b.code).toBe(0);
  expect(parseDigestLines(b.stdout, 1)).toEqual(digests);
  const c = await copy(nodes.c, nodes.b, { expected: digests });
  expect(c.code).toBe(0);
  expect(parseDigestLines(c.stdout, 1)).toEqual(digests);
  for (const n of [nodes.a, nodes.b, nodes.c]) expect(await verifyNodeImage(n, refKey())).toEqual([]);
  const stats = registry.stats();
  expect(stats.totalPulls).toBe(1);
  expect(Object.keys(stats.perClient)).toHaveLength(1);
  // Nothing is left in the stores' temp folders or the serving node's network registry.
  expect(await readdir(path.join(nodes.a.root, 'docker', 'images', 'tmp')).catch(() => [])).toEqual([]);
}, 120_000);

test('a copy waits for a source that is still pulling, then gets the image', async () => {
  const d = await node('d', '127.0.10.4');
  const e = await node('e', '127.0.10.5');
  const waiting = copy(e, d);
  await new Promise((r) => setTimeout(r, 1500));
  expect((await seed(d)).code).toBe(0);
  const got = await waiting;
  expect(got.stderr).toBe('');
  expect(got.code).toBe(0);
  expect(await verifyNodeImage(e, refKey())).toEqual([]);
}, 120_000);

test('a source that failed, one that never gets the image and one that cannot be reached end the copy with the source-lost code', async () => {
  const f = await node('f', '127.0.10.6');
  const g = await node('g', '127.0.10.7');
  await mkdir(path.join(f.root, 'shared', 'mpijob', 'images', JOB), { recursive: true });
  await writeFile(path.join(f.root, 'shared', 'mpijob', 'images', JOB, 'failed'), '');
  const failed = await copy(g, f);
  expect(failed.code).toBe(SOURCE_LOST_EXIT);
  expect(failed.stderr).toContain(`[mpijob] source node f (127.0.10.6): has not got the images`);
  expect(failed.stderr).toContain('it failed to get the images');
  // The failed copy marks g as failed in turn: nodes waiting on g give up too.
  expect(await readdir(path.join(g.root, 'shared', 'mpijob', 'images', JOB))).toContain('failed');

  const h = await node('h', '127.0.10.8');
  const timedOut = await copy(g, h, { waitSeconds: 1 });
  expect(timedOut.code).toBe(SOURCE_LOST_EXIT);
  expect(timedOut.stderr).toContain('did not hold the images after 1 s');

  const unreachable = await copy(g, { ...h, id: 'gone', ip: '127.0.99.99' });
  expect(unreachable.code).toBe(SOURCE_LOST_EXIT);
  expect(unreachable.stderr).toContain('No route to host');
}, 120_000);

test('a copy whose bytes do not match the digest the source recorded, or the pinned one, fails with the digests in the message', async () => {
  const i = await node('i', '127.0.10.9');
  const j = await node('j', '127.0.10.10');
  const k = await node('k', '127.0.10.11');
  expect((await seed(i)).code).toBe(0);
  const stateFile = path.join(i.root, 'shared', 'mpijob', 'images', JOB, 'digests');
  const real = (await readFile(stateFile, 'utf8')).trim();
  const wrong = `sha256:${'0'.repeat(64)}`;
  await writeFile(stateFile, `${wrong}\n`);
  const mismatch = await copy(j, i);
  expect(mismatch.code).toBe(1);
  expect(mismatch.stderr).toContain(`[mpijob] image ${ref}: digest mismatch after the copy from node i (127.0.10.9): the source holds ${wrong}, got ${real}`);
  await writeFile(stateFile, `${real}\n`);

  const pinned = await copy(k, i, { expected: [wrong] });
  expect(pinned.code).toBe(1);
  expect(pinned.stderr).toContain(`digest mismatch after getting it from node i (127.0.10.9): expected ${wrong}, got ${real}`);
}, 120_000);

test('a corrupted blob on the source is refused by docker load: the node does not get the image', async () => {
  const l = await node('l', '127.0.10.12');
  const m = await node('m', '127.0.10.13');
  expect((await seed(l)).code).toBe(0);
  const blobs = path.join(l.root, 'docker', 'images', 'blobs', 'sha256');
  const files = await readdir(blobs);
  // The largest blob is the filler layer: flip its content, keep its size.
  const sizes = await Promise.all(files.map(async (f) => ({ f, size: (await readFile(path.join(blobs, f))).length })));
  const layer = sizes.sort((x, y) => y.size - x.size)[0].f;
  const bytes = await readFile(path.join(blobs, layer));
  bytes[100] ^= 0xff;
  await writeFile(path.join(blobs, layer), bytes);
  const got = await copy(m, l);
  expect(got.code).toBe(1);
  expect(got.stderr).toContain(`[mpijob] image ${ref}: the copy from node l (127.0.10.12) did not load`);
  expect(await verifyNodeImage(m, refKey())).toEqual([`m: no ${ref} in the image store`]);
}, 120_000);

test('a source serves its copies in turn: the copy with turn 0 is served before the one with turn 1, even when it asks later', async () => {
  const src = await node('p', '127.0.10.14', { AZ_BATCH_EMULATOR_NODE_BANDWIDTH: String(2 * 1024 * 1024) });
  const first = await node('q', '127.0.10.15');
  const second = await node('r', '127.0.10.16');
  expect((await seed(src)).code).toBe(0);
  const ended: string[] = [];
  const late = copy(second, src, { turn: 1 }).then((r) => (ended.push('turn 1'), r));
  await new Promise((r) => setTimeout(r, 1000));
  const early = copy(first, src, { turn: 0 }).then((r) => (ended.push('turn 0'), r));
  const [a, b] = await Promise.all([early, late]);
  expect([a.code, b.code]).toEqual([0, 0]);
  expect(ended).toEqual(['turn 0', 'turn 1']);
  expect(await readFile(path.join(src.root, 'shared', 'mpijob', 'images', JOB, 'served.0'), 'utf8')).toBe('2\n');
}, 120_000);

test('singularity: a seed pulls the SIF, a peer copies the file and checks its sha256 (the emulated SIF is a pointer to the layer cache: the command path and the check are what runs here)', async () => {
  const sifImages = { runtime: 'singularity' as const, count: 1 };
  const s1 = await node('s1', '127.0.10.17');
  const s2 = await node('s2', '127.0.10.18');
  const seeded = await runOn(
    s1,
    bashCommandLine(
      [GLUE_STRICT, ...seedScriptLines(JOB, sifImages, pullLines({ runtime: 'singularity', image: ref, sifCacheKey: JOB, sifIndex: 0 }))].join('; '),
    ),
  );
  expect(seeded.stderr).not.toContain('[mpijob]');
  expect(seeded.code).toBe(0);
  const sif = (n: TestNode) => path.join(n.root, 'shared', 'mpijob', 'sif', JOB, '0.sif');
  const digest = `sha256:${createHash('sha256')
    .update(await readFile(sif(s1)))
    .digest('hex')}`;
  expect(parseDigestLines(seeded.stdout, 1)).toEqual([digest]);
  const copied = await runOn(
    s2,
    bashCommandLine(
      [GLUE_STRICT, ...peerCopyScriptLines({ jobKey: JOB, images: sifImages, source: { nodeId: s1.id, ipAddress: s1.ip }, expected: [digest] })].join('; '),
    ),
  );
  expect(copied.stderr).toBe('');
  expect(copied.code).toBe(0);
  expect(parseDigestLines(copied.stdout, 1)).toEqual([digest]);
  expect(await readFile(sif(s2))).toEqual(await readFile(sif(s1)));
}, 120_000);
