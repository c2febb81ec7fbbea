/**
 * What the registry serves: per repository, its tags and the blobs (manifests, configs, layers) it may hand out.
 * Images come from OCI layouts on disk (blobs read lazily from their files, never verified here, so a test can
 * corrupt one and check that clients reject it) or from images built in memory.
 */
import { readFile, stat } from 'node:fs/promises';
import { BuiltImage } from './imageBuilder';
import { layoutBlobPath, readOciLayout } from './layout';
import { ImageManifest, MEDIA_TYPE, isDigest } from './oci';

export interface LayoutSource {
  layoutDir: string;
  /** Repository for manifests whose ref name is a bare tag with no repository annotation. */
  repository?: string;
}

export type ImageSource = BuiltImage | LayoutSource;

export type BlobContent = { size: number; buffer: Buffer } | { size: number; file: string };

interface Repository {
  tags: Map<string, string>;
  manifests: Map<string, { bytes: Buffer; mediaType: string }>;
  blobs: Map<string, BlobContent>;
}

function isLayoutSource(s: ImageSource): s is LayoutSource {
  return typeof (s as LayoutSource).layoutDir === 'string';
}

export class ImageCatalog {
  private readonly repos = new Map<string, Repository>();

  private repo(name: string): Repository {
    let r = this.repos.get(name);
    if (!r) {
      r = { tags: new Map(), manifests: new Map(), blobs: new Map() };
      this.repos.set(name, r);
    }
    return r;
  }

  async add(source: ImageSource): Promise<void> {
    if (isLayoutSource(source)) await this.addLayout(source);
    else this.addBuilt(source);
  }

  addBuilt(image: BuiltImage): void {
    const r = this.repo(image.repository);
    r.tags.set(image.tag, image.manifestDigest);
    r.manifests.set(image.manifestDigest, { bytes: image.manifestBytes, mediaType: image.manifest.mediaType });
    for (const [digest, buffer] of image.blobs) r.blobs.set(digest, { size: buffer.length, buffer });
  }

  async addLayout(source: LayoutSource): Promise<void> {
    for (const entry of await readOciLayout(source.layoutDir, source.repository)) {
      const r = this.repo(entry.repository);
      const manifestFile = layoutBlobPath(source.layoutDir, entry.manifest.digest);
      const bytes = await readFile(manifestFile);
      let manifest: ImageManifest;
      try {
        manifest = JSON.parse(bytes.toString('utf8')) as ImageManifest;
      } catch (err) {
        throw new Error(`${manifestFile}: manifest is not JSON: ${(err as Error).message}`);
      }
      r.tags.set(entry.tag, entry.manifest.digest);
      r.manifests.set(entry.manifest.digest, { bytes, mediaType: manifest.mediaType ?? MEDIA_TYPE.imageManifest });
      for (const d of [manifest.config, ...manifest.layers]) {
        const file = layoutBlobPath(source.layoutDir, d.digest);
        const st = await stat(file).catch(() => {
          throw new Error(`${source.layoutDir}: blob ${d.digest} of ${entry.repository}:${entry.tag} is missing`);
        });
        r.blobs.set(d.digest, { size: st.size, file });
      }
    }
  }

  hasRepository(name: string): boolean {
    return this.repos.has(name);
  }

  repositories(): string[] {
    return [...this.repos.keys()].sort();
  }

  tags(name: string): string[] | undefined {
    const r = this.repos.get(name);
    return r ? [...r.tags.keys()].sort() : undefined;
  }

  /** Manifest by tag or digest. */
  manifest(name: string, reference: string): { digest: string; bytes: Buffer; mediaType: string } | undefined {
    const r = this.repos.get(name);
    if (!r) return undefined;
    const digest = isDigest(reference) ? reference : r.tags.get(reference);
    const m = digest ? r.manifests.get(digest) : undefined;
    return digest && m ? { digest, ...m } : undefined;
  }

  blob(name: string, digest: string): BlobContent | undefined {
    const r = this.repos.get(name);
    if (!r) return undefined;
    const b = r.blobs.get(digest);
    if (b) return b;
    const m = r.manifests.get(digest);
    return m ? { size: m.bytes.length, buffer: m.bytes } : undefined;
  }
}
