/**
 * The app's registry client (shared/adapters/registry): the manifest and config reads over the distribution API,
 * against the local registry (open and private: ACR's token challenge, a registry credential, the Entra ID
 * exchange) and against a tiny in-process server for what the local registry does not serve (a Docker manifest
 * list, a blob redirect, oversized bodies, 5xx, a registry that never answers). Real HTTP on loopback, no mocks.
 */
import { createHash } from 'node:crypto';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { buildImage, startRegistry, type BuiltImage, type RegistryHandle } from '../../local/registry';
import { startIdentityService, type IdentityService } from '../../local/identity';
import { localIdentityWiring, type LocalIdentityWiring } from '../../local/supervisor/identityWiring';
import { readImageConfig, RegistryError } from '../../shared/adapters/registry';
import { mpiEvidenceFromImageConfig } from '../../shared/core/images/mpiEvidence';

let dir: string;
let image: BuiltImage;
let open: RegistryHandle;
let priv: RegistryHandle;
let identity: IdentityService;
let wiring: LocalIdentityWiring;
let credential: { username: string; password: string };

const ENV = ['PATH=/usr/local/bin:/usr/bin:/bin', 'I_MPI_ROOT=/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi'];

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'image-config-read-'));
  await writeFile(path.join(dir, 'hello.txt'), 'hello\n');
  image = await buildImage({ repository: 'hpc/impi2018', tag: '1.0', layers: [{ dir }], config: { Env: ENV }, labels: { 'org.example.mpi': 'intelmpi-2018' } });
  open = await startRegistry({ images: [image] });
  identity = await startIdentityService();
  wiring = localIdentityWiring(identity);
  credential = wiring.registryCredential();
  priv = await startRegistry({ images: [image], auth: wiring.registryAuth(credential) });
}, 120_000);

afterAll(async () => {
  await open?.stop();
  await priv?.stop();
  await identity?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function failure(p: Promise<unknown>): Promise<RegistryError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof RegistryError) return err;
    throw err;
  }
  throw new Error('expected a RegistryError');
}

describe('against the local registry', () => {
  test("an open registry: the config's Labels and Env and the digests, which the evidence parser reads", async () => {
    const read = await readImageConfig(`${open.host}/hpc/impi2018:1.0`);
    expect(read).toMatchObject({
      reference: `${open.host}/hpc/impi2018:1.0`,
      registry: open.host,
      digest: image.manifestDigest,
      labels: { 'org.example.mpi': 'intelmpi-2018' },
      env: ENV,
    });
    expect(read.configDigest).toBe(image.manifest.config.digest);
    expect(mpiEvidenceFromImageConfig({ config: { Labels: read.labels, Env: read.env } })).toMatchObject({ runtime: 'intelmpi', version: '2018' });
    // By digest too, checked against the manifest's bytes.
    expect((await readImageConfig(`${open.host}/hpc/impi2018@${image.manifestDigest}`)).digest).toBe(image.manifestDigest);
  });

  test('an unknown tag or repository is notFound, naming the image and the registry', async () => {
    const tag = await failure(readImageConfig(`${open.host}/hpc/impi2018:nope`));
    expect(tag).toMatchObject({
      kind: 'notFound',
      status: 404,
      message: `image ${open.host}/hpc/impi2018:nope not found in ${open.host} (404 MANIFEST_UNKNOWN)`,
    });
    expect(await failure(readImageConfig(`${open.host}/hpc/none:1.0`))).toMatchObject({
      kind: 'notFound',
      message: expect.stringMatching(/^image .*hpc\/none:1\.0 not found in .*NAME_UNKNOWN/),
    });
  });

  test("a private registry: anonymous is denied; the credential and the pool identity's Entra token get through the challenge", async () => {
    const ref = `${priv.host}/hpc/impi2018:1.0`;
    expect(await failure(readImageConfig(ref))).toMatchObject({ kind: 'denied', message: expect.stringContaining(`image ${ref}`) });
    expect((await readImageConfig(ref, { auth: { kind: 'basic', ...credential } })).labels).toEqual({ 'org.example.mpi': 'intelmpi-2018' });
    expect(await failure(readImageConfig(ref, { auth: { kind: 'basic', username: credential.username, password: 'wrong' } }))).toMatchObject({
      kind: 'denied',
      status: 401,
    });
    const pool = () => identity.resourceToken('https://containerregistry.azure.net', { identity: wiring.pool });
    expect((await readImageConfig(ref, { auth: { kind: 'entra', token: pool } })).digest).toBe(image.manifestDigest);
    // The app's own identity holds no AcrPull: its exchange works, its tokens grant nothing.
    const app = () => identity.resourceToken('https://containerregistry.azure.net', { identity: wiring.app });
    expect(await failure(readImageConfig(ref, { auth: { kind: 'entra', token: app } }))).toMatchObject({ kind: 'denied', status: 403 });
  });

  test('a registry that is not there is unreachable', async () => {
    const gone = await startRegistry({ images: [image] });
    const host = gone.host;
    await gone.stop();
    expect(await failure(readImageConfig(`${host}/hpc/impi2018:1.0`))).toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining(`image ${host}/hpc/impi2018:1.0: ${host} could not be reached`),
    });
  });
});

