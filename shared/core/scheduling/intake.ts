/**
 * What intake does for the scheduling section: refuse an unknown queue, unknown or foreign parents and cycles (400
 * with the path); write the dependents index before a job's run starts; and turn an array into its jobs (rows and
 * runs), its own row tracking them. Idempotent like the rest of intake: a repeated submission completes what an
 * interrupted one started and creates nothing twice.
 */
import type { SpecError } from '../spec/parse';
import type { JobSpec } from '../spec/schema';
import { DEFAULT_QUEUE } from '../spec/sections/scheduling';
import { specHash } from '../spec/identity';
import type { JobStore } from '../../adapters/state/jobStore';
import type { JobRecord } from '../state/record';
import type { DependentsStore } from '../../adapters/scheduling/dependentsStore';
import { checkDependencies } from './dependencies';
import { expandArray, type ArrayChild } from './arrays';

export interface SchedulingPolicy {
  /** The deployment's queue names (ADMISSION_QUEUES). */
  queues: readonly string[];
  dependents: Pick<DependentsStore, 'add'>;
}

/** The queue must be one of the deployment's; the parents must exist, be the owner's, and not close a cycle. */
export async function checkScheduling(
  store: Pick<JobStore, 'get'>,
  policy: SchedulingPolicy,
  jobId: string,
  spec: JobSpec,
  owner: string,
): Promise<SpecError[]> {
  const errors: SpecError[] = [];
  const queue = spec.queue ?? DEFAULT_QUEUE;
  if (!policy.queues.includes(queue)) errors.push({ path: 'queue', message: `no queue "${queue}" on this deployment (queues: ${policy.queues.join(', ')})` });
  if (spec.dependsOn?.length) errors.push(...(await checkDependencies(jobId, spec, owner, (id) => store.get(id))));
  return errors;
}

/** Records that `jobId` waits on each of its parents, so their end wakes it (before its run starts). */
export async function registerDependents(policy: SchedulingPolicy, jobId: string, spec: JobSpec): Promise<void> {
  await Promise.all((spec.dependsOn ?? []).map((d) => policy.dependents.add(d.job, jobId)));
}

export type ArrayPlan = { ok: true; children: ArrayChild[] } | { ok: false; errors: SpecError[] };

/**
 * The array's jobs, checked against the store: an id "<id>-<index>" that already belongs to another job (not this
 * array's, or with another spec) is refused at `id`.
 */
export async function planArray(store: Pick<JobStore, 'get'>, arrayId: string, spec: JobSpec): Promise<ArrayPlan> {
  const expanded = expandArray(arrayId, spec);
  if (!expanded.ok) return expanded;
  const clashes: string[] = [];
  for (let i = 0; i < expanded.children.length; i += 16) {
    const batch = expanded.children.slice(i, i + 16);
    const rows = await Promise.all(batch.map((c) => store.get(c.id)));
    rows.forEach((row, k) => {
      if (row && (row.array?.parent !== arrayId || row.specHash !== specHash(batch[k].spec))) clashes.push(batch[k].id);
    });
  }
  if (clashes.length) {
    return {
      ok: false,
      errors: [
        {
          path: 'id',
          message: `the array's job ids would be taken: ${clashes.slice(0, 5).join(', ')}${clashes.length > 5 ? ', …' : ''} already exist (an array's jobs are "<id>-<index>")`,
        },
      ],
    };
  }
  return expanded;
}

export interface ArrayStarter {
  ensureStarted(jobId: string, spec: JobSpec, justCreated: boolean): Promise<'started' | 'exists'>;
}

/**
 * Writes the array's jobs (each as a job of the array, in the array's owner's name), their dependents index, and
 * starts their runs; then moves the array's own row to Queued. An array row still in Submitted means an earlier
 * intake may have stopped half-way, so a repeat does it all again (every step is idempotent).
 */
export async function startArray(
  store: JobStore,
  starter: ArrayStarter,
  policy: SchedulingPolicy,
  array: JobRecord,
  children: ArrayChild[],
): Promise<'started' | 'exists'> {
  if (array.state !== 'Submitted') return 'exists';
  let started = false;
  for (let i = 0; i < children.length; i += 8) {
    await Promise.all(
      children.slice(i, i + 8).map(async (c) => {
        const { created, job } = await store.createIfAbsent({
          id: c.id,
          spec: c.spec,
          specHash: specHash(c.spec),
          owner: array.owner,
          ...(array.dataArea !== undefined ? { dataArea: array.dataArea } : {}),
          // The array's pool right (pool.poolId) is each of its jobs' own: the pipeline judges the pool again per job.
          ...(array.poolAccess ? { poolAccess: array.poolAccess } : {}),
          array: { parent: array.id, index: c.index, submittedAt: array.createdAt },
          reason: `job ${c.index} of array ${array.id}`,
        });
        await registerDependents(policy, c.id, c.spec);
        if (job.state === 'Submitted' && (await starter.ensureStarted(c.id, c.spec, created)) === 'started') started = true;
      }),
    );
  }
  await store.advance(array.id, 'Queued', `array of ${children.length} jobs: ${children[0]?.id} … ${children.at(-1)?.id}`, { stage: 'Queued' });
  return started ? 'started' : 'exists';
}
