/**
 * The scheduling section of the job spec: which admission queue the job waits in and at what priority, the jobs it
 * waits for (dependsOn), and arrays (one spec run as N jobs). Every field is optional with no schema default, so a
 * spec that does not use them keeps the hash (and the idempotency) it had before the section existed; the defaults
 * (queue "default", priority 0, no dependencies) are applied where they are read (shared/adapters/scheduling).
 * See docs/scheduling.md.
 */
import { z } from 'zod';
import { JOB_ID_RE, SINGLE_LINE_TEXT_RE, SINGLE_LINE_TEXT_RULE } from '../patterns';

export const SCHEDULING_LIMITS = {
  minPriority: -1000,
  maxPriority: 1000,
  maxDependencies: 20,
  maxArraySize: 500,
  maxArrayParamLength: 1024,
} as const;

/** The queue a job waits in when its spec names none. */
export const DEFAULT_QUEUE = 'default';
/** A queue name: what the deployment's ADMISSION_QUEUES may declare and a spec may name. */
export const QUEUE_NAME_RE = /^[a-z0-9][a-z0-9-]{0,31}$/;
/** Environment variables the pipeline sets on every rank of an array job's children. */
export const ARRAY_ENV = { index: 'MPIJOB_ARRAY_INDEX', param: 'MPIJOB_ARRAY_PARAM' } as const;

const int = (what: string) =>
  z.number({ error: (iss) => (iss.code === 'invalid_type' ? `must be a number: ${what}` : undefined) }).int({ error: `must be a whole number: ${what}` });

export const DependencySchema = z
  .strictObject({
    job: z
      .string({ error: 'must be a string: the id of an existing job' })
      .regex(JOB_ID_RE, { error: 'must be a job id (1–64 lowercase letters, digits and hyphens)' })
      .meta({ description: 'The id of an existing job of the same owner (an array job: the array as a whole).' }),
    condition: z.enum(['succeeded', 'finished'], { error: 'must be "succeeded" or "finished"' }).default('succeeded').meta({
      description:
        '"succeeded": run only if the parent succeeded (a parent that failed or was cancelled cancels this job); "finished": run once the parent ended, however it ended.',
    }),
  })
  .meta({ description: 'A job this job waits for.' });

const arrayParam = z.union(
  [
    z
      .string()
      .max(SCHEDULING_LIMITS.maxArrayParamLength, { error: `must be at most ${SCHEDULING_LIMITS.maxArrayParamLength} characters` })
      .regex(SINGLE_LINE_TEXT_RE, { error: SINGLE_LINE_TEXT_RULE }),
    z.number().refine(Number.isFinite, { error: 'must be a finite number' }),
  ],
  { error: 'must be a string or a number' },
);

export const ArrayRangeSchema = z
  .strictObject({
    from: int('the first value').min(-1_000_000_000).max(1_000_000_000),
    to: int('the last value (inclusive)').min(-1_000_000_000).max(1_000_000_000),
    step: int('the step')
      .min(-1_000_000_000)
      .max(1_000_000_000)
      .refine((v) => v !== 0, { error: 'must not be 0' })
      .default(1),
  })
  .superRefine((r, ctx) => {
    const n = rangeSize(r);
    if (n < 1) ctx.addIssue({ code: 'custom', path: ['to'], message: `the range from ${r.from} to ${r.to} by ${r.step} is empty` });
    else if (n > SCHEDULING_LIMITS.maxArraySize)
      ctx.addIssue({ code: 'custom', path: ['to'], message: `the range has ${n} values; an array runs at most ${SCHEDULING_LIMITS.maxArraySize} jobs` });
  })
  .meta({ description: 'The values from, from+step, … up to to (inclusive).' });

export const ArraySchema = z
  .union(
    [
      z.strictObject({
        parameters: z
          .array(arrayParam, { error: 'must be a list of strings or numbers' })
          .min(1, { error: 'must list at least one parameter' })
          .max(SCHEDULING_LIMITS.maxArraySize, { error: `must list at most ${SCHEDULING_LIMITS.maxArraySize} parameters` })
          .meta({ description: `One job per item; the item is $${ARRAY_ENV.param} on every rank.` }),
      }),
      z.strictObject({ range: ArrayRangeSchema }),
    ],
    { error: 'must be { parameters: [...] } or { range: { from, to, step } }' },
  )
  .meta({
    description: `Run this spec as N jobs with ids "<id>-<index>" (index 0…N-1), each with $${ARRAY_ENV.index} and $${ARRAY_ENV.param} in the ranks' environment. The job with the spec's own id tracks them (summary state); cancelling it cancels them.`,
  });

