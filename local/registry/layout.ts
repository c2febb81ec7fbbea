/**
 * OCI image layouts on disk (image-spec "image-layout"): `oci-layout`, `index.json` and `blobs/sha256/<hex>`.
 * index.json names each manifest with the standard ref-name annotation (the tag) plus our repository annotation,
 * so one layout can hold several repositories.
 */
import { mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { BuiltImage } from './imageBuilder';
import { Descriptor, ImageIndex, MEDIA_TYPE, REF_NAME_ANNOTATION, digestHex, isDigest } from './oci';

export const REPOSITORY_ANNOTATION = 'io.hpc-control-plane.repository';

async function writeAtomic(file: string, data: Buffer | string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}-${Date.now()}`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}

async function readIndex(dir: string): Promise<ImageIndex> {
  try {
    return JSON.parse(await readFile(path.join(dir, 'index.json'), 'utf8')) as ImageIndex;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { schemaVersion: 2, mediaType: MEDIA_TYPE.imageIndex, manifests: [] };
    throw new Error(`cannot read ${path.join(dir, 'index.json')}: ${(err as Error).message}`);
  }
}

/** Adds (or replaces, by repository and tag) an image in the layout at `dir`, creating the layout if needed. */
export async function writeOciLayout(image: BuiltImage, dir: string): Promise<void> {
  const blobDir = path.join(dir, 'blobs', 'sha256');
  await mkdir(blobDir, { recursive: true });
  await writeFile(path.join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  const all = new Map(image.blobs);
  all.set(image.manifestDigest, image.manifestBytes);
  for (const [digest, bytes] of all) await writeAtomic(path.join(blobDir, digestHex(digest)), bytes);
  const index = await readIndex(dir);
  index.manifests = index.manifests.filter(
    (m) => !(m.annotations?.[REF_NAME_ANNOTATION] === image.tag && m.annotations?.[REPOSITORY_ANNOTATION] === image.repository),
  );
  index.manifests.push({
    mediaType: MEDIA_TYPE.imageManifest,
    digest: image.manifestDigest,
    size: image.manifestBytes.length,
    annotations: { [REF_NAME_ANNOTATION]: image.tag, [REPOSITORY_ANNOTATION]: image.repository },
  });
  await writeAtomic(path.join(dir, 'index.json'), JSON.stringify(index, null, 2));
}

export interface LayoutEntry {
  repository: string;
  tag: string;
  manifest: Descriptor;
}

/**
 * Lists the tagged manifests of a layout. A ref name of the form `repo:tag` names both; a bare tag takes the
 * repository from our annotation or from `defaultRepository`.
 */
export async function readOciLayout(dir: string, defaultRepository?: string): Promise<LayoutEntry[]> {
  try {
    await stat(path.join(dir, 'oci-layout'));
  } catch {
    throw new Error(`${dir} is not an OCI image layout (no oci-layout file)`);
  }
  const index = await readIndex(dir);
  const out: LayoutEntry[] = [];
  for (const m of index.manifests) {
    if (!isDigest(m.digest)) throw new Error(`${dir}/index.json: bad digest ${m.digest}`);
    const refName = m.annotations?.[REF_NAME_ANNOTATION];
    if (!refName) continue;
    const colon = refName.lastIndexOf(':');
    const [repository, tag] =
      colon > 0 && !refName.slice(colon).includes('/')
        ? [refName.slice(0, colon), refName.slice(colon + 1)]
        : [m.annotations?.[REPOSITORY_ANNOTATION] ?? defaultRepository, refName];
    if (!repository) throw new Error(`${dir}: manifest ${m.digest} tagged ${refName} has no repository (pass one)`);
    out.push({ repository, tag, manifest: m });
  }
  return out;
}

export function layoutBlobPath(dir: string, digest: string): string {
  return path.join(dir, 'blobs', 'sha256', digestHex(digest));
}
