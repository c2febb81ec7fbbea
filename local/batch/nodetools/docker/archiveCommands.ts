/**
 * docker save | docker load: an image as a tar stream, the way images move between nodes without a registry
 * (`ssh <node> docker save IMG | docker load`). The archive is an OCI image layout (`oci-layout`, `index.json`,
 * `blobs/sha256/…`) plus Docker's `manifest.json`, as `docker save` writes since Docker 25. `load` verifies the
 * sha256 and size of every blob before it enters the node's store, so a corrupted or truncated stream fails the
 * load instead of leaving a broken image. Both pace their stream at the node's NIC cap (lib/nodeNetwork.ts).
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, link, mkdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { Descriptor, ImageIndex, ImageManifest, MEDIA_TYPE, REF_NAME_ANNOTATION, digestHex, isDigest } from '../../../registry/oci';
import { FlagSet, bool, last, val } from '../lib/args';
import { CliError } from '../lib/errors';
import { parseImageRef, refKey } from '../lib/imageRef';
import { ImageStore, LocalImage } from '../lib/imageStore';
import { pacedCopy } from '../lib/nodeNetwork';
import { Session } from './session';

/** containerd's annotation for the full image name in an archive's index.json. */
const IMAGE_NAME_ANNOTATION = 'io.containerd.image.name';

async function findImage(s: Session, arg: string): Promise<LocalImage | undefined> {
  let key = arg;
  try {
    key = refKey(parseImageRef(arg));
  } catch {
    // an image id
  }
  return (await s.images.find(key)) ?? (await s.images.find(arg));
}

function tar(args: string[], stdio: ['pipe' | 'ignore', 'pipe' | 'ignore', 'pipe']) {
  const child = spawn('tar', args, { stdio });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<void>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve() : reject(new CliError(`Error processing tar file(exit status ${code}): ${stderr.trim().split('\n').pop() ?? ''}`, 1)),
    );
  });
  return { child, done };
}

const SAVE = new FlagSet('docker save', { output: val('o', 'output') });

