/**
 * hpcjob logs <id> [--node n] [--stream s] [--follow]: the MPI master's (or a node's) stdout to our stdout and
 * its stderr to our stderr. --follow polls for new bytes until the job is terminal, then reads once more.
 */
import type { JobLogs } from '../apiClient';
import type { CommandContext } from '../context';
import { ExitCode } from '../errors';
import { isTerminalState } from '../stageRows';

type Stream = 'stdout' | 'stderr';

export interface LogsOptions {
  node?: string;
  stream?: Stream;
  follow?: boolean;
  intervalMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function logsCommand(ctx: CommandContext, id: string, options: LogsOptions): Promise<number> {
  const api = ctx.api();
  const streams: Stream[] = options.stream ? [options.stream] : ['stdout', 'stderr'];
  const offsets = new Map<Stream, number>(streams.map((s) => [s, 0]));
  const sources = new Map<Stream, JobLogs['source']>();
  const noted = new Set<string>();

  const readOnce = async () => {
    for (const stream of streams) {
      const since = offsets.get(stream) ?? 0;
      const chunk = await api.logs(id, { node: options.node, stream, since });
      // Once the node is gone the recorded tail has other offsets than the live file we were reading: stop there.
      if (chunk.source === 'recorded' && sources.get(stream) === 'live') continue;
      if (chunk.source !== 'none') sources.set(stream, chunk.source);
      if (chunk.message && !noted.has(chunk.message)) {
        noted.add(chunk.message);
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
    const view = await api.getJob(id);
    await readOnce();
    if (isTerminalState(view.state)) return ExitCode.Ok;
    await sleep(options.intervalMs);
  }
}
