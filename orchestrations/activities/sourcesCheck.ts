/**
 * "Fail before paying": looks up every blob and prefix the job reads (shared/core/planning/sourcesCheck.ts plans which),
 * before its pool is created. Only reads, so Durable's at-least-once delivery is harmless.
 */
import type { SourceCheck, SourceMiss } from '../../shared/core/planning/sourcesCheck';
import { dataAccount } from '../../shared/services';
import { missingSources } from '../../shared/adapters/storage/existence';
import { registerActivity } from './registration';

export function sourcesMissing(input: { checks: SourceCheck[] }): Promise<SourceMiss[]> {
  // dataAccount applies the data-access policy again: an orchestration can be started by anyone holding the system key.
  return missingSources(dataAccount, input.checks);
}

registerActivity('sourcesMissing', sourcesMissing);
