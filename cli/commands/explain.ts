/**
 * hpcjob explain <spec> [--offline]: what the pipeline would send to Batch for this spec, creating nothing. By default
 * it asks the API (POST /api/jobs?dryRun=true), so the answer is this deployment's (its settings, its data-access and
 * container policies, the job id it would give you); --offline runs the same pure function here with the documented
 * default settings and without the deployment's policies (explainOffline.ts, loaded only then). --json prints the
 * document (docs/explain.md).
 */
import { printJson, type CommandContext } from '../context';
import { ExitCode } from '../errors';
import { formatExplain } from '../explainSummary';
import { readSpecFile } from '../specFile';

export async function explainCommand(ctx: CommandContext, file: string, options: { offline?: boolean }): Promise<number> {
  const spec = readSpecFile(file);
  const doc = options.offline
    ? (await import('./explainOffline')).explainOffline(file, spec.text, spec.contentType)
    : await ctx.api().explain(spec.text, spec.contentType);
  if (ctx.json) printJson(ctx, doc);
  else ctx.out(`${formatExplain(doc)}\n`);
  return ExitCode.Ok;
}
