/**
 * The emulated node's `singularity` (local/batch/nodetools/singularity) as the pipeline uses it: `pull --force <file>
 * docker://…` into the layer cache SINGULARITY_CACHEDIR names, a SIF file that another process (a rank, without that
 * variable) can run, `--nv` on a node without GPUs, and the transports the local stack has no service for.
 * Real processes and a real registry on loopback.
 */
import { readFile, readdir } from 'node:fs/promises';
import * as path from 'node:path';
import { RegistryHandle, startRegistry } from '../../local/registry';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { TestNode, cleanupNodes, makeBaseDir, makeNode, runTool } from './nodeHarness';

let registry: RegistryHandle;
let base: string;
let node: TestNode;
let ref: string;

beforeAll(async () => {
  base = await makeBaseDir('singularity-');
  registry = await startRegistry({ images: [await buildDemoImage({ fillerBytes: 16 * 1024 })] });
  node = await makeNode(base, 'sing-node');
  ref = `${registry.host}/hpc/mpi-demo:1.0`;
});

afterAll(async () => {
  await registry?.stop();
  if (base) await cleanupNodes(base);
});

test('pull --force into a named file uses SINGULARITY_CACHEDIR; the SIF runs without it', async () => {
  const cache = path.join(node.root, 'shared', 'singularity', 'cache');
  const sif = path.join(node.root, 'shared', 'mpijob', 'sif', 'job', '0.sif');
  const pull = await runTool(node, 'singularity', ['pull', '--force', sif, `docker://${ref}`], { env: { SINGULARITY_CACHEDIR: cache } });
  expect(pull.stderr).toContain('Creating SIF file');
  expect(pull.code).toBe(0);
  expect((await readdir(path.join(cache, 'oci', 'blobs', 'sha256'))).length).toBeGreaterThanOrEqual(3);
  // Not in docker's image store: singularity keeps its own cache.
  await expect(readFile(path.join(node.root, 'docker', 'images', 'refs.json'), 'utf8')).rejects.toThrow();
  expect((await runTool(node, 'singularity', ['inspect', sif])).code).toBe(0);
  const r = await runTool(node, 'singularity', ['exec', '--nv', '--pwd', node.taskDir, sif, 'mpi-demo', 'info']);
  expect(r.code).toBe(0);
  expect(r.stdout).toContain(`node=${node.id}`);
  expect(r.stderr).toContain('WARNING: Could not find any nv files on this host!');
  // --force replaces the file; without it an existing file is refused, as Singularity does.
  expect((await runTool(node, 'singularity', ['pull', '--force', sif, `docker://${ref}`], { env: { SINGULARITY_CACHEDIR: cache } })).code).toBe(0);
  expect((await runTool(node, 'singularity', ['pull', sif, `docker://${ref}`])).stderr).toMatch(/already exists/);
});

test('library:// and oras:// are refused, naming the transport; an image file it did not write is refused', async () => {
  const lib = await runTool(node, 'singularity', ['pull', '--force', 'x.sif', 'library://alfpark/mvapich/mvapich:2.3.2']);
  expect(lib.code).toBe(255);
  expect(lib.stderr).toMatch(/library:\/\/ needs the Sylabs cloud library/);
  const oras = await runTool(node, 'singularity', ['exec', 'oras://reg.local/sif/app:1', 'true']);
  expect(oras.code).toBe(255);
  expect(oras.stderr).toMatch(/oras:\/\/ needs an OCI registry holding SIF artifacts/);
  const foreign = await runTool(node, 'singularity', ['exec', '/etc/hostname', 'true']);
  expect(foreign.code).toBe(255);
  expect(foreign.stderr).toMatch(/FATAL/);
});

test('docker run --gpus fails as on a host without the NVIDIA runtime', async () => {
  const r = await runTool(node, 'docker', ['run', '--rm', '--gpus', 'all', ref, 'true']);
  expect(r.code).toBe(125);
  expect(r.stderr).toContain('could not select device driver "" with capabilities: [[gpu]]');
});
