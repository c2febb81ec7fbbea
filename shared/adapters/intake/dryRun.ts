/**
 * A dry run of a submission (`POST /api/jobs?dryRun=true`): the same checks as a real submission (the spec, the
 * deployment's data-access and container policies, the job id it would get), then the explain document of what the
 * pipeline would send to Batch. Nothing is written, started or sent: no row, no orchestration, no Batch call.
 */
import type { ExplainDocument, ExplainSettings } from '../../core/contract/explain';
import { explainCost, explainJob } from './explain';
import type { PriceQuote } from '../../core/ops/cost';
import { PlanningError } from '../../core/planning/errors';
import type { SpecError } from '../../core/spec';
import type { JobSpec } from '../../core/spec/schema';
import { submissionJobId } from '../../core/state/submission';
import { callerOf, checkFacts, checkSubmission, recordedSpec, type SubmitRequest } from './submit';
import { checkScheduling, type SchedulingPolicy } from '../../core/scheduling/intake';
import type { JobStore } from '../state/jobStore';
import { checkPoolAccess, type PoolGate } from '../../core/intake/poolAccess';
import { checkPoolFactsOnAny, factsSummary } from '../../core/planning/azureFacts';
import type { Placement } from '../../core/planning/placement';
import { missesAsErrors, sourceChecks, type SourceCheck, type SourceMiss } from '../../core/planning/sourcesCheck';
import {
  IMAGE_FIELD,
  imageEvidenceOutcome,
  imageEvidenceRequest,
  type ImageEvidenceAnswer,
  type ImageEvidenceRequest,
} from '../../core/planning/imageEvidence';
import { presetChoice } from '../../core/mpi/generation';

export type DryRunRequest = Pick<SubmitRequest, 'body' | 'contentType' | 'idempotencyKey' | 'idScope' | 'dataAccess' | 'containers' | 'caller' | 'facts'> & {
  settings: ExplainSettings;
  /** The submitter: recorded on the pool the job would create, and the recorded spec's defaults depend on it; unset: explained without them. */
  owner?: string;
  /** The MPI generation the image's evidence gives (explained as if mpi.version said it). */
  imageMpiVersion?: string;
};

export type DryRunOutcome =
  | { kind: 'invalid'; errors: SpecError[] }
  /** Data outside the caller's area (403 DataAreaForbidden), as a submission would be refused. */
  | { kind: 'forbidden'; errors: SpecError[] }
  /** pool.poolId names a pool the caller may not use (as a submission would be refused: 403 PoolForbidden). */
  | { kind: 'poolForbidden'; errors: SpecError[] }
  | { kind: 'explained'; document: ExplainDocument; spec: JobSpec };

export function dryRunJob(req: DryRunRequest): DryRunOutcome {
  const checked = checkSubmission(req);
  if (!checked.ok) return { kind: checked.forbidden ? 'forbidden' : 'invalid', errors: checked.errors };
  const jobIdFrom = checked.spec.id !== undefined ? 'spec.id' : req.idempotencyKey ? 'idempotencyKey' : 'content';
  const jobId = submissionJobId(checked.spec, req.idempotencyKey, req.idScope);
  // What the job would run with: the spec as intake would record it (its defaults for this owner).
  const recorded = req.owner === undefined ? checked.spec : recordedSpec(checked.spec, req.owner, jobId, req.dataAccess);
  const spec = req.imageMpiVersion === undefined ? recorded : { ...recorded, mpi: { ...recorded.mpi, version: req.imageMpiVersion } };
  try {
    const document = explainJob({
      jobId,
      jobIdFrom,
      spec,
      settings: req.settings,
      policiesChecked: true,
      owner: req.owner,
      customNodeImages: req.containers?.customNodeImages,
    });
    return { kind: 'explained', document, spec };
  } catch (err) {
    // A spec the schema accepts but the command builders refuse would fail its job in the pipeline: say so now.
    if (err instanceof PlanningError) return { kind: 'invalid', errors: [{ path: '', message: `the job cannot be planned: ${err.message}` }] };
    throw err;
  }
}

/** Looks up which of these sources are missing (shared/adapters/storage/existence.ts with the app's identity). */
export type SourcesLookup = (checks: SourceCheck[]) => Promise<SourceMiss[]>;

/**
 * The dry run against this deployment: also the scheduling checks a submission makes before anything is written (the
 * queue exists, every parent job exists and is the caller's), by reads only; and, last and only when everything else
 * passed, "fail before paying": every blob and prefix the job reads exists (`sources`). A submission does not look
 * them up (intake's storage requests are counted, docs/intake.md); the pipeline does, before it creates the pool.
 */
