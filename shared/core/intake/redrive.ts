/**
 * Re-drive a submission whose orchestration start was lost (the sweep's lostStart rule, shared/core/ops/sweepRules.ts):
 * intake's own second half, from the recorded row instead of a request. The row is read again first, so a job that
 * moved on (its run started after the sweep looked) or was cancelled is left alone. Every step is idempotent: the
 * dependents index is a set, the start looks for an instance first and a racing start answers "exists".
 */
import type { JobStore } from '../../adapters/state';
import { planArray, registerDependents, startArray, type SchedulingPolicy } from '../scheduling/intake';
import type { OrchestrationStarter } from '../../adapters/intake/submit';

export type RedriveOutcome = 'started' | 'exists' | 'moved';

export async function redriveSubmission(store: JobStore, starter: OrchestrationStarter, policy: SchedulingPolicy, jobId: string): Promise<RedriveOutcome> {
  const job = await store.get(jobId);
  if (!job || job.state !== 'Submitted' || job.cancelRequestedAt !== undefined) return 'moved';
  const spec = job.spec;
  if (!spec) throw new Error(`job ${jobId} holds no valid spec to start its run from`);
  if (spec.array) {
    // The array's row in Submitted: its intake stopped while writing or starting its jobs; do it all again.
    const planned = await planArray(store, job.id, spec);
    if (!planned.ok) throw new Error(`the array's jobs cannot be written: ${planned.errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`);
    return startArray(store, starter, policy, job, planned.children);
  }
  await registerDependents(policy, job.id, spec);
  return starter.ensureStarted(job.id, spec, false);
}
