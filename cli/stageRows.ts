/**
 * The per-stage rows `hpcjob watch` draws as progress bars, from a job view. Pure, so the mapping from the
 * orchestration's custom status is unit-tested without a terminal.
 */
import type { JobView } from './apiClient';
import { isTerminal } from '../shared/core/state/states';

export interface StageRow {
  key: 'nodes' | 'images' | 'staged' | 'onNodes' | 'mpi' | 'outputs' | 'cleanup';
  label: string;
  done: number;
  total: number;
  /** Free text after the bar: "running", "pool deleted", "skipped". */
  note: string;
}

export function stageRows(view: JobView): StageRow[] {
  const p = view.progress?.progress ?? {};
  const finished = isTerminal(view.state);
  const counter = (key: StageRow['key'], label: string, c: { done: number; total: number } | undefined): StageRow =>
    c
      ? { key, label, done: c.done, total: c.total, note: c.total === 0 ? 'nothing to do' : '' }
      : { key, label, done: 0, total: 1, note: finished ? 'skipped' : 'waiting' };
  const mpiState = p.mpi?.state;
  const mpiDone = mpiState === 'completed' ? 1 : 0;
  const cleanupDone = p.cleanup?.done ?? [];
  // The number of cleanup steps depends on what the job created; it is known complete only once the job is terminal.
  const cleanupTotal = finished ? Math.max(1, cleanupDone.length) : cleanupDone.length + 1;
  return [
    counter('nodes', 'nodes ready', p.nodesReady),
    counter('images', 'images pulled', p.imagesPulled),
    counter('staged', 'shards staged', p.shardsStaged),
    counter('onNodes', 'shards on nodes', p.shardsDownloaded),
    { key: 'mpi', label: 'MPI running', done: mpiDone, total: 1, note: mpiState ?? (finished ? 'skipped' : 'waiting') },
    // Only jobs whose nodes upload outputs after the MPI task have this row.
    ...(p.outputsUploaded ? [counter('outputs', 'outputs uploaded', p.outputsUploaded)] : []),
    {
      key: 'cleanup',
      label: 'cleanup',
      done: finished ? cleanupTotal : cleanupDone.length,
      total: cleanupTotal,
      note: cleanupDone.join(', ') || (finished ? 'done' : view.state === 'CleaningUp' ? 'running' : 'waiting'),
    },
  ];
}
