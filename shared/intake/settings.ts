import type { AppConfig } from '../config';
import type { PipelineSettings } from '../../orchestrations/contracts';

/** The orchestration's settings, resolved from configuration at intake (orchestrators never read settings). */
export function pipelineSettings(config: AppConfig): PipelineSettings {
  return {
    poll: { initialMs: config.polling.initialMs, maxMs: config.polling.maxMs, factor: config.polling.multiplier },
    stagingAccounts: config.stagingAccounts.map((a) => a.accountName),
    copyConcurrency: 8,
    sasMarginMinutes: 60,
    nodeTaskMaxAttempts: 3,
  };
}