/** The fields this section adds to the job spec (spread into JobSpecSchema). */
export const SchedulingFields = {
  queue: z
    .string({ error: 'must be a string: a queue name' })
    .regex(QUEUE_NAME_RE, { error: 'must be a queue name (1–32 lowercase letters, digits and hyphens)' })
    .optional()
    .meta({ description: `Admission queue to wait in: one of the deployment's queues (ADMISSION_QUEUES). Default "${DEFAULT_QUEUE}".` }),
  priority: int('a priority')
    .min(SCHEDULING_LIMITS.minPriority)
    .max(SCHEDULING_LIMITS.maxPriority)
    .optional()
    .meta({
      description: `Order inside the queue: higher first, first come first served among equals (${SCHEDULING_LIMITS.minPriority}…${SCHEDULING_LIMITS.maxPriority}). Default 0.`,
    }),
  dependsOn: z
    .array(DependencySchema, { error: 'must be a list of { job, condition }' })
    .max(SCHEDULING_LIMITS.maxDependencies, { error: `must list at most ${SCHEDULING_LIMITS.maxDependencies} jobs` })
    .optional()
    .meta({
      description: 'Jobs that must reach their condition before this one is admitted (it waits in Queued meanwhile). Unknown jobs and cycles are refused.',
    }),
  array: ArraySchema.optional(),
};

export type ArraySpec = z.output<typeof ArraySchema>;
export type DependencySpec = z.output<typeof DependencySchema>;

export function rangeSize(r: { from: number; to: number; step: number }): number {
  if (r.step === 0) return 0;
  return Math.max(0, Math.floor((r.to - r.from) / r.step) + 1);
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Largest index digits an array of `n` jobs appends to its id ("-" + index). */
function suffixLength(n: number): number {
  return 1 + String(Math.max(0, n - 1)).length;
}

function arraySizeOf(array: unknown): number | undefined {
  if (!isObj(array)) return undefined;
  if (Array.isArray(array.parameters)) return array.parameters.length;
  const r = array.range;
  if (isObj(r) && Number.isInteger(r.from) && Number.isInteger(r.to))
    return rangeSize({ from: r.from as number, to: r.to as number, step: Number.isInteger(r.step) ? (r.step as number) : 1 });
  return undefined;
}

/**
 * Rules between this section and the rest of the spec, read from the raw input (crossField.ts runs them beside the
 * schema): a job cannot depend on itself or twice on one job, an array's child ids must still be job ids, and an
 * array's children get the array variables, which the spec must not set itself.
 */
export function schedulingIssues(raw: Obj): { path: (string | number)[]; message: string }[] {
  const issues: { path: (string | number)[]; message: string }[] = [];
  const id = typeof raw.id === 'string' ? raw.id : undefined;
  if (Array.isArray(raw.dependsOn)) {
    const seen = new Set<string>();
    raw.dependsOn.forEach((d, i) => {
      const job = isObj(d) && typeof d.job === 'string' ? d.job : undefined;
      if (job === undefined) return;
      if (id !== undefined && job === id) issues.push({ path: ['dependsOn', i, 'job'], message: 'a job cannot depend on itself (a cycle)' });
      else if (seen.has(job)) issues.push({ path: ['dependsOn', i, 'job'], message: `job ${job} is listed twice` });
      seen.add(job);
    });
  }
  const n = arraySizeOf(raw.array);
  if (n !== undefined && n > 0) {
    if (id !== undefined && id.length + suffixLength(n) > 64) {
      issues.push({
        path: ['id'],
        message: `is too long for an array of ${n}: the jobs' ids "${id}-<index>" must stay within 64 characters (at most ${64 - suffixLength(n)} here)`,
      });
    }
    const env = isObj(raw.mpi) && isObj(raw.mpi.env) ? raw.mpi.env : {};
    for (const name of Object.values(ARRAY_ENV)) {
      if (name in env) issues.push({ path: ['mpi', 'env', name], message: `is set by the pipeline for every job of an array; the spec cannot set it` });
    }
  }
  return issues;
}
