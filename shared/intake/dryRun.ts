/**
 * A dry run of a submission (`POST /api/jobs?dryRun=true`): the same checks as a real submission (the spec, the
 * deployment's data-access and container policies, the job id it would get), then the explain document of what the
 * pipeline would send to Batch. Nothing is written, started or sent: no row, no orchestration, no Batch call.
 */
import type { ExplainDocument, ExplainSettings } from '../contract/explain';
import { explainJob } from '../planning/explain';
import { PlanningError } from '../planning/errors';
import type { SpecError } from '../spec';
import type { JobSpec } from '../spec/schema';
import { submissionJobId } from '../state/submission';
import { checkSubmission, type SubmitRequest } from './submit';
import { checkScheduling, type SchedulingPolicy } from '../scheduling/intake';
import type { JobStore } from '../state/jobStore';
import { checkPoolAccess, type PoolGate } from './poolAccess';

export type DryRunRequest = Pick<SubmitRequest, 'body' | 'contentType' | 'idempotencyKey' | 'idScope' | 'dataAccess' | 'containers'> & {
  settings: ExplainSettings;
  /** The submitter: recorded on the pool the job would create. */
  owner?: string;
};

export type DryRunOutcome =
  | { kind: 'invalid'; errors: SpecError[] }
  | { kind: 'explained'; document: ExplainDocument; spec: JobSpec }
  /** pool.poolId names a pool the caller may not use (as a submission would be refused: 403 PoolForbidden). */
  | { kind: 'poolForbidden'; errors: SpecError[] };

export function dryRunJob(req: DryRunRequest): DryRunOutcome {
  const checked = checkSubmission(req);
  if (!checked.ok) return { kind: 'invalid', errors: checked.errors };
  const { spec } = checked;
  const jobIdFrom = spec.id !== undefined ? 'spec.id' : req.idempotencyKey ? 'idempotencyKey' : 'content';
  try {
    const document = explainJob({ jobId: submissionJobId(spec, req.idempotencyKey, req.idScope), jobIdFrom, spec, settings: req.settings, policiesChecked: true, owner: req.owner });
    return { kind: 'explained', document, spec };
  } catch (err) {
    // A spec the schema accepts but the command builders refuse would fail its job in the pipeline: say so now.
    if (err instanceof PlanningError) return { kind: 'invalid', errors: [{ path: '', message: `the job cannot be planned: ${err.message}` }] };
    throw err;
  }
}

/**
 * The dry run against this deployment: also the scheduling checks a submission makes before anything is written (the
 * queue exists, every parent job exists and is the caller's), by reads only.
 */
export async function dryRunSubmission(store: Pick<JobStore, 'get'>, req: DryRunRequest & { owner: string; scheduling: SchedulingPolicy; pools: PoolGate }): Promise<DryRunOutcome> {
  const out = dryRunJob(req);
  if (out.kind !== 'explained') return out;
  const pool = await checkPoolAccess(out.spec, req.pools);
  if (!pool.ok) return { kind: 'poolForbidden', errors: pool.errors };
  const unschedulable = await checkScheduling(store, req.scheduling, out.document.jobId, out.spec, req.owner);
  return unschedulable.length ? { kind: 'invalid', errors: unschedulable } : out;
}
