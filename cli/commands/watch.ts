/**
 * hpcjob watch <id>: polls the job until it is terminal, drawing the per-stage progress, and turns the outcome
 * into the exit code (0 Succeeded, 1 Failed or Cancelled). Transient API errors are retried for a while:
 * a watch outlives a Function App restart.
 */
import type { JobView } from '../apiClient';
import { printJson, type CommandContext } from '../context';
import { CliError, ExitCode } from '../errors';
import { TransientRetry } from '../transient';
import { outcomeReason } from '../format';
import { createProgressDisplay } from '../progressDisplay';
import { isTerminal } from '../../shared/core/state/states';
import { isOrchestrationAborted } from '../../shared/core/contract/orchestration';

export interface WatchOptions {
  intervalMs: number;
  /** Consecutive failed polls tolerated before giving up. */
  maxErrors?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function watchCommand(ctx: CommandContext, id: string, options: WatchOptions): Promise<number> {
  const api = ctx.api();
  // Progress goes to stderr so that stdout carries only the result (or the JSON) for scripts.
  const display = ctx.json ? undefined : await createProgressDisplay(ctx.stderr, ctx.err);
  const retry = new TransientRetry(options.intervalMs, ctx.err, options.maxErrors);
  let view: JobView;
  try {
    for (;;) {
      view = await retry.call(() => api.getJob(id));
      display?.update(view);
      if (isTerminal(view.state)) break;
      if (view.orchestrationStatus && isOrchestrationAborted(view.orchestrationStatus)) {
        throw new CliError(
          `job ${id} is stuck in ${view.state}: its orchestration is ${view.orchestrationStatus}${view.progress?.lastError ? ` (${view.progress.lastError})` : ''}`,
          ExitCode.Api,
        );
      }
      await sleep(options.intervalMs);
    }
  } finally {
    display?.stop();
  }
  return reportOutcome(ctx, view);
}

export function reportOutcome(ctx: CommandContext, view: JobView): number {
  if (ctx.json) printJson(ctx, view);
  if (view.state === 'Succeeded') {
    if (!ctx.json) ctx.out(`job ${view.id} Succeeded${view.result?.nodeMinutes !== undefined ? ` (${view.result.nodeMinutes} node-minutes)` : ''}\n`);
    return ExitCode.Ok;
  }
  ctx.err(`job ${view.id} ${view.state}: ${outcomeReason(view) || 'no reason recorded'}\n`);
  return ExitCode.JobNotSucceeded;
}
