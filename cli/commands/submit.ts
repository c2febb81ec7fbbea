/** hpcjob submit <spec> [--watch]: sends the spec as written (the API validates and normalizes it). */
import { printJson, type CommandContext } from '../context';
import { ExitCode } from '../errors';
import { readSpecFile } from '../specFile';
import { watchCommand, type WatchOptions } from './watch';

export async function submitCommand(ctx: CommandContext, file: string, options: { watch?: boolean } & WatchOptions): Promise<number> {
  const spec = readSpecFile(file);
  const answer = await ctx.api().submit(spec.text, spec.contentType);
  const id = answer.job.id;
  if (!options.watch) {
    if (ctx.json) printJson(ctx, answer);
    else
      ctx.out(
        `${answer.created ? 'submitted' : 'already submitted (same spec), not started again:'} job ${id} (${answer.job.name})\nstatus: ${answer.statusUrl}\n`,
      );
    return ExitCode.Ok;
  }
  // With --json, stdout carries only the final job view, so it parses as one document.
  if (!ctx.json) ctx.err(`${answer.created ? 'submitted' : 'already submitted:'} job ${id} (${answer.job.name})\n`);
  return watchCommand(ctx, id, options);
}
