import type { AppConfig } from '../config';
import type { PipelineSettings } from '../contract';

/** The orchestration's settings, resolved from configuration at intake (orchestrators never read settings). */
export function pipelineSettings(config: AppConfig): PipelineSettings {
  return {
    poll: { initialMs: config.polling.initialMs, maxMs: config.polling.maxMs, factor: config.polling.multiplier },
    stagingAccounts: config.stagingAccounts.map((a) => a.accountName),
    copyConcurrency: config.pipeline.copyConcurrency,
    sasMarginMinutes: config.pipeline.sasMarginMinutes,
    nodeTaskMaxAttempts: config.pipeline.nodeTaskMaxAttempts,
    sasMaxLifetimeMinutes: config.pipeline.sasMaxLifetimeMinutes,
    queuePollMs: config.admission.pollMs,
    preflightFabricDefaults: config.pipeline.preflightFabricDefaults,
  };
}
