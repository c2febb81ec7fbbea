/**
 * hpcjob explain <spec> [--offline]: what the pipeline would send to Batch for this spec, creating nothing. By default
 * it asks the API (POST /api/jobs?dryRun=true), so the answer is this deployment's (its settings, its data-access and
 * container policies, the job id it would give you); --offline runs the same pure function here with the documented
 * default settings and without the deployment's policies. --json prints the document (docs/explain.md).
 */
import type { ExplainDocument } from '../../shared/core/contract/explain';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { deploymentValue, explainJob } from '../../shared/adapters/intake/explain';
import { factsSummary, offlineFacts } from '../../shared/core/planning/azureFacts';
import { parseJobSpec } from '../../shared/core/spec';
import { submissionJobId } from '../../shared/core/state/submission';
import { printJson, type CommandContext } from '../context';
import { CliError, ExitCode } from '../errors';
import { formatExplain } from '../explainSummary';
import { readSpecFile } from '../specFile';
import { fallbackQuote } from '../../shared/core/ops/priceQuote';
import { DEFAULT_PRICE_TABLE } from '../../shared/core/config/priceTable';

export async function explainCommand(ctx: CommandContext, file: string, options: { offline?: boolean }): Promise<number> {
  const spec = readSpecFile(file);
  const doc = options.offline ? explainOffline(file, spec.text, spec.contentType) : await ctx.api().explain(spec.text, spec.contentType);
  if (ctx.json) printJson(ctx, doc);
  else ctx.out(`${formatExplain(doc)}\n`);
  return ExitCode.Ok;
}

function explainOffline(file: string, text: string, contentType: string): ExplainDocument {
  const parsed = parseJobSpec(text, contentType);
  if (!parsed.ok) throw new CliError(`${file} is not a valid job spec: ${parsed.errors.length} problem(s)`, ExitCode.Usage, parsed.errors);
  const { spec } = parsed;
  // Without a caller the id of a spec without `id` is the unscoped content hash; the API scopes it to the caller.
  const doc = explainJob({
    jobId: submissionJobId(spec),
    jobIdFrom: spec.id !== undefined ? 'spec.id' : 'content',
    spec,
    settings: defaultExplainSettings(deploymentValue),
    policiesChecked: false,
    // Offline the deployment's prices are unknown: the built-in table, marked as the fallback it is.
    ...(spec.pool.vmSize ? { price: fallbackQuote(spec.pool.vmSize, DEFAULT_PRICE_TABLE, "offline: the deployment's prices are not known") } : {}),
  });
  // Offline the account is not asked: the built-in size table, marked as such (docs/azure-facts.md).
  if (doc.pool.action === 'create') doc.pool.facts = factsSummary(offlineFacts(), spec.pool.vmSize);
  return doc;
}