describe('against a tiny registry of our own', () => {
  type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;
  let handler: Handler;
  let server: http.Server;
  let host: string;
  const seen: { url: string; auth?: string; accept?: string }[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      seen.push({ url: req.url ?? '', auth: req.headers.authorization, accept: req.headers.accept });
      handler(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => (seen.length = 0));

  const digest = (b: Buffer) => `sha256:${createHash('sha256').update(b).digest('hex')}`;
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Env: ['OMPI_VERSION=4.1.5', 7], Labels: { a: 'b', n: 3 } } }));
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', digest: digest(config), size: config.length },
      layers: [],
    }),
  );
  const list = (entries: { arch: string; d: string }[]) =>
    Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.docker.distribution.manifest.list.v2+json',
        manifests: entries.map((e) => ({
          mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
          digest: e.d,
          size: 10,
          platform: { os: 'linux', architecture: e.arch },
        })),
      }),
    );
  const send = (res: http.ServerResponse, status: number, body: Buffer | string, headers: Record<string, string> = {}) => {
    res.writeHead(status, headers);
    res.end(body);
  };

  test('a Docker manifest list is followed to its linux/amd64 entry; Labels and Env keep only strings; the Accept header names all four types', async () => {
    const other = `sha256:${'1'.repeat(64)}`;
    const idx = list([
      { arch: 'arm64', d: other },
      { arch: 'amd64', d: digest(manifest) },
    ]);
    handler = (req, res) => {
      if (req.url === '/v2/app/manifests/2') return send(res, 200, idx, { 'Content-Type': 'application/vnd.docker.distribution.manifest.list.v2+json' });
      if (req.url === `/v2/app/manifests/${digest(manifest)}`)
        return send(res, 200, manifest, { 'Content-Type': 'application/vnd.docker.distribution.manifest.v2+json' });
      if (req.url === `/v2/app/blobs/${digest(config)}`) return send(res, 307, '', { Location: `/storage/${digest(config)}?sig=1` });
      if (req.url?.startsWith('/storage/')) return send(res, 200, config);
      send(res, 404, '{"errors":[{"code":"NAME_UNKNOWN"}]}');
    };
    const read = await readImageConfig(`${host}/app:2`);
    expect(read).toMatchObject({
      digest: digest(idx),
      platformDigest: digest(manifest),
      configDigest: digest(config),
      labels: { a: 'b' },
      env: ['OMPI_VERSION=4.1.5'],
    });
    expect(seen[0].accept).toBe(
      'application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json',
    );
    expect(seen.map((s) => s.url)).toEqual([
      '/v2/app/manifests/2',
      `/v2/app/manifests/${digest(manifest)}`,
      `/v2/app/blobs/${digest(config)}`,
      `/storage/${digest(config)}?sig=1`,
    ]);
  });

  test('an index without linux/amd64, a redirect to an http host elsewhere, a config that does not match its digest: invalid', async () => {
    handler = (req, res) =>
      send(res, 200, list([{ arch: 'arm64', d: `sha256:${'2'.repeat(64)}` }]), { 'Content-Type': 'application/vnd.oci.image.index.v1+json' });
    expect(await failure(readImageConfig(`${host}/app:arm`))).toMatchObject({
      kind: 'invalid',
      message: `image ${host}/app:arm has no linux/amd64 image (its index lists linux/arm64)`,
    });

    handler = (req, res) => {
      if (req.url?.includes('/manifests/')) return send(res, 200, manifest, { 'Content-Type': 'application/vnd.docker.distribution.manifest.v2+json' });
      send(res, 307, '', { Location: 'http://169.254.169.254/metadata' });
    };
    expect(await failure(readImageConfig(`${host}/app:redir`))).toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('redirects to http://169.254.169.254, neither the registry nor an https service'),
    });

    handler = (req, res) =>
      req.url?.includes('/manifests/')
        ? send(res, 200, manifest, { 'Content-Type': 'application/vnd.docker.distribution.manifest.v2+json' })
        : send(res, 200, Buffer.from('{"config":{}}'));
    expect(await failure(readImageConfig(`${host}/app:tampered`))).toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('does not match its digest'),
    });
  });

  test('bodies above the cap are refused unread; a schema-1 manifest is refused', async () => {
    handler = (req, res) => send(res, 200, Buffer.alloc(5000, 32), { 'Content-Type': 'application/vnd.oci.image.manifest.v1+json', 'Content-Length': '5000' });
    expect(await failure(readImageConfig(`${host}/app:big`, { maxBytes: 4096 }))).toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('5000 bytes, more than the 4096'),
    });
    // Chunked, no length declared: cut off while reading.
    handler = (req, res) => send(res, 200, Buffer.alloc(5000, 32), { 'Content-Type': 'application/vnd.oci.image.manifest.v1+json' });
    expect(await failure(readImageConfig(`${host}/app:big`, { maxBytes: 4096 }))).toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('more than the 4096 bytes'),
    });
    handler = (req, res) =>
      send(res, 200, '{"schemaVersion":1,"fsLayers":[]}', { 'Content-Type': 'application/vnd.docker.distribution.manifest.v1+prettyjws' });
    expect(await failure(readImageConfig(`${host}/app:old`))).toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('schemaVersion 1 is not supported'),
    });
  });

  test('5xx and 429 are unreachable with the status; a registry that never answers times out', async () => {
    handler = (req, res) => send(res, 503, '{"errors":[{"code":"UNAVAILABLE"}]}');
    expect(await failure(readImageConfig(`${host}/app:1`))).toMatchObject({
      kind: 'unreachable',
      status: 503,
      message: `image ${host}/app:1: ${host} answered 503 UNAVAILABLE on /v2/app/manifests/1`,
    });
    handler = (req, res) => send(res, 429, '');
    expect(await failure(readImageConfig(`${host}/app:1`))).toMatchObject({ kind: 'unreachable', status: 429 });
    handler = () => undefined;
    expect(await failure(readImageConfig(`${host}/app:1`, { timeoutMs: 300 }))).toMatchObject({
      kind: 'unreachable',
      message: expect.stringContaining('no answer in time'),
    });
  });

  test('a Bearer challenge whose realm is elsewhere over http gets no credentials and is refused', async () => {
    handler = (req, res) => send(res, 401, '', { 'WWW-Authenticate': 'Bearer realm="http://10.0.0.1/token",service="x"' });
    expect(await failure(readImageConfig(`${host}/app:1`, { auth: { kind: 'basic', username: 'u', password: 'p' } }))).toMatchObject({
      kind: 'invalid',
      message: expect.stringContaining('token realm http://10.0.0.1 is neither the registry nor an https service'),
    });
    expect(seen).toHaveLength(1);
  });
});
