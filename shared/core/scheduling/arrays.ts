/**
 * Arrays (spec.array), pure: one spec becomes N jobs "<id>-<index>" whose ranks see $MPIJOB_ARRAY_INDEX and
 * $MPIJOB_ARRAY_PARAM; the array's own job row summarises them. The I/O (rows, orchestrations) is intake's and the
 * activities'.
 */
import { validateJobSpec, type SpecError } from '../spec/parse';
import type { JobSpec } from '../spec/schema';
import { ARRAY_ENV, rangeSize, type ArraySpec } from '../spec/sections/scheduling';
import type { JobRecord } from '../state/record';
import { isTerminal, JOB_STATES, nextStates, type JobState } from '../state/states';

/** The array's values in index order: its parameters, or the range's values. */
export function arrayValues(array: ArraySpec): (string | number)[] {
  if ('parameters' in array) return [...array.parameters];
  const { from, step } = array.range;
  return Array.from({ length: rangeSize(array.range) }, (_, i) => from + i * step);
}

export function childId(arrayId: string, index: number): string {
  return `${arrayId}-${index}`;
}

export function childIds(arrayId: string, spec: JobSpec): string[] {
  return spec.array ? arrayValues(spec.array).map((_, i) => childId(arrayId, i)) : [];
}

export interface ArrayChild {
  id: string;
  index: number;
  spec: JobSpec;
}

/**
 * The jobs of an array: the spec without `array`, with its own id and the array variables in mpi.env. Each child spec
 * is validated as any spec is (so a child that would break a limit, e.g. too many env entries, is refused at intake
 * with the path).
 */
export function expandArray(arrayId: string, spec: JobSpec): { ok: true; children: ArrayChild[] } | { ok: false; errors: SpecError[] } {
  if (!spec.array) return { ok: true, children: [] };
  const { array: _array, ...rest } = spec;
  const children: ArrayChild[] = [];
  for (const [index, value] of arrayValues(spec.array).entries()) {
    const id = childId(arrayId, index);
    const child = {
      ...rest,
      id,
      mpi: { ...rest.mpi, env: { ...rest.mpi.env, [ARRAY_ENV.index]: String(index), [ARRAY_ENV.param]: String(value) } },
      ...childOutputs(rest.outputs, arrayId, id),
    };
    const checked = validateJobSpec(child);
    if (!checked.ok) return { ok: false, errors: checked.errors.map((e) => ({ ...e, message: `in the array's job ${id}: ${e.message}` })) };
    children.push({ id, index, spec: checked.spec });
  }
  return { ok: true, children };
}

/**
 * A job's own outputs directory `…/jobs/<arrayId>` (intake's default, shared/adapters/intake/dataAreas.ts) becomes
 * `…/jobs/<childId>` in each of the array's jobs, so they do not overwrite each other's files; any other prefix is
 * kept as written.
 */
function childOutputs(outputs: JobSpec['outputs'], arrayId: string, childId: string): Pick<JobSpec, 'outputs'> | Record<string, never> {
  const own = `/jobs/${arrayId}`;
  if (!outputs?.prefix?.endsWith(own)) return {};
  return { outputs: { ...outputs, prefix: `${outputs.prefix.slice(0, -arrayId.length)}${childId}` } };
}

export interface ArraySummary {
  size: number;
  counts: Partial<Record<JobState, number>>;
  /** The state the array's row should show. */
  state: JobState;
}

/**
 * The array's state from its jobs': Queued while none has started, Running while some has and not all ended, and once
 * all ended Failed if any failed, else Cancelled if any was cancelled, else Succeeded. A job row that is missing counts
 * as Failed (it can no longer succeed).
 */
export function summarizeArray(children: readonly (JobRecord | undefined)[]): ArraySummary {
  const counts: Partial<Record<JobState, number>> = {};
  for (const c of children) {
    const s: JobState = c?.state ?? 'Failed';
    counts[s] = (counts[s] ?? 0) + 1;
  }
  const all = (pred: (s: JobState) => boolean) => JOB_STATES.filter(pred).reduce((n, s) => n + (counts[s] ?? 0), 0);
  const ended = all((s) => isTerminal(s));
  const waiting = all((s) => s === 'Submitted' || s === 'Queued');
  let state: JobState;
  if (ended === children.length) state = counts.Failed ? 'Failed' : counts.Cancelled ? 'Cancelled' : 'Succeeded';
  else if (waiting === children.length) state = 'Queued';
  else state = 'Running';
  return { size: children.length, counts, state };
}

/** The states an array's row passes through: it never provisions, pulls or stages itself. */
const ARRAY_ROW_STATES: readonly JobState[] = ['Queued', 'Running', 'CleaningUp'];

/**
 * The legal steps from `from` to `to` (shortest, through the states an array's row uses), for moving the array's row
 * through the state machine: Queued → Running → CleaningUp → Succeeded when its jobs have all succeeded, say. Empty
 * when `to` is not reachable or equal.
 */
export function pathTo(from: JobState, to: JobState): JobState[] {
  if (from === to) return [];
  const prev = new Map<JobState, JobState>();
  const queue: JobState[] = [from];
  while (queue.length) {
    const s = queue.shift()!;
    for (const n of nextStates(s)) {
      if (n === from || prev.has(n) || (n !== to && !ARRAY_ROW_STATES.includes(n))) continue;
      prev.set(n, s);
      if (n === to) {
        const path: JobState[] = [to];
        for (let p = s; p !== from; p = prev.get(p)!) path.unshift(p);
        return path;
      }
      queue.push(n);
    }
  }
  return [];
}
