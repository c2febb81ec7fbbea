/** hpcjob status <id> and hpcjob list: one job in detail, or a table of jobs. */
import { printJson, type CommandContext } from '../context';
import { ExitCode } from '../errors';
import { formatJob, formatJobTable } from '../format';

export async function statusCommand(ctx: CommandContext, id: string): Promise<number> {
  const view = await ctx.api().getJob(id);
  if (ctx.json) printJson(ctx, view);
  else ctx.out(`${formatJob(view)}\n`);
  return ExitCode.Ok;
}

export async function listCommand(ctx: CommandContext, options: { state?: string; tag?: string; top?: number; all?: boolean }): Promise<number> {
  const api = ctx.api();
  const jobs = [];
  let token: string | undefined;
  do {
    const page = await api.listJobs({ state: options.state, tag: options.tag, top: options.top, continuationToken: token });
    jobs.push(...page.jobs);
    token = options.all ? page.continuationToken : undefined;
    if (!options.all && page.continuationToken && !ctx.json) ctx.err(`(more jobs: pass --all to list every page)\n`);
  } while (token);
  if (ctx.json) printJson(ctx, { jobs });
  else ctx.out(`${formatJobTable(jobs)}\n`);
  return ExitCode.Ok;
}
