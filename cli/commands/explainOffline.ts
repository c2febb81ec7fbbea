/**
 * hpcjob explain --offline: the same pure function the API runs for a dry run, here, with the documented default
 * settings and without the deployment's policies. Its own module so that `explain` against the API does not load
 * the planner, the spec schemas and the price table (cli/commands/explain.ts imports it only with --offline).
 */
import type { ExplainDocument } from '../../shared/core/contract/explain';
import { defaultExplainSettings } from '../../shared/adapters/intake/settings';
import { deploymentValue, explainJob } from '../../shared/adapters/intake/explain';
import { factsSummary, offlineFacts } from '../../shared/core/planning/azureFacts';
import { parseJobSpec } from '../../shared/core/spec';
import { submissionJobId } from '../../shared/core/state/submission';
import { CliError, ExitCode } from '../errors';
import { fallbackQuote } from '../../shared/core/ops/priceQuote';
import { DEFAULT_PRICE_TABLE } from '../../shared/core/config/priceTable';

export function explainOffline(file: string, text: string, contentType: string): ExplainDocument {
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
