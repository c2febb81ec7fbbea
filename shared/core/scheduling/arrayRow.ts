/**
 * The array's own job row: its summary state and counts, recomputed from its jobs' rows whenever one of them ends
 * (and by the sweep). Every write goes through the store's state machine; the counts never go backwards, so two
 * jobs ending at once cannot leave an older summary on the row.
 */
import type { JobStore } from '../../adapters/state/jobStore';
import type { JobRecord, JsonValue } from '../state/record';
import { isPast, isTerminal } from '../state/states';
import { childIds, pathTo, summarizeArray, type ArraySummary } from './arrays';

function endedOf(summary: Pick<ArraySummary, 'counts'> | undefined): number {
  const c = summary?.counts ?? {};
  return (c.Succeeded ?? 0) + (c.Failed ?? 0) + (c.Cancelled ?? 0);
}

function recorded(job: JobRecord): ArraySummary | undefined {
  const p = job.progress as { array?: ArraySummary } | null;
  return p && typeof p === 'object' && p.array && typeof p.array === 'object' ? p.array : undefined;
}

function describe(s: ArraySummary): string {
  return Object.entries(s.counts)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
}

/** Reads the array's jobs and moves its row to their summary. Returns the row as written (undefined: not an array). */
export async function refreshArrayRow(store: JobStore, arrayId: string): Promise<JobRecord | undefined> {
  const row = await store.get(arrayId);
  if (!row?.spec?.array) return row;
  const ids = childIds(arrayId, row.spec);
  const children: (JobRecord | undefined)[] = [];
  for (let i = 0; i < ids.length; i += 16) children.push(...(await Promise.all(ids.slice(i, i + 16).map((id) => store.get(id)))));
  const summary = summarizeArray(children);
  await store.update(arrayId, (j) => (endedOf(recorded(j)) > endedOf(summary) ? {} : { progress: { array: summary } as unknown as JsonValue }));
  let current = row;
  for (const step of pathTo(row.state, summary.state)) {
    const failed = children.filter((c) => c?.state === 'Failed').map((c) => c!.id);
    const reason = isTerminal(step) ? `all ${summary.size} jobs of the array ended: ${describe(summary)}` : `jobs of the array: ${describe(summary)}`;
    const patch =
      step === 'Failed'
        ? {
            stage: step,
            error: {
              code: 'ArrayJobFailed',
              message: `${failed.length} of ${summary.size} jobs failed: ${failed.slice(0, 10).join(', ')}${failed.length > 10 ? ', …' : ''}`,
            },
          }
        : step === 'Cancelled'
          ? { stage: step, error: { code: 'Cancelled', message: reason } }
          : { stage: step };
    const moved = await store.advance(arrayId, step, reason, patch);
    current = moved.job;
    if (moved.stale || isPast(current.state, summary.state)) break;
  }
  return current;
}
