/**
 * OCI image-spec and distribution-spec vocabulary shared by the registry, the image builder and the node tools.
 * Kept free of I/O so that the node-side `docker` command can import it without pulling in the server.
 */
import { createHash } from 'node:crypto';

export const MEDIA_TYPE = {
  imageManifest: 'application/vnd.oci.image.manifest.v1+json',
  imageIndex: 'application/vnd.oci.image.index.v1+json',
  imageConfig: 'application/vnd.oci.image.config.v1+json',
  layerTarGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  layerTar: 'application/vnd.oci.image.layer.v1.tar',
  // Docker's own manifest types, only so that Accept headers naming them are understood.
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
} as const;

/** Annotation that OCI image layouts use to name a manifest in index.json. */
export const REF_NAME_ANNOTATION = 'org.opencontainers.image.ref.name';

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
}

export interface ImageManifest {
  schemaVersion: 2;
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
  annotations?: Record<string, string>;
}

export interface ImageIndex {
  schemaVersion: 2;
  mediaType?: string;
  manifests: Descriptor[];
}

export interface ImageConfig {
  created?: string;
  architecture: string;
  os: string;
  config: {
    Env?: string[];
    Cmd?: string[];
    Entrypoint?: string[];
    WorkingDir?: string;
    User?: string;
    ExposedPorts?: Record<string, Record<string, never>>;
    Labels?: Record<string, string>;
  };
  rootfs: { type: 'layers'; diff_ids: string[] };
  history?: { created?: string; created_by?: string; comment?: string; empty_layer?: boolean }[];
}

const DIGEST_RE = /^sha256:[a-f0-9]{64}$/;

export function sha256Digest(data: Buffer | string): string {
  return `sha256:${createHash('sha256').update(data).digest('hex')}`;
}

export function isDigest(s: string): boolean {
  return DIGEST_RE.test(s);
}

/** Hex part of a sha256 digest; throws on anything else so that a digest never becomes a path traversal. */
export function digestHex(digest: string): string {
  if (!isDigest(digest)) throw new Error(`not a sha256 digest: ${JSON.stringify(digest)}`);
  return digest.slice('sha256:'.length);
}

/** Distribution-spec repository name grammar (path components of lowercase alphanumerics and separators). */
const REPO_RE = /^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*$/;
const TAG_RE = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/;

export function isRepositoryName(s: string): boolean {
  return REPO_RE.test(s);
}

export function isTag(s: string): boolean {
  return TAG_RE.test(s);
}
