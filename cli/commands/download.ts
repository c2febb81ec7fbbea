/**
 * hpcjob download <id> [--to DIR]: fetches every output of a job (GET /api/jobs/{id}/outputs, page by page) into DIR
 * (default ./<id>), keeping the layout below the job's prefix (workdir/, scratch/, nodes/<nodeId>/, logs/). The URLs
 * are short-lived read-only SAS URLs minted for this call; nothing is written outside DIR, whatever a blob is named.
 */
import { createWriteStream } from 'node:fs';
import { mkdir, rename, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { CommandContext } from '../context';
import { CliError, ExitCode } from '../errors';
import { formatBytes } from '../format';

export interface DownloadOptions {
  to?: string;
  /** Only files whose name (below the prefix) starts with this, e.g. "logs/". */
  only?: string;
  fetchImpl?: typeof fetch;
}

/** Where a file named `name` (below the prefix) goes in `dir`, or undefined when the name would leave it. */
export function targetPath(dir: string, name: string): string | undefined {
  if (!name || name.includes('\0') || name.includes('\\') || path.posix.isAbsolute(name)) return undefined;
  const parts = name.split('/');
  if (parts.some((p) => p === '' || p === '.' || p === '..')) return undefined;
  const target = path.resolve(dir, ...parts);
  const root = path.resolve(dir);
  return target.startsWith(root + path.sep) ? target : undefined;
}

export async function downloadCommand(ctx: CommandContext, id: string, options: DownloadOptions): Promise<number> {
  const api = ctx.api();
  const dir = path.resolve(options.to ?? id);
  const fetchImpl = options.fetchImpl ?? fetch;
  let files = 0;
  let bytes = 0;
  const skipped: string[] = [];
  let errors: string[] = [];
  let state = '';
  let token: string | undefined;
  do {
    const page = await api.outputs(id, { continuationToken: token });
    state = page.state;
    errors = page.errors ?? errors;
    for (const f of page.files) {
      if (options.only && !f.name.startsWith(options.only)) continue;
      const target = targetPath(dir, f.name);
      if (!target) {
        skipped.push(f.name);
        continue;
      }
      await mkdir(path.dirname(target), { recursive: true });
      const res = await fetchImpl(f.url).catch((err: Error) => {
        throw new CliError(`downloading ${f.name}: ${err.message}`, ExitCode.Api);
      });
      if (!res.ok || !res.body) throw new CliError(`downloading ${f.name}: storage answered ${res.status}`, ExitCode.Api);
      const partial = `${target}.part`;
      try {
        await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), createWriteStream(partial));
        await rename(partial, target);
      } catch (err) {
        await rm(partial, { force: true });
        throw new CliError(`downloading ${f.name}: ${(err as Error).message}`, ExitCode.Api);
      }
      files += 1;
      bytes += f.size;
      if (!ctx.json) ctx.err(`${f.name} (${formatBytes(f.size)})\n`);
    }
    token = page.continuationToken;
  } while (token);
  for (const name of skipped) ctx.err(`skipped ${JSON.stringify(name)}: the name would leave ${dir}\n`);
  for (const e of errors) ctx.err(`upload failure recorded for this job: ${e}\n`);
  if (ctx.json) ctx.out(`${JSON.stringify({ jobId: id, dir, files, bytes, skipped, errors })}\n`);
  else ctx.out(`${files} file(s), ${formatBytes(bytes)} downloaded to ${dir}${files === 0 ? ` (nothing uploaded yet: the job is ${state})` : ''}\n`);
  return ExitCode.Ok;
}
