import { loadConfig, type AppConfig } from '../config';
import type { ExplainSettings } from '../../core/contract/explain';
import { MPI_WAIT_POLLS_PER_GENERATION, type PipelineSettings } from '../../core/contract';

/** The orchestration's settings, resolved from configuration at intake (orchestrators never read settings). */
export function pipelineSettings(config: AppConfig): PipelineSettings {
  return {
    poll: { initialMs: config.polling.initialMs, maxMs: config.polling.maxMs, factor: config.polling.multiplier, lookMaxMs: config.polling.lookMaxMs },
    stagingAccounts: config.stagingAccounts.map((a) => a.accountName),
    copyConcurrency: config.pipeline.copyConcurrency,
    sasMarginMinutes: config.pipeline.sasMarginMinutes,
    nodeTaskMaxAttempts: config.pipeline.nodeTaskMaxAttempts,
    sasMaxLifetimeMinutes: config.pipeline.sasMaxLifetimeMinutes,
    queuePollMs: config.admission.pollMs,
    preflightFabricDefaults: config.pipeline.preflightFabricDefaults,
    preflightHealthChecks: config.pipeline.preflightHealthChecks,
    ...(config.pipeline.preflightSshWaitMinMs > 0 ? { preflightSshWaitMinMs: config.pipeline.preflightSshWaitMinMs } : {}),
    overlapStaging: config.pipeline.overlapStaging,
    checkSources: true,
    readImageEvidence: true,
    explainFailures: true,
    mpiWaitPollsPerGeneration: MPI_WAIT_POLLS_PER_GENERATION,
    emptyDownloadsAtOnce: true,
    nodeLogsListed: true,
    ...(config.poolIdentity ? { poolIdentityClientId: config.poolIdentity.clientId } : {}),
  };
}

/** The settings an explain document shows: this deployment's, as the orchestration would get them. */
export function explainSettings(config: AppConfig): ExplainSettings {
  const { stagingAccounts, copyConcurrency, sasMarginMinutes, sasMaxLifetimeMinutes, nodeTaskMaxAttempts } = pipelineSettings(config);
  const poolIdentity = config.poolIdentity ? { resourceId: config.poolIdentity.resourceId, clientId: config.poolIdentity.clientId } : null;
  return {
    source: 'deployment',
    stagingAccounts,
    copyConcurrency,
    sasMarginMinutes,
    sasMaxLifetimeMinutes,
    nodeTaskMaxAttempts,
    poolIdentity,
    poolSubnetId: config.poolSubnetId ?? null,
    preflightHealthChecks: [...config.pipeline.preflightHealthChecks],
  };
}

/**
 * The documented defaults of those settings (an offline explain): shared/adapters/config's own defaults, read through it with
 * only the settings it requires, and the staging accounts left open (every deployment names its own).
 */
export function defaultExplainSettings(openValue: (what: string) => string): ExplainSettings {
  const config = loadConfig({
    BATCH_ACCOUNT_URL: 'https://batch.invalid',
    BATCH_ACCOUNT_NAME: 'batch',
    AzureWebJobsStorage__accountName: 'host',
    STAGING_ACCOUNTS: 'staging',
  });
  return { ...explainSettings(config), source: 'defaults', stagingAccounts: [openValue('staging accounts (STAGING_ACCOUNTS)')] };
}
