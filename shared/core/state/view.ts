/**
 * What the job API answers, as zod schemas (the OpenAPI document is generated from them) and the
 * mapping from a stored JobRecord.
 */
import { z } from 'zod';
import { JobSpecSchema } from '../spec/schema';
import type { JobRecord } from './record';
import { JOB_STATES, TERMINAL_STATES, isTerminal } from './states';
import { POOL_ACCESS_BASES } from './record';
import { batchIdFor } from '../planning/jobPlan';
import { JobResultSchema } from '../contract/jobResult';
import { JobQueueSchema } from '../contract/queue';

export { JobQueueSchema };
export type { JobQueueView } from '../contract/queue';

const JsonSchemaValue: z.ZodType<unknown> = z.unknown().meta({ description: 'Free-form JSON written by the pipeline.' });

export const JobErrorSchema = z
  .object({
    code: z.string(),
    message: z.string(),
    details: JsonSchemaValue.optional(),
  })
  .meta({ title: 'JobError' });

export const JobLinksSchema = z
  .object({
    self: z.string().meta({ description: 'GET this URL for the job status.' }),
    cancel: z.string().meta({ description: 'DELETE this URL to cancel the job.' }),
    events: z.string().optional().meta({ description: 'The job timeline (when the API serves it).' }),
  })
  .meta({ title: 'JobLinks' });

export const ArrayMembershipSchema = z
  .object({
    parent: z.string().meta({ description: "The array's job id." }),
    index: z.number().int(),
    submittedAt: z.string(),
  })
  .meta({ title: 'ArrayMembership' });

/** The job's pool and whose it is (pools have owners: docs/security.md). */
export const JobPoolViewSchema = z
  .object({
    poolId: z.string(),
    createdByJob: z.boolean().meta({
      description: "true: the job creates the pool (its owner is the job's owner, recorded in the pool's metadata); false: pool.poolId, an existing pool.",
    }),
    owner: z
      .string()
      .optional()
      .meta({ description: "The pool's owner, for a pool the job creates: the job's owner. Only that owner's jobs (and admins') may reuse it." }),
    kept: z.boolean().optional().meta({
      description:
        'Once the job ended, for a pool it created: whether cleanup left the pool (cleanup.deletePool never, or onSuccess and the job did not succeed).',
    }),
    access: z.enum(POOL_ACCESS_BASES).optional().meta({
      description: 'For pool.poolId: why the submitter may use it, as decided at submission (owner, creatorJob, shared, admin; absent: no such pool then).',
    }),
  })
  .meta({ title: 'JobPool' });

export const JobViewSchema = z
  .object({
    id: z.string(),
    name: z.string(),
    owner: z.string().meta({ description: 'Who submitted the job: "<tenant id>/<object id>" of an Entra ID principal, "operator", "anonymous" or "queue".' }),
    ownerName: z.string().optional().meta({ description: "The owner's display name when it submitted." }),
    tags: z.record(z.string(), z.string()),
    state: z.enum(JOB_STATES),
    stage: z.string().meta({ description: 'Human-readable step inside the state, e.g. "pulled 12/40".' }),
    progress: JsonSchemaValue.nullable(),
    specHash: z.string().meta({ description: 'sha256 of the canonical JSON of the normalized spec.' }),
    createdAt: z.string(),
    updatedAt: z.string(),
    batchPoolId: z.string().optional(),
    batchJobId: z.string().optional(),
    batchAccount: z.string().optional().meta({ description: 'The Batch account the job was placed on (deployments with several BATCH_ACCOUNTS).' }),
    pool: JobPoolViewSchema.optional(),
    result: JobResultSchema.optional().meta({ description: 'What the pipeline recorded when the job ended.' }),
    error: JobErrorSchema.optional(),
    cancelRequestedAt: z.string().optional(),
    array: ArrayMembershipSchema.optional().meta({ description: 'For a job of an array: which array and its index.' }),
    rerunOf: z
      .string()
      .optional()
      .meta({ description: 'The job this one reruns (POST /api/jobs/{id}/rerun); that job\'s timeline notes "rerun as <this id>".' }),
    queue: JobQueueSchema.optional().meta({ description: 'While the job is Queued (single-job answers only): its place and why it waits.' }),
    spec: JobSpecSchema.optional().meta({ description: 'The normalized spec (single-job answers only).' }),
    submitted: JsonSchemaValue.optional().meta({
      description: 'For a job without a valid spec (a rejected queue submission): the document as it was submitted (single-job answers only).',
    }),
    links: JobLinksSchema,
  })
  .meta({ title: 'JobView' });
