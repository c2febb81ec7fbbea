/**
 * hpcjob logs <id> [--node n] [--stream s] [--follow]: the MPI master's (or a node's) stdout to our stdout and
 * its stderr to our stderr. --follow polls for new bytes until the job is terminal, then reads once more.
 */
import type { JobLogs } from '../apiClient';
import type { CommandContext } from '../context';
import { ExitCode } from '../errors';
import { TransientRetry } from '../transient';
import { isTerminal } from '../../shared/core/state/states';

type Stream = 'stdout' | 'stderr';

export interface LogsOptions {
  node?: string;
  stream?: Stream;
  follow?: boolean;
  intervalMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** How much printed text per stream is kept to line the recorded tail up with what was already shown. */
const KEEP_PRINTED = 64 * 1024;

/**
 * The part of the recorded tail not printed yet: the tail's longest prefix that ends what was printed is
 * skipped. Needed because the live file and the recorded tail have different offsets. The recorded tail is whole
 * lines without the file's final line break (shared/core/contract MpiResult.stdoutTail), so a printed final break is
 * not part of the match.
 */
export function unseenTail(printed: string, tail: string): string {
  const overlap = (shown: string) => {
    for (let k = Math.min(tail.length, shown.length); k > 0; k--) if (shown.endsWith(tail.slice(0, k))) return k;
    return 0;
  };
  return tail.slice(Math.max(overlap(printed), overlap(printed.replace(/\r?\n$/, ''))));
}

export async function logsCommand(ctx: CommandContext, id: string, options: LogsOptions): Promise<number> {
  const api = ctx.api();
  const streams: Stream[] = options.stream ? [options.stream] : ['stdout', 'stderr'];
  const offsets = new Map<Stream, number>(streams.map((s) => [s, 0]));
  const sources = new Map<Stream, JobLogs['source']>();
  const noted = new Set<string>();
  const printed = new Map<Stream, string>();
  // Only a follow outlives hiccups; a one-shot read reports the error at once.
  const retry = new TransientRetry(options.intervalMs, ctx.err, options.follow ? 10 : 1);

  const readOnce = async () => {
    for (const stream of streams) {
      const since = offsets.get(stream) ?? 0;
      const chunk = await retry.call(() => api.logs(id, { node: options.node, stream, since }));
      if (chunk.source === 'recorded' && sources.get(stream) === 'live') {
        // The node went away while we followed it (pool deleted): the recorded tail has its own offsets, so take
        // all of it and print only what lies beyond the live reads.
        const full = since > 0 ? await retry.call(() => api.logs(id, { node: options.node, stream, since: 0 })) : chunk;
        const rest = unseenTail(printed.get(stream) ?? '', full.content);
        sources.set(stream, 'recorded');
        offsets.set(stream, full.size);
        if (ctx.json) {
          if (rest) ctx.out(`${JSON.stringify({ ...full, content: rest })}\n`);
        } else if (rest) (stream === 'stdout' ? ctx.out : ctx.err)(rest);
        continue;
      }
      // Notes ("not started yet", "node gone") only until the stream has been read: not when it ends a follow.
      const note = chunk.message && !sources.has(stream) && !noted.has(chunk.message.replace(/\(.*\)$/, ''));
      if (chunk.source !== 'none') sources.set(stream, chunk.source);
      if (chunk.content) printed.set(stream, ((printed.get(stream) ?? '') + chunk.content).slice(-KEEP_PRINTED));
      if (note && chunk.message) {
        noted.add(chunk.message.replace(/\(.*\)$/, ''));
        ctx.err(`(${chunk.node ? `${chunk.node} ${stream}: ` : ''}${chunk.message})\n`);
      }
      if (ctx.json) {
        if (chunk.content || !options.follow) ctx.out(`${JSON.stringify(chunk)}\n`);
      } else {
        if (chunk.start > since) ctx.err(`[... ${chunk.start - since} bytes skipped ...]\n`);
        if (chunk.content) (stream === 'stdout' ? ctx.out : ctx.err)(chunk.content);
      }
      offsets.set(stream, Math.max(since, chunk.start + Buffer.byteLength(chunk.content)));
    }
  };

  if (!options.follow) {
    await readOnce();
    return ExitCode.Ok;
  }
  for (;;) {
    const view = await retry.call(() => api.getJob(id));
    await readOnce();
    if (isTerminal(view.state)) return ExitCode.Ok;
    await sleep(options.intervalMs);
  }
}
