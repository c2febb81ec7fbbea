import type { JobSpec } from '../../shared/core/spec/schema';
import { missesReason, sourceChecks } from '../../shared/core/planning/sourcesCheck';
import { activityFailureMessage } from '../runtime/activityCalls';
import type { Orchestration, PipelineRun } from '../runtime/pipelineRun';

/**
 * "Fail before paying": after admission (a parent job may have written the inputs while this one waited) and before
 * the pool is created, every blob and prefix the job reads is looked up, in one activity. Answers the job's failure
 * reason when something is missing or the lookups could not be made, else undefined. Nothing was created yet, so a
 * job that fails here has nothing to clean up.
 */
export function* sourcesCheck(run: PipelineRun, spec: JobSpec): Orchestration<string | undefined> {
  const checks = sourceChecks(spec);
  if (!checks.length) return undefined;
  try {
    const misses = yield* run.call('sourcesMissing', { checks });
    return misses.length ? missesReason(misses) : undefined;
  } catch (err) {
    return `could not check the job's inputs before creating its pool: ${withoutActivityName(activityFailureMessage(err))}`;
  }
}

/** The job's reason is for its owner: the activity's own words, not the Durable wrapper that names it. */
function withoutActivityName(message: string): string {
  return message.replace(/^Activity function '[^']*' failed:\s*/, '');
}
