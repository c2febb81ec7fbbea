/**
 * What the registry client accepts as a manifest, and which entry of an index it follows (linux/amd64: every Batch
 * HPC size is x86-64). Pure: the client hands in the bytes and the Content-Type.
 */
export const MEDIA_TYPES = {
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
} as const;

/** The Accept header of a manifest GET: the four types above, nothing older (schema 1 is gone from every registry). */
export const MANIFEST_ACCEPT = Object.values(MEDIA_TYPES).join(', ');

const INDEX_TYPES: string[] = [MEDIA_TYPES.ociIndex, MEDIA_TYPES.dockerList];
const MANIFEST_TYPES: string[] = [MEDIA_TYPES.ociManifest, MEDIA_TYPES.dockerManifest];

export interface Descriptor {
  mediaType?: string;
  digest: string;
  size: number;
  platform?: { os?: string; architecture?: string; variant?: string };
}

export type ParsedManifest = { kind: 'index'; manifests: Descriptor[] } | { kind: 'manifest'; config: Descriptor };

const DIGEST_RE = /^sha256:[a-f0-9]{64}$/;

function descriptor(v: unknown, what: string): Descriptor {
  const d = v as Partial<Descriptor> | null;
  if (
    typeof d !== 'object' ||
    d === null ||
    typeof d.digest !== 'string' ||
    !DIGEST_RE.test(d.digest) ||
    typeof d.size !== 'number' ||
    !Number.isSafeInteger(d.size) ||
    d.size < 0
  ) {
    throw new Error(`${what} is not a descriptor with a sha256 digest and a size`);
  }
  return d as Descriptor;
}

/**
 * The manifest or index in `bytes`. The media type is the body's own `mediaType` when it has one, else the
 * Content-Type (without parameters); anything else (schema 1, a non-JSON page) is refused with what it was.
 */
export function parseManifest(bytes: Buffer, contentType: string | null): ParsedManifest {
  let body: { mediaType?: unknown; schemaVersion?: unknown; manifests?: unknown; config?: unknown };
  try {
    body = JSON.parse(bytes.toString('utf8')) as typeof body;
  } catch {
    throw new Error(`the manifest is not JSON (Content-Type ${contentType ?? 'none'})`);
  }
  if (typeof body !== 'object' || body === null) throw new Error('the manifest is not a JSON object');
  const type = typeof body.mediaType === 'string' ? body.mediaType : (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (body.schemaVersion !== 2) throw new Error(`manifest schemaVersion ${JSON.stringify(body.schemaVersion)} is not supported (only 2)`);
  if (INDEX_TYPES.includes(type) || (!type && Array.isArray(body.manifests))) {
    if (!Array.isArray(body.manifests)) throw new Error('the index has no manifests list');
    return { kind: 'index', manifests: body.manifests.map((m, i) => descriptor(m, `manifests[${i}]`)) };
  }
  if (MANIFEST_TYPES.includes(type) || (!type && body.config)) return { kind: 'manifest', config: descriptor(body.config, 'config') };
  throw new Error(`manifest media type ${JSON.stringify(type)} is not an OCI or Docker v2 manifest`);
}

/** The linux/amd64 entry of an index (Batch's HPC sizes are x86-64), or undefined with the platforms it has. */
export function pickPlatform(manifests: Descriptor[]): { entry?: Descriptor; platforms: string[] } {
  const platforms = manifests.map((m) => [m.platform?.os, m.platform?.architecture, m.platform?.variant].filter(Boolean).join('/') || 'unknown');
  const entry = manifests.find((m) => m.platform?.os === 'linux' && m.platform?.architecture === 'amd64');
  return { ...(entry ? { entry } : {}), platforms };
}

/** The config's Labels and Env, checked to be what the image spec says (a map of strings, a list of strings). */
export function configEvidence(bytes: Buffer): { labels: Record<string, string>; env: string[] } {
  let body: { config?: { Labels?: unknown; Env?: unknown } | null };
  try {
    body = JSON.parse(bytes.toString('utf8')) as typeof body;
  } catch {
    throw new Error('the image config is not JSON');
  }
  const cfg = typeof body === 'object' && body !== null && typeof body.config === 'object' && body.config !== null ? body.config : {};
  const labels: Record<string, string> = {};
  if (typeof cfg.Labels === 'object' && cfg.Labels !== null) {
    for (const [k, v] of Object.entries(cfg.Labels as Record<string, unknown>)) if (typeof v === 'string') labels[k] = v;
  }
  const env = Array.isArray(cfg.Env) ? cfg.Env.filter((e): e is string => typeof e === 'string') : [];
  return { labels, env };
}
