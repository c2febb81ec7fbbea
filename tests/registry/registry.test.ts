/**
 * The local registry's distribution API over real HTTP on loopback: content types and digests of manifests and
 * blobs, errors in the distribution-spec format, images from OCI layouts on disk, the concurrent-pull limit
 * (429 TOOMANYREQUESTS + Retry-After) and the stats. Also: a corrupted blob is rejected by `docker pull`.
 */
import { createHash } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import * as http from 'node:http';
import * as path from 'node:path';
import { BuiltImage, RegistryHandle, startRegistry } from '../../local/registry';
import { PullAdmission } from '../../local/registry/pullAdmission';
import { buildDemoImage } from '../../examples/images/buildDemoImage';
import { cleanupNodes, makeBaseDir, makeNode, runTool, verifyNodeImage } from './nodeHarness';

interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One request on a fresh connection (no keep-alive, so the test leaves no sockets behind). */
function request(url: string, opts: { method?: string; headers?: Record<string, string> } = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: opts.method ?? 'GET', headers: opts.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

let image: BuiltImage;
let registry: RegistryHandle;
let base: string;

beforeAll(async () => {
  base = await makeBaseDir('registry-test-');
  image = await buildDemoImage({ fillerBytes: 64 * 1024, layoutDir: path.join(base, 'layout') });
  registry = await startRegistry({ images: [image] });
});

afterAll(async () => {
  await registry?.stop();
  if (base) await cleanupNodes(base);
});

describe('distribution API', () => {
  test('GET /v2/ answers 200 with the API version header', async () => {
    const r = await request(`${registry.url}/v2/`);
    expect(r.status).toBe(200);
    expect(r.headers['docker-distribution-api-version']).toBe('registry/2.0');
  });

  test('manifest by tag and by digest: OCI content type, Docker-Content-Digest equal to the body digest', async () => {
    const byTag = await request(`${registry.url}/v2/hpc/mpi-demo/manifests/1.0`);
    expect(byTag.status).toBe(200);
    expect(byTag.headers['content-type']).toBe('application/vnd.oci.image.manifest.v1+json');
    expect(byTag.headers['docker-content-digest']).toBe(sha(byTag.body));
    expect(byTag.headers['docker-content-digest']).toBe(image.manifestDigest);
    const manifest = JSON.parse(byTag.body.toString('utf8')) as { config: { mediaType: string; digest: string }; layers: { mediaType: string }[] };
    expect(manifest.config.mediaType).toBe('application/vnd.oci.image.config.v1+json');
    expect(manifest.layers.map((l) => l.mediaType)).toEqual(['application/vnd.oci.image.layer.v1.tar+gzip', 'application/vnd.oci.image.layer.v1.tar+gzip']);
    const byDigest = await request(`${registry.url}/v2/hpc/mpi-demo/manifests/${image.manifestDigest}`);
    expect(byDigest.body.equals(byTag.body)).toBe(true);
    const head = await request(`${registry.url}/v2/hpc/mpi-demo/manifests/1.0`, { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(Number(head.headers['content-length'])).toBe(byTag.body.length);
    expect(head.body.length).toBe(0);
  });

  test('config blob carries Env, WorkingDir, Cmd and the layer diff_ids; layer blobs hash to their digests', async () => {
    const manifest = image.manifest;
    const cfg = await request(`${registry.url}/v2/hpc/mpi-demo/blobs/${manifest.config.digest}`);
    expect(cfg.status).toBe(200);
    expect(cfg.headers['docker-content-digest']).toBe(manifest.config.digest);
    const config = JSON.parse(cfg.body.toString('utf8')) as { config: { Env: string[]; WorkingDir: string; Cmd: string[] }; rootfs: { diff_ids: string[] } };
    expect(config.config.Env).toContain('MPI_DEMO_HOME=/opt/mpi-demo');
    expect(config.config.WorkingDir).toBe('/opt/mpi-demo');
    expect(config.config.Cmd).toEqual(['/usr/sbin/sshd', '-D', '-p', '23']);
    expect(config.rootfs.diff_ids).toHaveLength(manifest.layers.length);
    for (const l of manifest.layers) {
      const blob = await request(`${registry.url}/v2/hpc/mpi-demo/blobs/${l.digest}`);
      expect(blob.headers['content-type']).toBe('application/octet-stream');
      expect(sha(blob.body)).toBe(l.digest);
      expect(blob.body.length).toBe(l.size);
    }
  });

  test('unknown names, tags and blobs answer the distribution-spec error codes; push is refused', async () => {
    const codeOf = (r: Got): string => (JSON.parse(r.body.toString('utf8')) as { errors: { code: string }[] }).errors[0].code;
    expect(codeOf(await request(`${registry.url}/v2/nope/manifests/1.0`))).toBe('NAME_UNKNOWN');
    const noTag = await request(`${registry.url}/v2/hpc/mpi-demo/manifests/9.9`);
    expect([noTag.status, codeOf(noTag)]).toEqual([404, 'MANIFEST_UNKNOWN']);
    const noBlob = await request(`${registry.url}/v2/hpc/mpi-demo/blobs/sha256:${'0'.repeat(64)}`);
    expect([noBlob.status, codeOf(noBlob)]).toEqual([404, 'BLOB_UNKNOWN']);
    const push = await request(`${registry.url}/v2/hpc/mpi-demo/blobs/uploads/`, { method: 'POST' });
    expect([push.status, codeOf(push)]).toEqual([405, 'UNSUPPORTED']);
    const tags = await request(`${registry.url}/v2/hpc/mpi-demo/tags/list`);
    expect(JSON.parse(tags.body.toString('utf8'))).toEqual({ name: 'hpc/mpi-demo', tags: ['1.0'] });
  });

  test('an image loaded from an OCI layout on disk is served with the same digests', async () => {
    const fromLayout = await startRegistry({ images: [{ layoutDir: path.join(base, 'layout') }] });
    try {
      const r = await request(`${fromLayout.url}/v2/hpc/mpi-demo/manifests/1.0`);
      expect(r.headers['docker-content-digest']).toBe(image.manifestDigest);
      const layer = image.manifest.layers[1];
      expect(sha((await request(`${fromLayout.url}/v2/hpc/mpi-demo/blobs/${layer.digest}`)).body)).toBe(layer.digest);
    } finally {
      await fromLayout.stop();
    }
  });
});

describe('concurrent-pull limit', () => {
  test('pure admission: a pulling client may add transfers, a new client is refused at the limit, released slots are reused', () => {
    const a = new PullAdmission(2);
    const n1 = a.tryAdmit('node-1');
    const n1b = a.tryAdmit('node-1');
    const n2 = a.tryAdmit('node-2');
    expect([n1, n1b, n2].every(Boolean)).toBe(true);
    expect(a.tryAdmit('node-3')).toBeUndefined();
    n1?.release();
    expect(a.tryAdmit('node-3')).toBeUndefined(); // node-1 still has a transfer in flight
    n1b?.release();
    n1b?.release(); // releasing twice must not free a second slot
    expect(a.tryAdmit('node-3')).toBeDefined();
    expect(a.tryAdmit('node-4')).toBeUndefined();
    const s = a.snapshot();
    expect([s.maxConcurrentObserved, s.maxConcurrentTransfers, s.total429]).toEqual([2, 3, 3]);
    expect(s.perClient['node-3'].rejected429).toBe(2);
  });

  test('over HTTP: while one client streams a slow blob, a second client gets 429 TOOMANYREQUESTS with Retry-After', async () => {
    const slow = await startRegistry({ images: [image], maxConcurrentPulls: 1, bandwidthBytesPerSec: 128 * 1024, retryAfterSeconds: 3 });
    try {
      const layer = image.manifest.layers[1];
      const first = request(`${slow.url}/v2/hpc/mpi-demo/blobs/${layer.digest}`, { headers: { 'X-Pull-Client': 'pool/node-a' } });
      await new Promise((r) => setTimeout(r, 150));
      const second = await request(`${slow.url}/v2/hpc/mpi-demo/manifests/1.0`, { headers: { 'X-Pull-Client': 'pool/node-b' } });
      expect(second.status).toBe(429);
      expect(second.headers['retry-after']).toBe('3');
      expect(JSON.parse(second.body.toString('utf8'))).toEqual({ errors: [{ code: 'TOOMANYREQUESTS', message: expect.any(String), detail: { limit: 1 } }] });
      const sameClient = await request(`${slow.url}/v2/hpc/mpi-demo/manifests/1.0`, { headers: { 'X-Pull-Client': 'pool/node-a' } });
      expect(sameClient.status).toBe(200);
      const done = await first;
      expect(sha(done.body)).toBe(layer.digest);
      const after = await request(`${slow.url}/v2/hpc/mpi-demo/manifests/1.0`, { headers: { 'X-Pull-Client': 'pool/node-b' } });
      expect(after.status).toBe(200);
      const stats = slow.stats();
      expect(stats.total429).toBe(1);
      expect(stats.maxConcurrentObserved).toBe(1);
      expect(stats.totalPulls).toBe(2);
      expect(stats.perClient['pool/node-b']).toMatchObject({ rejected429: 1, pulls: 1 });
      expect(stats.bytesServed).toBe(layer.size + 2 * image.manifestBytes.length);
      slow.setLimit(undefined);
      expect(slow.stats().limit).toBeNull();
      slow.resetStats();
      expect(slow.stats().total429).toBe(0);
    } finally {
      await slow.stop();
    }
  });
});

test('docker pull rejects a blob whose bytes do not match its digest and keeps nothing of it', async () => {
  const layoutDir = path.join(base, 'corrupt-layout');
  const img = await buildDemoImage({ fillerBytes: 32 * 1024, layoutDir });
  const layer = img.manifest.layers[1];
  const original = img.blobs.get(layer.digest) as Buffer;
  const corrupted = Buffer.from(original);
  corrupted[corrupted.length >> 1] ^= 0xff; // same size, one byte flipped
  await writeFile(path.join(layoutDir, 'blobs', 'sha256', layer.digest.slice(7)), corrupted);
  const bad = await startRegistry({ images: [{ layoutDir }] });
  try {
    const node = await makeNode(base, 'corrupt-node');
    const ref = `${bad.host}/hpc/mpi-demo:1.0`;
    const r = await runTool(node, 'docker', ['pull', ref]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`Error response from daemon: filesystem layer verification failed for digest ${layer.digest}`);
    expect(await verifyNodeImage(node, ref)).toEqual([`${node.id}: no ${ref} in the image store`]);
    const images = await runTool(node, 'docker', ['images', '-q']);
    expect(images.stdout.trim()).toBe('');
  } finally {
    await bad.stop();
  }
});