export async function dryRunSubmission(
  store: Pick<JobStore, 'get'>,
  req: DryRunRequest & {
    owner: string;
    scheduling: SchedulingPolicy;
    pools: PoolGate;
    sources?: SourcesLookup;
    priceOf?: (vmSize: string, account?: string) => Promise<PriceQuote>;
    /** Where admission would place the job now (deployments with several Batch accounts; undefined: one account). */
    placement?: (jobId: string, spec: JobSpec) => Promise<Placement | undefined>;
    /** Reads the image's MPI evidence from its registry (shared/adapters/registry/evidence.ts), as the pipeline does. */
    imageEvidence?: (request: ImageEvidenceRequest) => Promise<ImageEvidenceAnswer>;
  },
): Promise<DryRunOutcome> {
  let out = dryRunJob({ ...req, caller: callerOf(req) });
  if (out.kind !== 'explained') return out;
  const pool = await checkPoolAccess(out.spec, req.pools);
  if (!pool.ok) return { kind: 'poolForbidden', errors: pool.errors };
  // The account's sizes, images and agents (docs/azure-facts.md): what Batch would refuse, refused before any pool.
  const facts = req.facts ? await req.facts() : undefined;
  const unavailable = await checkFacts(out.spec, facts);
  if (unavailable.length) return { kind: 'invalid', errors: unavailable };
  // Which account's facts the pool passed (with several accounts, the first that offers it): the explain names it.
  const offeredBy = facts && checkPoolFactsOnAny(facts, out.spec.pool).offeredBy;
  if (offeredBy && out.document.pool.action === 'create') out.document.pool.facts = factsSummary(offeredBy, out.spec.pool.vmSize, Date.now());
  const unschedulable = await checkScheduling(store, req.scheduling, out.document.jobId, out.spec, req.owner);
  if (unschedulable.length) return { kind: 'invalid', errors: unschedulable };
  const checks = req.sources ? sourceChecks(out.spec) : [];
  const misses = checks.length ? await req.sources!(checks) : [];
  if (misses.length) return { kind: 'invalid', errors: missesAsErrors(misses) };
  // The image's MPI evidence, read as the pipeline reads it before the pool: a missing image is refused here, and
  // the generation it names is explained as the job would run it.
  const wanted = req.imageEvidence ? imageEvidenceRequest(out.spec) : undefined;
  if (wanted) {
    const answer = await req.imageEvidence!(wanted);
    const vmSize = out.spec.pool.vmSize ?? out.document.pool.vmSize ?? '';
    const outcome = imageEvidenceOutcome(out.spec, wanted, answer, vmSize);
    if ('fail' in outcome) return { kind: 'invalid', errors: [{ path: IMAGE_FIELD, message: outcome.fail.slice(IMAGE_FIELD.length + 2) }] };
    if (outcome.version) {
      const again = dryRunJob({ ...req, caller: callerOf(req), imageMpiVersion: outcome.version });
      if (again.kind !== 'explained') return again;
      again.document.pool.facts = out.document.pool.facts;
      again.document.mpiTask.mpiVersion = null;
      if (again.document.mpiTask.preset && outcome.evidence) {
        again.document.mpiTask.preset.reason = presetChoice(out.spec.mpi.runtime, undefined, out.spec.mpi.fabric, vmSize, outcome.evidence).reason;
      }
      out = { ...again, spec: out.spec };
    }
    out.document.mpiTask.imageEvidence = {
      image: wanted.image,
      digest: answer.read ? answer.digest : null,
      evidence: outcome.evidence?.evidence ?? null,
      note: outcome.note,
    };
  }
  // Priced with this deployment's prices (the Retail Prices API through its cache, else the marked fallback).
  const doc = out.document;
  const placed = req.placement ? await req.placement(doc.jobId, out.spec) : undefined;
  if (placed) doc.scheduling.placement = { account: placed.account ?? null, reason: placed.reason, accounts: placed.verdicts };
  if (req.priceOf && doc.pool.action === 'create' && out.spec.pool.vmSize) {
    // In the price region of the account admission would place the job on (home when not placed).
    const price = await req.priceOf(out.spec.pool.vmSize, placed?.account);
    doc.cost = explainCost(out.spec, doc.pool.nodes, false, doc.retry.maxAttempts, doc.limits.mpiMaxWallClockSeconds ?? undefined, price);
  }
  return out;
}
