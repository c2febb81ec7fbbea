/**
 * Intake: the one code path behind both doors (HTTP and the job-submissions queue).
 * validate → derive the job id and record the submission once (recordSubmission) → start the mpiJob
 * orchestration (instance id = job id) unless it runs already. A repeat of the same job returns the existing
 * one; the same id with a different spec is a conflict. Nothing is written for a rejected spec.
 */
import { parseJobSpec, type JobSpec, type SpecError } from '../../core/spec';
import { recordSubmission, submissionJobId, type JobRecord, type JobStore } from '../state';
import { checkDataAccess, type DataAccessPolicy } from '../../core/intake/dataAccess';
import { checkContainerPolicy, STRICT_CONTAINER_POLICY, type ContainerPolicy } from '../../core/intake/containerPolicy';
import { checkScheduling, planArray, registerDependents, startArray, type SchedulingPolicy } from '../../core/scheduling/intake';
import { checkPoolAccess, type PoolGate } from '../../core/intake/poolAccess';
import { checkDataAreas, withIntakeDefaults } from './dataAreas';
import { withRegistryAliases } from '../../core/intake/registryAliases';
import { ownerDataArea, type DataCaller } from '../auth/dataArea';
import { checkPoolFactsOnAny, type AzureFacts } from '../../core/planning/azureFacts';
import { imageCheckErrors } from '../../core/images/imageCheckErrors';

export interface OrchestrationStarter {
  /**
   * Starts the job's orchestration unless an instance with this id exists already.
   * Returns 'started' or 'exists'; must not create a second instance when called twice.
   * `justCreated`: this intake has just inserted the job row, so no instance can exist yet except through a
   * racing duplicate, which the start itself detects (409): no need to look first.
   */
  ensureStarted(jobId: string, spec: JobSpec, justCreated: boolean): Promise<'started' | 'exists'>;
}

export interface SubmitRequest {
  /** Raw body (JSON or YAML text) or an already parsed object. */
  body: unknown;
  contentType?: string;
  /** HTTP Idempotency-Key header; used only when the spec has no id. */
  idempotencyKey?: string;
  /** Who submitted it: the principal's id (shared/adapters/auth), or "queue". */
  owner: string;
  /** The storage this deployment lets jobs name (shared/core/intake/dataAccess.ts). */
  dataAccess: DataAccessPolicy;
  ownerName?: string;
  /** Derive job ids per owner (HTTP submissions: the principal's id); see submissionJobId. */
  idScope?: string;
  /** What containers may ask for beyond the allowlist (shared/core/intake/containerPolicy.ts); default: nothing. */
  containers?: ContainerPolicy;
  /** The deployment's queues and the dependents index (shared/core/scheduling/intake.ts). */
  scheduling: SchedulingPolicy;
  /** Who may use which existing pool (pool.poolId): shared/core/intake/poolAccess.ts. */
  pools: PoolGate;
  /**
   * Whose data area the spec's paths must lie in (shared/adapters/intake/dataAreas.ts). Unset: the owner's own area and
   * the shared areas open to submitters, never an admin's reach.
   */
  caller?: DataCaller;
  /** A rerun (shared/adapters/intake/rerun.ts): the job it reruns, recorded on the new row. */
  rerunOf?: string;
  /** Each Batch account's sizes and images, home first (shared/services.ts submissionFacts); unset: not checked. */
  facts?: () => Promise<readonly AzureFacts[]>;
}

/**
 * What Batch would refuse about the job's new pool (size, image, agent SKU), as spec errors with the nearest choices;
 * with several accounts, refused only when none of them offers it.
 */
export async function checkFacts(spec: JobSpec, facts: readonly AzureFacts[] | undefined): Promise<SpecError[]> {
  if (!facts) return [];
  return checkPoolFactsOnAny(facts, spec.pool).issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
}

export type SubmitOutcome =
  | { kind: 'invalid'; errors: SpecError[] }
  /** The spec names data outside the caller's area and every shared area it may use (403 DataAreaForbidden); nothing was written. */
  | { kind: 'forbidden'; errors: SpecError[] }
  | { kind: 'accepted'; created: boolean; orchestration: 'started' | 'exists' | 'skipped'; job: JobRecord }
  | { kind: 'conflict'; job: JobRecord; differingPaths: string[] }
  /** The id names another owner's job (nothing of it is told). */
  | { kind: 'taken'; jobId: string }
  /** pool.poolId names a pool the submitter may not use (403 PoolForbidden); nothing was written. */
  | { kind: 'poolForbidden'; errors: SpecError[] };

/** The outcome of the checks: the spec, or why not (`forbidden`: only data-area refusals, answered 403 rather than 400). */
export type SubmissionCheck = { ok: true; spec: JobSpec } | { ok: false; errors: SpecError[]; forbidden?: true };

/**
 * The checks every submission passes before anything is written (and a dry run passes too): the spec, then the
 * deployment's policies, then (for a spec that passes those) whose data areas it names. Without `caller` (an offline
 * explain) the area check is left out.
 */
