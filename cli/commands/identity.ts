/** login (device code, token saved), logout, whoami (the caller as the API sees it). */
import { type CommandContext, printJson } from '../context';
import { forgetToken, login } from '../auth';
import { ExitCode } from '../errors';

export async function loginCommand(ctx: CommandContext): Promise<number> {
  await login(ctx.connection(), (message) => ctx.err(`${message}\n`));
  return whoamiCommand(ctx);
}

export function logoutCommand(ctx: CommandContext): number {
  ctx.err(forgetToken() ? 'signed out (the saved token was removed)\n' : 'not signed in\n');
  return ExitCode.Ok;
}

export async function whoamiCommand(ctx: CommandContext): Promise<number> {
  const me = await ctx.api().me();
  if (ctx.json) printJson(ctx, me);
  else {
    ctx.out(`${me.name}  (${me.kind}, id ${me.id})\n`);
    ctx.out(`roles    ${me.roles.join(', ') || 'none'}\n`);
    ctx.out(`may      ${me.permissions.join(', ') || 'nothing'}${me.seesAllJobs ? '  (sees every job)' : '  (own jobs only)'}\n`);
    if (me.dataArea !== undefined) ctx.out(`data     ${me.dataArea}  (in any container jobs may use)\n`);
    for (const a of me.sharedAreas ?? []) ctx.out(`shared   ${a.account}/${a.container}/${a.prefix}  (${a.access})\n`);
  }
  return ExitCode.Ok;
}