export type JobView = z.infer<typeof JobViewSchema>;

export const SubmitJobResponseSchema = z
  .object({
    job: JobViewSchema,
    statusUrl: z.string(),
    cancelUrl: z.string(),
  })
  .meta({ title: 'SubmitJobResponse', description: '202 for a new job, 200 for an idempotent repeat of an existing one.' });
export type SubmitJobResponse = z.infer<typeof SubmitJobResponseSchema>;

export const JobConflictResponseSchema = z
  .object({
    error: z.literal('JobIdConflict'),
    message: z.string(),
    jobId: z.string(),
    differingPaths: z.array(z.string()).meta({ description: 'Spec paths where the submission differs from the existing job (diffSpecs).' }),
  })
  .meta({ title: 'JobConflictResponse' });
export type JobConflictResponse = z.infer<typeof JobConflictResponseSchema>;

export const JobListResponseSchema = z
  .object({
    jobs: z.array(JobViewSchema),
    continuationToken: z.string().optional().meta({ description: 'Pass as ?continuationToken= to get the next page.' }),
    unreadable: z.number().optional().meta({ description: 'Rows of this page that could not be read (damaged) and were left out; the log names them.' }),
  })
  .meta({ title: 'JobListResponse' });
export type JobListResponse = z.infer<typeof JobListResponseSchema>;

export const CancelJobResponseSchema = z
  .object({
    job: JobViewSchema,
    cancelRequested: z.boolean().meta({ description: 'false when the job had already finished: nothing to cancel.' }),
    pipeline: z.enum(['notified', 'gone']).optional().meta({
      description:
        'notified: the running pipeline got the cancel and cleans up; gone: its orchestration had already ended, the operations sweep cleans up at its next run.',
    }),
    message: z.string().optional(),
  })
  .meta({ title: 'CancelJobResponse' });
export type CancelJobResponse = z.infer<typeof CancelJobResponseSchema>;

export const JobFinishingResponseSchema = z
  .object({
    error: z.literal('JobFinishing'),
    message: z.string(),
    job: JobViewSchema,
    cancelRequested: z.literal(false),
    endsAs: z
      .enum(TERMINAL_STATES)
      .optional()
      .meta({ description: 'The state cleanup ends the job in, decided when cleanup began (absent when the pipeline did not record it).' }),
  })
  .meta({ title: 'JobFinishingResponse' });

const CoresByFamily = z.record(z.string(), z.number()).meta({ description: 'Reserved dedicated cores per VM quota family.' });

export const QueuesResponseSchema = z
  .object({
    queues: z.array(
      z.object({
        name: z.string(),
        priority: z.number(),
        maxNodes: z.number().optional(),
        maxCores: z.number().optional(),
        waiting: z.number().int().meta({ description: 'Jobs waiting for admission (depth).' }),
        running: z.number().int().meta({ description: 'Jobs holding a reservation: admitted, running or cleaning up.' }),
        reservedNodes: z.number().int(),
        reservedCores: CoresByFamily,
      }),
    ),
    totals: z.object({
      waiting: z.number().int(),
      running: z.number().int(),
      pools: z.number().int(),
      nodes: z.number().int(),
      cores: z.number().int(),
      coresByFamily: CoresByFamily,
    }),
    accounts: z
      .array(
        z.object({
          name: z.string(),
          region: z.string().optional(),
          coreQuota: z.object({ total: z.number().optional(), families: z.record(z.string(), z.number()) }).meta({
            description:
              "The account's dedicated core quota as placement weighs it (its live quota, lowered by its coreQuota in BATCH_ACCOUNTS or ADMISSION_CORE_QUOTA).",
          }),
          lowPriorityCores: z.number().optional(),
          running: z.number().int().meta({ description: 'Jobs placed on this account holding a reservation.' }),
          reservedNodes: z.number().int(),
          reservedCores: CoresByFamily,
        }),
      )
      .optional()
      .meta({ description: 'Several Batch accounts (BATCH_ACCOUNTS) only: each account, home first, with its quota and what our jobs hold on it.' }),
    limits: z.object({
      coreQuota: z.object({ total: z.number().optional(), families: z.record(z.string(), z.number()) }),
      maxPools: z.number().optional(),
      maxNodes: z.number().optional(),
      ownerMaxNodes: z.number().optional(),
      ownerMaxCores: z.number().optional(),
      backfillLimit: z.number(),
    }),
  })
  .meta({ title: 'QueuesResponse', description: 'The admission queues: depth, running jobs and reserved capacity, per queue and in total.' });
