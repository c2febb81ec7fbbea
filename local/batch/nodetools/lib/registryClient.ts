/**
 * Pull side of the OCI distribution API, as a Docker daemon does it: ping `/v2/`, fetch the manifest (by tag or
 * digest), then the config and layers (3 at a time, Docker's default), verifying every digest and size before a
 * blob enters the node's store. Errors read like Docker's; the caller (orchestration) owns retries.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import type * as http from 'node:http';
import * as path from 'node:path';
import { Descriptor, ImageIndex, ImageManifest, MEDIA_TYPE, sha256Digest } from '../../../registry/oci';
import { CliError } from './errors';
import { ImageRef, familiarName, refKey, registryBaseUrl } from './imageRef';
import { ImageStore, LocalImage } from './imageStore';
import { authorizationForChallenge, parseChallenge } from './registryAuth';

const MAX_CONCURRENT_DOWNLOADS = 3;
const IDLE_TIMEOUT_MS = 60_000;

export interface PullOptions {
  store: ImageStore;
  clientKey: string;
  /** `Basic ...` from `docker login` (or Singularity's credentials), if any: sent as is, or traded for a token on a Bearer challenge. */
  authorization?: string;
  /** Source address for connections (the emulated node's own loopback address). */
  localAddress?: string;
  /** Progress lines (Docker's pull output). */
  progress: (line: string) => void;
}

export interface PullResult {
  image: LocalImage;
  upToDate: boolean;
}

interface Response {
  status: number;
  headers: http.IncomingHttpHeaders;
  stream: http.IncomingMessage;
}

type HttpModule = typeof http | typeof import('node:https');

/**
 * node:http or node:https, loaded by the pull that needs it rather than by every docker command (ps, rm, inspect):
 * node:https (TLS) alone took ~15 ms CPU of a ~60 ms `docker ps`, on every node, whatever the registry's scheme.
 * Not `import()`: in the CommonJS bundle that starts Node's ES module loader, ~40 ms more.
 */
function httpModule(base: string): HttpModule {
  return base.startsWith('https:') ? process.getBuiltinModule('node:https') : process.getBuiltinModule('node:http');
}

class RegistryHttp {
  private readonly agent: http.Agent;

  constructor(
    private readonly mod: HttpModule,
    readonly base: string,
    readonly headers: Record<string, string>,
    private readonly localAddress?: string,
  ) {
    this.agent = new this.mod.Agent({ keepAlive: true, maxSockets: MAX_CONCURRENT_DOWNLOADS });
  }

  request(url: string, accept?: string, redirects = 0): Promise<Response> {
    return new Promise((resolve, reject) => {
      const headers = { ...this.headers, ...(accept ? { Accept: accept } : {}) };
      const req = this.mod.request(url, { agent: this.agent, headers, ...(this.localAddress ? { localAddress: this.localAddress } : {}) }, (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400 && res.headers.location && redirects < 5) {
          res.resume();
          resolve(this.request(new URL(res.headers.location, url).toString(), accept, redirects + 1));
          return;
        }
        resolve({ status, headers: res.headers, stream: res });
      });
      req.setTimeout(IDLE_TIMEOUT_MS, () => req.destroy(new Error(`net/http: timeout awaiting response headers`)));
      req.on('error', (err: NodeJS.ErrnoException) => {
        const u = new URL(url);
        const why = err.code === 'ECONNREFUSED' ? 'connect: connection refused' : err.code === 'ENOTFOUND' ? `lookup ${u.hostname}: no such host` : err.message;
        reject(new CliError(`Get "${url}": dial tcp ${u.host}: ${why}`));
      });
      req.end();
    });
  }

  close(): void {
    this.agent.destroy();
  }
}

