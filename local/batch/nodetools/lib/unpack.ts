/**
 * Materialises an image's root filesystem in a directory by applying its layers in order (what a snapshotter
 * does), checking each layer's uncompressed digest against the config's diff_ids on the way.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { createGunzip } from 'node:zlib';
import { MEDIA_TYPE } from '../../../registry/oci';
import { CliError } from './errors';
import { ImageStore, LocalImage } from './imageStore';

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';

export async function unpackImage(store: ImageStore, image: LocalImage, rootfs: string): Promise<void> {
  // tar is loaded only here so that commands that do not unpack (ps, exec, pull) start faster.
  const { extract } = await import('tar');
  await mkdir(rootfs, { recursive: true });
  const diffIds = image.config.rootfs?.diff_ids ?? [];
  for (const [i, layer] of image.manifest.layers.entries()) {
    const gz = layer.mediaType === MEDIA_TYPE.layerTarGzip || layer.mediaType.endsWith('tar.gzip') || layer.mediaType.endsWith('+gzip');
    const whiteouts: string[] = [];
    const hash = createHash('sha256');
    const source = createReadStream(store.blobPath(layer.digest));
    const tarStream = gz ? source.pipe(createGunzip()) : source;
    tarStream.on('data', (c: Buffer) => hash.update(c));
    const unpack = extract({
      cwd: rootfs,
      preserveOwner: false,
      filter: (p: string) => {
        const base = path.posix.basename(p);
        if (base === OPAQUE) throw new CliError(`layer ${layer.digest}: opaque whiteouts are not supported by the emulated node`, 125);
        if (base.startsWith(WHITEOUT)) {
          whiteouts.push(path.posix.join(path.posix.dirname(p), base.slice(WHITEOUT.length)));
          return false;
        }
        return true;
      },
    });
    await new Promise<void>((resolve, reject) => {
      source.on('error', reject);
      tarStream.on('error', (err: Error) => reject(new CliError(`failed to register layer ${layer.digest}: ${err.message}`, 125)));
      unpack.on('error', reject);
      unpack.on('close', resolve);
      tarStream.pipe(unpack);
    });
    const diffId = `sha256:${hash.digest('hex')}`;
    if (diffIds[i] && diffIds[i] !== diffId) {
      throw new CliError(`failed to register layer: layer ${layer.digest} has diff ID ${diffId}, expected ${diffIds[i]}`, 125);
    }
    for (const w of whiteouts) {
      const target = path.resolve(rootfs, w);
      if (target.startsWith(path.resolve(rootfs) + path.sep)) await rm(target, { recursive: true, force: true });
    }
  }
}
