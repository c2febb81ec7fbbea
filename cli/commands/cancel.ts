/** hpcjob cancel <id>: asks the pipeline to stop; cleanup still runs (watch the job to see it finish). */
import { printJson, type CommandContext } from '../context';
import { ExitCode } from '../errors';

export async function cancelCommand(ctx: CommandContext, id: string, reason?: string): Promise<number> {
  const answer = await ctx.api().cancel(id, reason);
  if (ctx.json) printJson(ctx, answer);
  else if (answer.finishing) ctx.out(`job ${id} is already cleaning up${answer.endsAs ? ` and will end ${answer.endsAs}` : ''}: too late to cancel\n`);
  else if (answer.cancelRequested) ctx.out(`cancel requested for job ${id} (was ${answer.job.state}); cleanup still runs: hpcjob watch ${id}\n`);
  else ctx.out(`job ${id} had already finished (${answer.job.state}): nothing to cancel\n`);
  return ExitCode.Ok;
}