async function readAll(stream: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** Docker's wording for a registry error answer. */
async function registryError(res: Response, ref: ImageRef): Promise<CliError> {
  const body = (await readAll(res.stream)).toString('utf8');
  let first: { code?: string; message?: string } | undefined;
  try {
    first = (JSON.parse(body) as { errors?: { code?: string; message?: string }[] }).errors?.[0];
  } catch {
    first = undefined;
  }
  const code = (first?.code ?? '').toLowerCase();
  const message = first?.message ?? (body.trim() || `HTTP ${res.status}`);
  if (res.status === 429) return new CliError(`toomanyrequests: ${message}`);
  if (code === 'manifest_unknown') return new CliError(`manifest for ${refKey(ref)} not found: manifest unknown: ${message}`);
  if (code === 'name_unknown' || res.status === 401 || res.status === 403)
    return new CliError(`pull access denied for ${familiarName(ref)}, repository does not exist or may require 'docker login': denied: ${message}`);
  return new CliError(`${code || `received unexpected HTTP status: ${res.status}`}: ${message}`);
}

function short(digest: string): string {
  return digest.slice('sha256:'.length, 'sha256:'.length + 12);
}

async function downloadBlob(client: RegistryHttp, ref: ImageRef, d: Descriptor, store: ImageStore): Promise<number> {
  const res = await client.request(`${client.base}/v2/${ref.repository}/blobs/${d.digest}`);
  if (res.status !== 200) throw await registryError(res, ref);
  await mkdir(store.tmpDir, { recursive: true });
  const tmp = path.join(store.tmpDir, `${short(d.digest)}-${randomBytes(6).toString('hex')}`);
  const hash = createHash('sha256');
  let size = 0;
  const out = createWriteStream(tmp);
  try {
    await new Promise<void>((resolve, reject) => {
      res.stream.on('data', (c: Buffer) => {
        hash.update(c);
        size += c.length;
      });
      res.stream.on('error', reject);
      res.stream.on('aborted', () => reject(new Error('unexpected EOF')));
      out.on('error', reject);
      out.on('finish', resolve);
      res.stream.pipe(out);
    });
    const got = `sha256:${hash.digest('hex')}`;
    if (got !== d.digest || size !== d.size) {
      throw new CliError(`filesystem layer verification failed for digest ${d.digest}`);
    }
    await mkdir(path.dirname(store.blobPath(d.digest)), { recursive: true });
    await rename(tmp, store.blobPath(d.digest));
    return size;
  } finally {
    await rm(tmp, { force: true });
  }
}

async function fetchManifest(client: RegistryHttp, ref: ImageRef, reference: string): Promise<{ digest: string; bytes: Buffer; mediaType: string }> {
  const accept = [MEDIA_TYPE.imageManifest, MEDIA_TYPE.dockerManifest, MEDIA_TYPE.imageIndex].join(', ');
  const res = await client.request(`${client.base}/v2/${ref.repository}/manifests/${reference}`, accept);
  if (res.status !== 200) throw await registryError(res, ref);
  const bytes = await readAll(res.stream);
  const digest = sha256Digest(bytes);
  const claimed = res.headers['docker-content-digest'];
  if ((reference.startsWith('sha256:') && digest !== reference) || (typeof claimed === 'string' && claimed !== digest)) {
    throw new CliError(`manifest verification failed for digest ${reference.startsWith('sha256:') ? reference : claimed}`);
  }
  const mediaType = (res.headers['content-type'] ?? '').split(';')[0].trim();
  return { digest, bytes, mediaType };
}

async function runLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failed: unknown;
  const worker = async (): Promise<void> => {
    while (failed === undefined && next < items.length) {
      const item = items[next++];
      try {
        await fn(item);
      } catch (err) {
        failed ??= err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (failed !== undefined) throw failed;
}

export async function pullImage(ref: ImageRef, opts: PullOptions): Promise<PullResult> {
  const { store, progress } = opts;
  const base = registryBaseUrl(ref.registry);
  const client = new RegistryHttp(
    httpModule(base),
    base,
    {
      'User-Agent': 'docker/24.0-emulated (hpc-control-plane node tools)',
      'X-Pull-Client': opts.clientKey,
    },
    // An emulated node with its own loopback address connects from it, so the registry also sees distinct peers.
    opts.localAddress && /^127\./.test(opts.localAddress) && /^http:\/\/(127\.|localhost)/.test(base) ? opts.localAddress : undefined,
  );
  try {
    const ping = await client.request(`${client.base}/v2/`);
    await readAll(ping.stream);
    if (ping.status !== 200 && ping.status !== 401) throw await registryError(ping, ref);
    if (ping.status === 401) {
      // A private registry: trade the credentials (or nothing: an anonymous token) for a pull token, as Docker does.
      const challenge = parseChallenge(ping.headers['www-authenticate']);
      if (!challenge) throw new CliError(`unauthorized: ${base}/v2/ answered 401 without a usable WWW-Authenticate challenge`);
      const authorization = await authorizationForChallenge(challenge, opts.authorization, `repository:${ref.repository}:pull`);
      if (authorization) client.headers.Authorization = authorization;
    } else if (opts.authorization) {
      client.headers.Authorization = opts.authorization;
    }
    let man = await fetchManifest(client, ref, ref.digest ?? ref.tag ?? 'latest');
    progress(`${ref.digest ?? ref.tag}: Pulling from ${ref.repository}`);
    if (man.mediaType === MEDIA_TYPE.imageIndex) {
      const index = JSON.parse(man.bytes.toString('utf8')) as Omit<ImageIndex, 'manifests'> & {
        manifests: (Descriptor & { platform?: { os?: string; architecture?: string } })[];
      };
      const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
      const pick = index.manifests.find((m) => m.platform?.os === 'linux' && m.platform.architecture === arch) ?? index.manifests[0];
      if (!pick) throw new CliError(`no matching manifest for linux/${arch} in the manifest list entries`);
      man = await fetchManifest(client, ref, pick.digest);
    }
    const manifest = JSON.parse(man.bytes.toString('utf8')) as ImageManifest;
    if (!manifest.config || !Array.isArray(manifest.layers))
      throw new CliError(`unsupported manifest media type ${man.mediaType || '(none)'} for ${refKey(ref)}`);
    const keys = [refKey(ref), `${familiarName(ref)}@${man.digest}`];
    const before = (await store.readRefs())[keys[0]];
    const missing: Descriptor[] = [];
    for (const d of [manifest.config, ...manifest.layers]) if (!(await store.hasBlob(d.digest, d.size))) missing.push(d);
    for (const l of manifest.layers) progress(`${short(l.digest)}: ${missing.includes(l) ? 'Pulling fs layer' : 'Already exists'}`);
    await runLimited(missing, MAX_CONCURRENT_DOWNLOADS, async (d) => {
      await downloadBlob(client, ref, d, store);
      if (d !== manifest.config) progress(`${short(d.digest)}: Pull complete`);
    });
    // The manifest goes in last: an image is listed only once all its blobs are verified and present.
    await mkdir(path.dirname(store.blobPath(man.digest)), { recursive: true });
    const tmp = path.join(store.tmpDir, `manifest-${randomBytes(6).toString('hex')}`);
    await mkdir(store.tmpDir, { recursive: true });
    await writeFile(tmp, man.bytes);
    await rename(tmp, store.blobPath(man.digest));
    await store.setRefs(keys, { manifestDigest: man.digest, imageId: manifest.config.digest, pulledAt: new Date().toISOString() });
    progress(`Digest: ${man.digest}`);
    const upToDate = before?.manifestDigest === man.digest && missing.length === 0;
    progress(`Status: ${upToDate ? 'Image is up to date' : 'Downloaded newer image'} for ${ref.original}`);
    const image = await store.find(keys[0]);
    if (!image) throw new Error(`image ${keys[0]} vanished from the store right after the pull`);
    return { image, upToDate };
  } finally {
    client.close();
  }
}
