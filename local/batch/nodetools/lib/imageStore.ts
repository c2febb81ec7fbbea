/**
 * The node-local image store (`$AZ_BATCH_NODE_ROOT_DIR/docker/images`): content-addressed blobs, written only
 * after their digest was verified, and `refs.json` mapping references (`name:tag`, `name@digest`) to manifests.
 * The image ID is the config digest, as in Docker.
 */
import { readFile, readdir, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { ImageConfig, ImageManifest, digestHex } from '../../../registry/oci';
import { readJson, withLock, writeJsonAtomic } from './fsutil';

export interface StoredRef {
  manifestDigest: string;
  imageId: string;
  pulledAt: string;
}

interface RefsFile {
  refs: Record<string, StoredRef>;
}

export interface LocalImage {
  id: string;
  manifestDigest: string;
  manifest: ImageManifest;
  config: ImageConfig;
  refs: string[];
  /** Sum of compressed layer sizes. */
  size: number;
}

export class ImageStore {
  constructor(readonly dir: string) {}

  blobPath(digest: string): string {
    return path.join(this.dir, 'blobs', 'sha256', digestHex(digest));
  }

  get tmpDir(): string {
    return path.join(this.dir, 'tmp');
  }

  private get refsFile(): string {
    return path.join(this.dir, 'refs.json');
  }

  async hasBlob(digest: string, size?: number): Promise<boolean> {
    try {
      const st = await stat(this.blobPath(digest));
      return size === undefined || st.size === size;
    } catch {
      return false;
    }
  }

  async readRefs(): Promise<Record<string, StoredRef>> {
    return (await readJson<RefsFile>(this.refsFile))?.refs ?? {};
  }

  async setRefs(keys: string[], value: StoredRef): Promise<void> {
    await withLock(path.join(this.dir, 'refs.lock'), async () => {
      const refs = await this.readRefs();
      for (const k of keys) refs[k] = value;
      await writeJsonAtomic(this.refsFile, { refs });
    });
  }

  async removeRef(key: string): Promise<boolean> {
    return withLock(path.join(this.dir, 'refs.lock'), async () => {
      const refs = await this.readRefs();
      if (!(key in refs)) return false;
      delete refs[key];
      await writeJsonAtomic(this.refsFile, { refs });
      return true;
    });
  }

  async readJsonBlob<T>(digest: string): Promise<T> {
    return JSON.parse(await readFile(this.blobPath(digest), 'utf8')) as T;
  }

  private async load(manifestDigest: string, refs: string[]): Promise<LocalImage> {
    const manifest = await this.readJsonBlob<ImageManifest>(manifestDigest);
    const config = await this.readJsonBlob<ImageConfig>(manifest.config.digest);
    return { id: manifest.config.digest, manifestDigest, manifest, config, refs, size: manifest.layers.reduce((s, l) => s + l.size, 0) };
  }

  async list(): Promise<LocalImage[]> {
    const refs = await this.readRefs();
    const byManifest = new Map<string, string[]>();
    for (const [k, v] of Object.entries(refs)) byManifest.set(v.manifestDigest, [...(byManifest.get(v.manifestDigest) ?? []), k]);
    const out: LocalImage[] = [];
    for (const [digest, keys] of byManifest) out.push(await this.load(digest, keys.sort()));
    return out;
  }

  /**
   * Finds an image by reference key, full ID, or ID prefix (as `docker inspect` accepts), checking that the
   * manifest, config and every layer are present.
   */
  async find(nameOrId: string): Promise<LocalImage | undefined> {
    const refs = await this.readRefs();
    const hit = refs[nameOrId];
    const images = hit
      ? [await this.load(hit.manifestDigest, [])]
      : (await this.list()).filter((i) => {
          const hex = i.id.slice('sha256:'.length);
          const q = nameOrId.replace(/^sha256:/, '');
          return q.length >= 4 && /^[a-f0-9]+$/.test(q) && hex.startsWith(q);
        });
    const image = images[0];
    if (!image) return undefined;
    image.refs = (await this.list()).find((i) => i.manifestDigest === image.manifestDigest)?.refs ?? [];
    for (const l of image.manifest.layers) if (!(await this.hasBlob(l.digest, l.size))) return undefined;
    return image;
  }

  async blobDigests(): Promise<string[]> {
    try {
      return (await readdir(path.join(this.dir, 'blobs', 'sha256'))).filter((f) => /^[a-f0-9]{64}$/.test(f)).map((f) => `sha256:${f}`);
    } catch {
      return [];
    }
  }
}