export type QueuesResponse = z.infer<typeof QueuesResponseSchema>;

export const ProblemResponseSchema = z
  .object({
    error: z.string(),
    message: z.string(),
  })
  .meta({ title: 'ProblemResponse', description: 'Any other error (404, 415, 500, …).' });
export type ProblemResponse = z.infer<typeof ProblemResponseSchema>;

export const HealthResponseSchema = z
  .object({
    status: z.enum(['ok', 'degraded', 'unhealthy']),
    version: z.string().optional(),
    checks: z.record(z.string(), z.object({ ok: z.boolean(), message: z.string().optional() })).optional(),
  })
  .meta({ title: 'HealthResponse' });
export type HealthResponse = z.infer<typeof HealthResponseSchema>;

export interface JobViewOptions {
  /** Base of the API, e.g. "https://app.azurewebsites.net" or "http://127.0.0.1:7071" (no trailing slash needed). */
  baseUrl?: string;
  includeSpec?: boolean;
}

export function jobUrl(id: string, baseUrl = ''): string {
  return `${baseUrl.replace(/\/+$/, '')}/api/jobs/${encodeURIComponent(id)}`;
}

/** The job's pool and its owner, from the spec: none for an array (its jobs have theirs) or a row without a spec. */
function poolView(job: JobRecord): JobView['pool'] {
  const spec = job.spec;
  if (!spec || spec.array) return undefined;
  if (spec.pool.poolId !== undefined) return { poolId: spec.pool.poolId, createdByJob: false, ...(job.poolAccess ? { access: job.poolAccess } : {}) };
  const deletePool = spec.cleanup.deletePool;
  const kept = isTerminal(job.state) ? deletePool === 'never' || (deletePool === 'onSuccess' && job.state !== 'Succeeded') : undefined;
  return { poolId: job.batchPoolId ?? batchIdFor('hpc', job.id), createdByJob: true, owner: job.owner, ...(kept !== undefined ? { kept } : {}) };
}

export function toJobView(job: JobRecord, options: JobViewOptions = {}): JobView {
  const self = jobUrl(job.id, options.baseUrl);
  const view: JobView = {
    id: job.id,
    name: job.name,
    owner: job.owner,
    ...(job.ownerName !== undefined ? { ownerName: job.ownerName } : {}),
    tags: job.tags,
    state: job.state,
    stage: job.stage,
    progress: job.progress,
    specHash: job.specHash,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    links: { self, cancel: self },
  };
  if (job.batchPoolId !== undefined) view.batchPoolId = job.batchPoolId;
  if (job.batchJobId !== undefined) view.batchJobId = job.batchJobId;
  if (job.batchAccount !== undefined) view.batchAccount = job.batchAccount;
  const pool = poolView(job);
  if (pool) view.pool = pool;
  if (job.result !== undefined) view.result = job.result;
  if (job.error !== undefined) view.error = job.error;
  if (job.cancelRequestedAt !== undefined) view.cancelRequestedAt = job.cancelRequestedAt;
  if (job.array !== undefined) view.array = job.array;
  if (job.rerunOf !== undefined) view.rerunOf = job.rerunOf;
  if (options.includeSpec && job.spec) view.spec = job.spec;
  if (options.includeSpec && job.submitted !== undefined) view.submitted = job.submitted;
  return view;
}