export async function save(s: Session, argv: string[]): Promise<number> {
  const p = SAVE.parse(argv, false);
  if (!p.positionals.length) throw new CliError('"docker save" requires at least 1 argument.\nSee \'docker save --help\'.', 1);
  const output = last(p, 'output');
  if (!output && process.stdout.isTTY) throw new CliError('cowardly refusing to save to a terminal. Use the -o flag or redirect', 1);
  const stage = path.join(s.images.tmpDir, `save-${randomBytes(6).toString('hex')}`);
  try {
    await mkdir(path.join(stage, 'blobs', 'sha256'), { recursive: true });
    const index: ImageIndex = { schemaVersion: 2, mediaType: MEDIA_TYPE.imageIndex, manifests: [] };
    const dockerManifest: { Config: string; RepoTags: string[]; Layers: string[] }[] = [];
    for (const arg of p.positionals) {
      const image = await findImage(s, arg);
      if (!image) throw new CliError(`Error response from daemon: No such image: ${arg}`, 1);
      const blobs = [image.manifestDigest, image.manifest.config.digest, ...image.manifest.layers.map((l) => l.digest)];
      for (const d of blobs) await linkOrCopy(s.images.blobPath(d), path.join(stage, 'blobs', 'sha256', digestHex(d)));
      const name = image.refs.find((r) => !r.includes('@')) ?? arg;
      const size = (await stat(s.images.blobPath(image.manifestDigest))).size;
      index.manifests.push({
        mediaType: MEDIA_TYPE.imageManifest,
        digest: image.manifestDigest,
        size,
        annotations: { [IMAGE_NAME_ANNOTATION]: name, [REF_NAME_ANNOTATION]: name.slice(name.lastIndexOf(':') + 1) },
      });
      dockerManifest.push({
        Config: `blobs/sha256/${digestHex(image.id)}`,
        RepoTags: [name],
        Layers: image.manifest.layers.map((l) => `blobs/sha256/${digestHex(l.digest)}`),
      });
    }
    await writeFile(path.join(stage, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
    await writeFile(path.join(stage, 'index.json'), JSON.stringify(index));
    await writeFile(path.join(stage, 'manifest.json'), JSON.stringify(dockerManifest));
    const t = tar(['-cf', '-', '-C', stage, '.'], ['ignore', 'pipe', 'pipe']);
    const out: Writable = output ? createWriteStream(output) : process.stdout;
    await Promise.all([pacedCopy(t.child.stdout!, out, 'egress'), t.done]);
    if (output)
      await new Promise<void>((resolve, reject) => (out as ReturnType<typeof createWriteStream>).end((err?: Error | null) => (err ? reject(err) : resolve())));
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  return 0;
}

async function linkOrCopy(from: string, to: string): Promise<void> {
  try {
    await link(from, to);
  } catch {
    await copyFile(from, to);
  }
}

const LOAD = new FlagSet('docker load', { input: val('i', 'input'), quiet: bool('q', 'quiet') });

async function sha256File(file: string): Promise<string> {
  const h = createHash('sha256');
  for await (const c of createReadStream(file)) h.update(c as Buffer);
  return `sha256:${h.digest('hex')}`;
}

/** Checks a blob of the archive against its descriptor (digest and size): content-addressed, so nothing is trusted. */
async function verified(stage: string, d: Descriptor, what: string): Promise<string> {
  if (!isDigest(d.digest)) throw new CliError(`Error response from daemon: invalid ${what} digest ${JSON.stringify(d.digest)} in the archive`, 1);
  const file = path.join(stage, 'blobs', 'sha256', digestHex(d.digest));
  const st = await stat(file).catch(() => undefined);
  if (!st) throw new CliError(`Error response from daemon: the archive has no ${what} blob ${d.digest} (truncated stream?)`, 1);
  const actual = await sha256File(file);
  if (actual !== d.digest || st.size !== d.size) {
    throw new CliError(
      `Error response from daemon: ${what} ${d.digest} failed verification: content has digest ${actual} and ${st.size} bytes (expected ${d.size})`,
      1,
    );
  }
  return file;
}

async function adopt(store: ImageStore, file: string, digest: string): Promise<void> {
  if (await store.hasBlob(digest)) return;
  await mkdir(path.dirname(store.blobPath(digest)), { recursive: true });
  await rename(file, store.blobPath(digest));
}

export async function load(s: Session, argv: string[]): Promise<number> {
  const p = LOAD.parse(argv, false);
  if (p.positionals.length) throw new CliError('"docker load" accepts no arguments.\nSee \'docker load --help\'.', 1);
  const input = last(p, 'input');
  if (!input && process.stdin.isTTY) throw new CliError('requested load from stdin, but stdin is empty', 1);
  const stage = path.join(s.images.tmpDir, `load-${randomBytes(6).toString('hex')}`);
  await mkdir(stage, { recursive: true });
  try {
    const t = tar(['-xf', '-', '-C', stage], ['pipe', 'ignore', 'pipe']);
    const source: Readable = input ? createReadStream(input) : process.stdin;
    const copied = pacedCopy(source, t.child.stdin!, 'ingress').finally(() => t.child.stdin!.end());
    await Promise.all([copied, t.done]);
    const index = JSON.parse(
      await readFile(path.join(stage, 'index.json'), 'utf8').catch(() => {
        throw new CliError('Error response from daemon: the archive has no index.json: not an image archive written by docker save (or the stream was cut)', 1);
      }),
    ) as ImageIndex;
    if (!index.manifests?.length) throw new CliError('Error response from daemon: the archive names no image', 1);
    for (const desc of index.manifests) {
      const manifestFile = await verified(stage, desc, 'manifest');
      const manifest = JSON.parse(await readFile(manifestFile, 'utf8')) as ImageManifest;
      const files = [
        { d: manifest.config, f: await verified(stage, manifest.config, 'config') },
        ...(await Promise.all(manifest.layers.map(async (l) => ({ d: l, f: await verified(stage, l, 'layer') })))),
      ];
      for (const { d, f } of files) await adopt(s.images, f, d.digest);
      await adopt(s.images, manifestFile, desc.digest);
      const name = desc.annotations?.[IMAGE_NAME_ANNOTATION];
      const keys = name ? [refKey(parseImageRef(name))] : [];
      await s.images.setRefs(keys, { manifestDigest: desc.digest, imageId: manifest.config.digest, pulledAt: new Date().toISOString() });
      s.out(name ? `Loaded image: ${name}` : `Loaded image ID: ${manifest.config.digest}`);
    }
  } finally {
    await rm(stage, { recursive: true, force: true });
  }
  return 0;
}
