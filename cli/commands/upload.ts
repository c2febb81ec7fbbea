/**
 * hpcjob upload <path> [--to <container>[/<path>]] [--account <name>]: puts a file or a folder into the caller's data
 * area (POST /api/uploads mints a SAS per blob, for exactly the blobs named: the CLI never holds a storage key).
 * Resumable: a blob that already has the file's size and MD5 is skipped, so running the command again after an
 * interruption sends only what is missing. Large files go as parallel blocks; each blob records the file's MD5
 * (Content-MD5), which the check compares. A folder keeps its layout below `<prefix><folder name>/`.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import * as path from 'node:path';
import { BlockBlobClient } from '@azure/storage-blob';
import type { CommandContext } from '../context';
import { CliError, ExitCode } from '../errors';
import { formatBytes } from '../format';
import { UPLOAD_FILES_MAX } from '../../shared/core/contract/uploads';

export interface UploadOptions {
  /** `<container>[/<path>]`: a path starting with `users/` or in a shared area is used as written, else it is below your own area. */
  to?: string;
  account?: string;
  /** Files uploaded at once (each in parallel blocks). */
  parallel?: number;
}

/** The container uploads go to when --to is not given. */
export const DEFAULT_UPLOAD_CONTAINER = 'inputs';
const BLOCK_SIZE = 8 * 1024 * 1024;

export interface LocalFile {
  /** The file on disk. */
  file: string;
  /** Its blob name below the prefix ("/"-separated). */
  name: string;
  size: number;
}

/** The files under `root` (itself when it is a file), named `<root's name>/<relative path>` for a folder. */
export async function localFiles(root: string): Promise<LocalFile[]> {
  const info = await stat(root).catch(() => undefined);
  if (!info) throw new CliError(`${root}: no such file or folder`, ExitCode.Usage);
  const base = path.basename(path.resolve(root));
  if (info.isFile()) return [{ file: root, name: base, size: info.size }];
  if (!info.isDirectory()) throw new CliError(`${root}: neither a file nor a folder`, ExitCode.Usage);
  const out: LocalFile[] = [];
  const walk = async (dir: string, rel: string[]): Promise<void> => {
    for (const entry of (await readdir(dir, { withFileTypes: true })).sort((a, b) => a.name.localeCompare(b.name))) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) await walk(full, [...rel, entry.name]);
      else if (entry.isFile()) out.push({ file: full, name: [base, ...rel, entry.name].join('/'), size: (await stat(full)).size });
    }
  };
  await walk(root, []);
  return out;
}

/**
 * The container and the prefix to ask for, from `--to`: `undefined` prefix means "your own area" (the API's default).
 * A path starting with `users/` or lying in a shared area you may write (`shared`: "container/prefix" of each) is used
 * as written; any other path goes below your own area (`area`, from GET /api/me).
 */
export function uploadTarget(to: string | undefined, area: string | undefined, shared: readonly string[]): { container: string; prefix?: string } {
  const text = (to ?? DEFAULT_UPLOAD_CONTAINER).replace(/^\/+/, '');
  const slash = text.indexOf('/');
  const container = slash < 0 ? text : text.slice(0, slash);
  let rest = slash < 0 ? '' : text.slice(slash + 1);
  if (rest && !rest.endsWith('/')) rest += '/';
  if (!rest) return { container };
  if (rest.startsWith('users/') || shared.some((s) => `${container}/${rest}`.startsWith(s))) return { container, prefix: rest };
  return { container, prefix: area === undefined ? rest : `${area}${rest}` };
}

/** The file's MD5, as storage records it (base64 of the 16 bytes). */
export async function fileMd5(file: string): Promise<Buffer> {
  const hash = createHash('md5');
  for await (const chunk of createReadStream(file)) hash.update(chunk as Buffer);
  return hash.digest();
}