export function checkSubmission(req: Pick<SubmitRequest, 'body' | 'contentType' | 'dataAccess' | 'containers' | 'caller'>): SubmissionCheck {
  const parsedAsWritten = parseJobSpec(req.body, req.contentType);
  if (!parsedAsWritten.ok) return { ok: false, errors: parsedAsWritten.errors };
  // Registry names the deployment aliases (the local stack's localhost:5000) become the registry nodes pull from.
  const parsed = { ...parsedAsWritten, spec: withRegistryAliases(parsedAsWritten.spec, req.containers?.registryAliases) };
  const refused = [
    ...checkDataAccess(parsed.spec, req.dataAccess),
    ...checkContainerPolicy(parsed.spec, req.containers ?? STRICT_CONTAINER_POLICY, req.dataAccess),
    // What the spec expects of its node image (modules, host paths, runtime), unless checks.image is "warn".
    ...imageCheckErrors(parsed.spec, req.containers?.customNodeImages),
  ];
  if (refused.length) return { ok: false, errors: refused };
  const outside = req.caller ? checkDataAreas(parsed.spec, req.caller, req.dataAccess.sharedAreas ?? []) : [];
  return outside.length ? { ok: false, errors: outside, forbidden: true } : { ok: true, spec: parsed.spec };
}

/** The caller of a request that names none: the owner, with a submitter's reach. */
export function callerOf(req: Pick<SubmitRequest, 'caller' | 'owner'>): DataCaller {
  return req.caller ?? { owner: req.owner, roles: ['submitter'], admin: false };
}

/** The spec as recorded: with intake's defaults for this owner and job id (dataAreas.ts withIntakeDefaults). */
export function recordedSpec(spec: JobSpec, owner: string, jobId: string, policy: DataAccessPolicy): JobSpec {
  return withIntakeDefaults(spec, {
    owner,
    jobId,
    defaultMaxWallClockMinutes: policy.defaultMaxWallClockMinutes,
    ...(policy.defaultOutputs ? { defaultOutputs: policy.defaultOutputs } : {}),
  });
}

export async function submitJob(store: JobStore, starter: OrchestrationStarter, req: SubmitRequest): Promise<SubmitOutcome> {
  const checked = checkSubmission({ ...req, caller: callerOf(req) });
  if (!checked.ok) return { kind: checked.forbidden ? 'forbidden' : 'invalid', errors: checked.errors };
  // Pools have owners: judged before anything is written (and again when the job is placed on the pool).
  const pool = await checkPoolAccess(checked.spec, req.pools);
  if (!pool.ok) return { kind: 'poolForbidden', errors: pool.errors };
  // Sizes, images and agents Batch would refuse: before anything is written, with the nearest valid choices.
  const unavailable = await checkFacts(checked.spec, req.facts && (await req.facts()));
  if (unavailable.length) return { kind: 'invalid', errors: unavailable };
  // The id comes from the spec as submitted; the recorded spec then carries the defaults that depend on it.
  const id = submissionJobId(checked.spec, req.idempotencyKey, req.idScope);
  const parsed = { spec: recordedSpec(checked.spec, req.owner, id, req.dataAccess) };
  const unschedulable = await checkScheduling(store, req.scheduling, id, parsed.spec, req.owner);
  if (unschedulable.length) return { kind: 'invalid', errors: unschedulable };
  const array = parsed.spec.array ? await planArray(store, id, parsed.spec) : undefined;
  if (array && !array.ok) return { kind: 'invalid', errors: array.errors };
  const recorded = await recordSubmission(store, {
    id,
    spec: parsed.spec,
    idempotencyKey: req.idempotencyKey,
    owner: req.owner,
    ownerName: req.ownerName,
    idScope: req.idScope,
    poolAccess: pool.basis,
    dataArea: ownerDataArea(req.owner) ?? '',
    ...(req.rerunOf !== undefined ? { rerunOf: req.rerunOf } : {}),
  });
  if (recorded.outcome === 'taken') return { kind: 'taken', jobId: recorded.id };
  if (recorded.outcome === 'conflict') return { kind: 'conflict', job: recorded.job, differingPaths: recorded.differingPaths };
  const { job } = recorded;
  const created = recorded.outcome === 'created';
  // An array runs as its jobs; its own row only tracks them.
  if (array) {
    const orchestration = await startArray(store, starter, req.scheduling, job, array.children);
    return { kind: 'accepted', created, orchestration, job: (await store.get(job.id)) ?? job };
  }
  // A job that moved on (running or finished) has its orchestration; only a job still in Submitted may lack
  // one (its first intake died between the insert and the start, or this is that intake).
  if (job.state !== 'Submitted') return { kind: 'accepted', created, orchestration: 'skipped', job };
  await registerDependents(req.scheduling, job.id, parsed.spec);
  const orchestration = await starter.ensureStarted(job.id, parsed.spec, created);
  return { kind: 'accepted', created, orchestration, job };
}
