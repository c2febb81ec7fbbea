/** hpcjob rerun <id> [--idempotency-key k] [--watch]: a new job from the recorded spec of a finished job. */
import { printJson, type CommandContext } from '../context';
import { ExitCode } from '../errors';
import { watchCommand, type WatchOptions } from './watch';

export async function rerunCommand(ctx: CommandContext, id: string, options: { idempotencyKey?: string; watch?: boolean } & WatchOptions): Promise<number> {
  const answer = await ctx.api().rerun(id, options.idempotencyKey);
  const newId = answer.job.id;
  // A repeat of the same rerun request answers the job it started (200): say so, it was not started twice.
  const what = answer.created ? `job ${id} rerun as job ${newId}` : `job ${id} was already rerun as job ${newId} (same request, not started again)`;
  if (!options.watch) {
    if (ctx.json) printJson(ctx, answer);
    else ctx.out(`${what}\nstatus: ${answer.statusUrl}\nwatch: hpcjob watch ${newId}\n`);
    return ExitCode.Ok;
  }
  if (!ctx.json) ctx.err(`${what}\n`);
  return watchCommand(ctx, newId, options);
}
