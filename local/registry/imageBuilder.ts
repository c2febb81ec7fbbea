/**
 * Builds OCI images in memory from directories on disk: each layer is a tar of one directory (portable metadata,
 * fixed mtime so rebuilding the same content gives the same digests), gzip-compressed; the config records the
 * uncompressed layer digests (diff_ids) and the manifest ties config and layers together by digest.
 */
import { readdir } from 'node:fs/promises';
import { gzipSync } from 'node:zlib';
import { create as tarCreate } from 'tar';
import { Descriptor, ImageConfig, ImageManifest, MEDIA_TYPE, isRepositoryName, isTag, sha256Digest } from './oci';

export interface LayerSpec {
  /** Directory whose content becomes the layer; its entries appear at the image root. */
  dir: string;
  /** What the history entry says created the layer. */
  createdBy?: string;
}

export interface BuiltImage {
  repository: string;
  tag: string;
  manifest: ImageManifest;
  manifestBytes: Buffer;
  manifestDigest: string;
  config: ImageConfig;
  /** Every blob of the image (config and layers, not the manifest) keyed by digest. */
  blobs: Map<string, Buffer>;
}

export interface BuildImageOptions {
  repository: string;
  tag: string;
  layers: LayerSpec[];
  config: ImageConfig['config'];
  /** Timestamp written into the config, history and tar headers; fixed by default for reproducible digests. */
  created?: Date;
  labels?: Record<string, string>;
}

const EPOCH = new Date('2024-01-01T00:00:00Z');

async function tarDirectory(dir: string, mtime: Date): Promise<Buffer> {
  const entries = (await readdir(dir)).sort();
  if (entries.length === 0) throw new Error(`layer directory ${dir} is empty`);
  return tarCreate({ cwd: dir, portable: true, mtime }, entries).concat();
}

export async function buildImage(opts: BuildImageOptions): Promise<BuiltImage> {
  if (!isRepositoryName(opts.repository)) throw new Error(`invalid repository name ${JSON.stringify(opts.repository)}`);
  if (!isTag(opts.tag)) throw new Error(`invalid tag ${JSON.stringify(opts.tag)}`);
  const created = opts.created ?? EPOCH;
  const blobs = new Map<string, Buffer>();
  const layers: Descriptor[] = [];
  const diffIds: string[] = [];
  const history: NonNullable<ImageConfig['history']> = [];
  for (const layer of opts.layers) {
    const tarBytes = await tarDirectory(layer.dir, created);
    diffIds.push(sha256Digest(tarBytes));
    const gz = gzipSync(tarBytes);
    const digest = sha256Digest(gz);
    blobs.set(digest, gz);
    layers.push({ mediaType: MEDIA_TYPE.layerTarGzip, digest, size: gz.length });
    history.push({ created: created.toISOString(), created_by: layer.createdBy ?? `COPY ${layer.dir}` });
  }
  const config: ImageConfig = {
    created: created.toISOString(),
    architecture: process.arch === 'arm64' ? 'arm64' : 'amd64',
    os: 'linux',
    config: { ...opts.config, ...(opts.labels ? { Labels: opts.labels } : {}) },
    rootfs: { type: 'layers', diff_ids: diffIds },
    history,
  };
  const configBytes = Buffer.from(JSON.stringify(config));
  const configDigest = sha256Digest(configBytes);
  blobs.set(configDigest, configBytes);
  const manifest: ImageManifest = {
    schemaVersion: 2,
    mediaType: MEDIA_TYPE.imageManifest,
    config: { mediaType: MEDIA_TYPE.imageConfig, digest: configDigest, size: configBytes.length },
    layers,
  };
  const manifestBytes = Buffer.from(JSON.stringify(manifest));
  return {
    repository: opts.repository,
    tag: opts.tag,
    manifest,
    manifestBytes,
    manifestDigest: sha256Digest(manifestBytes),
    config,
    blobs,
  };
}
