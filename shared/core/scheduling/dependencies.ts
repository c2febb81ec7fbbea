/**
 * Job dependencies (spec.dependsOn), pure: whether a waiting job's parents have reached their conditions, and the
 * intake checks (unknown parents, cycles). The I/O (reading parent rows, the dependents index) is the caller's.
 */
import type { SpecError } from '../spec/parse';
import type { JobSpec } from '../spec/schema';
import type { JobRecord } from '../state/record';
import { isTerminal } from '../state/states';

export type DependencyStatus =
  | { state: 'met' }
  | { state: 'pending'; pending: string[] }
  /** A parent can no longer reach its condition: the job is cancelled with the reason. */
  | { state: 'impossible'; reason: string };

/** Where the dependencies stand, from the parents' rows (undefined: the row is gone). */
export function dependencyStatus(spec: JobSpec, parents: ReadonlyMap<string, JobRecord | undefined>): DependencyStatus {
  const pending: string[] = [];
  for (const dep of spec.dependsOn ?? []) {
    const parent = parents.get(dep.job);
    if (!parent) return { state: 'impossible', reason: `dependency ${dep.job} no longer exists` };
    if (!isTerminal(parent.state)) {
      pending.push(dep.job);
      continue;
    }
    if (dep.condition === 'succeeded' && parent.state !== 'Succeeded') {
      // The parent's first line (its error may go on with a stderr tail, shared/core/planning/failureExplain.ts).
      const why = parent.error?.message ? `: ${parent.error.message.split('\n')[0]}` : '';
      return {
        state: 'impossible',
        reason: `dependency ${dep.job} ended ${parent.state}${why.length > 300 ? `${why.slice(0, 300)}…` : why} (this job needed it to succeed)`,
      };
    }
  }
  return pending.length ? { state: 'pending', pending } : { state: 'met' };
}

/** How many jobs the cycle check reads at most: a deeper graph is refused rather than walked without end. */
export const MAX_DEPENDENCY_WALK = 1000;

/**
 * Intake: every parent must exist and belong to the same owner (another owner's job is reported as unknown, so
 * nobody learns which ids exist), and the new job must not be its own ancestor. Reads rows through `lookup`.
 */
export async function checkDependencies(
  jobId: string,
  spec: JobSpec,
  owner: string,
  lookup: (id: string) => Promise<JobRecord | undefined>,
): Promise<SpecError[]> {
  const errors: SpecError[] = [];
  const deps = spec.dependsOn ?? [];
  const parents = await Promise.all(deps.map((d) => lookup(d.job)));
  deps.forEach((d, i) => {
    const p = parents[i];
    if (!p || p.owner !== owner)
      errors.push({ path: `dependsOn[${i}].job`, message: `no job ${d.job}: a job can only depend on existing jobs of its own owner` });
  });
  if (errors.length) return errors;
  // Walk the ancestors: finding the new job's id among them would close a cycle.
  const seen = new Set<string>();
  const frontier = deps.map((d, i) => ({ id: d.job, root: i }));
  const rows = new Map<string, JobRecord | undefined>(deps.map((d, i) => [d.job, parents[i]]));
  while (frontier.length) {
    const { id, root } = frontier.shift()!;
    if (id === jobId) {
      errors.push({ path: `dependsOn[${root}].job`, message: `job ${deps[root].job} depends (through its own dependencies) on ${jobId}: a cycle` });
      continue;
    }
    if (seen.has(id)) continue;
    seen.add(id);
    if (seen.size > MAX_DEPENDENCY_WALK) {
      errors.push({
        path: 'dependsOn',
        message: `the jobs this job depends on have more than ${MAX_DEPENDENCY_WALK} ancestors; refusing a dependency graph this deep`,
      });
      break;
    }
    const row = rows.has(id) ? rows.get(id) : await lookup(id);
    rows.set(id, row);
    for (const up of row?.spec?.dependsOn ?? []) frontier.push({ id: up.job, root });
  }
  return errors;
}