/** One line of progress: files and bytes done, and a bar. */
export function progressLine(done: { files: number; bytes: number }, total: { files: number; bytes: number }, width = 24): string {
  const share = total.bytes ? done.bytes / total.bytes : total.files ? done.files / total.files : 1;
  const filled = Math.min(width, Math.round(share * width));
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done.files}/${total.files} file(s), ${formatBytes(done.bytes)} of ${formatBytes(total.bytes)}`;
}

export async function uploadCommand(ctx: CommandContext, local: string, options: UploadOptions): Promise<number> {
  const api = ctx.api();
  const files = await localFiles(local);
  if (!files.length) throw new CliError(`${local}: the folder has no files`, ExitCode.Usage);
  const me = await api.me();
  const shared = (me.sharedAreas ?? [])
    .filter((a) => a.access === 'write' && (!options.account || a.account === options.account))
    .map((a) => `${a.container}/${a.prefix}`);
  const target = uploadTarget(options.to, me.dataArea, shared);
  const total = { files: files.length, bytes: files.reduce((n, f) => n + f.size, 0) };
  const done = { files: 0, bytes: 0 };
  const live = !ctx.json && ctx.stderr.isTTY;
  const show = () => {
    if (live) ctx.stderr.write(`\r${progressLine(done, total)}`);
  };
  let uploaded = 0;
  let skipped = 0;
  let where = '';
  const blobs: string[] = [];
  for (let i = 0; i < files.length; i += UPLOAD_FILES_MAX) {
    const batch = files.slice(i, i + UPLOAD_FILES_MAX);
    const answer = await api.uploads({
      ...(options.account ? { account: options.account } : {}),
      container: target.container,
      ...(target.prefix !== undefined ? { prefix: target.prefix } : {}),
      files: batch.map((f) => ({ name: f.name })),
    });
    where = `${answer.account}/${answer.container}/${answer.prefix}`;
    const queue = batch.map((f, k) => ({ f, url: answer.files[k].url, blob: answer.files[k].blob }));
    const worker = async (): Promise<void> => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { f, url, blob } = next;
        const md5 = await fileMd5(f.file);
        const client = new BlockBlobClient(url);
        const existing = await client.getProperties().catch((err: { statusCode?: number; message?: string }) => {
          if (err.statusCode === 404) return undefined;
          throw new CliError(`${f.name}: storage answered ${err.statusCode ?? ''} ${err.message ?? ''}`.trim(), ExitCode.Api);
        });
        if (existing && existing.contentLength === f.size && existing.contentMD5 && Buffer.from(existing.contentMD5).equals(md5)) {
          skipped += 1;
        } else {
          const before = done.bytes;
          await client
            .uploadFile(f.file, {
              blockSize: BLOCK_SIZE,
              maxSingleShotSize: BLOCK_SIZE,
              concurrency: 4,
              blobHTTPHeaders: { blobContentMD5: md5 },
              onProgress: (p) => {
                done.bytes = before + p.loadedBytes;
                show();
              },
            })
            .catch((err: Error) => {
              throw new CliError(`${f.name}: upload failed: ${err.message} (run the command again: what arrived is kept)`, ExitCode.Api);
            });
          done.bytes = before;
          uploaded += 1;
        }
        done.bytes += f.size;
        done.files += 1;
        blobs.push(blob);
        show();
        if (!live && !ctx.json) ctx.err(`${f.name} (${formatBytes(f.size)})\n`);
      }
    };
    await Promise.all(Array.from({ length: Math.max(1, Math.min(options.parallel ?? 4, batch.length)) }, worker));
  }
  if (live) ctx.stderr.write('\n');
  if (ctx.json) ctx.out(`${JSON.stringify({ to: where, files: total.files, bytes: total.bytes, uploaded, skipped, blobs: blobs.sort() })}\n`);
  else ctx.out(`${total.files} file(s), ${formatBytes(total.bytes)} in ${where} (${uploaded} uploaded, ${skipped} already there with the same MD5)\n`);
  return ExitCode.Ok;
}
