/**
 * More of the job page's view model, pure (no DOM, no fetch; unit-tested in tests/ui/jobDetail.test.ts): the live log
 * tail, the outputs list, short node labels shared by every table of the page, the stages that do not apply to a job
 * and the job list's order. Kept apart from model.ts so each piece stays small.
 */
import { formatDuration, isTerminal, progressBars, shortNodeLabels, stageSpans, type JobView, type ProgressBar } from './model';

/** The newest job first (the API lists by id): by creation time, then by id so equal times keep one order. */
export function newestFirst<T extends Pick<JobView, 'id' | 'createdAt'>>(jobs: readonly T[]): T[] {
  return [...jobs].sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || a.id.localeCompare(b.id));
}

/** The spec parts the page reads to know which stages apply (the single-job answer carries the spec). */
export interface SpecShape {
  pool?: { nodes?: number; vmSize?: string };
  container?: { runtime?: string; images?: unknown[] };
  data?: { inputs?: unknown[] };
  outputs?: unknown;
}

/**
 * Stages the pipeline passes through without work for this job, so the page leaves them out: image pulling for a job
 * without images (native), data staging for a job without inputs. Unknown without the spec: nothing is hidden then.
 */
export function stagesNotApplying(spec: SpecShape | undefined): Set<string> {
  const out = new Set<string>();
  if (!spec) return out;
  if (spec.container && (spec.container.runtime === 'none' || (spec.container.images?.length ?? 0) === 0)) out.add('PullingImages');
  if (spec.data && (spec.data.inputs?.length ?? 0) === 0) out.add('StagingData');
  return out;
}

/** Which progress bars belong to a stage (a bar of a stage that does not apply is left out). */
export const BAR_STAGE: Readonly<Record<string, string>> = {
  'Shards staged': 'StagingData',
  'Shards on nodes': 'StagingData',
  'Images pulled': 'PullingImages',
};

/**
 * The progress bars worth showing: none for a stage that does not apply (a native job's "images pulled 4/4") nor for
 * a counter with nothing to count (0/0 is not a full bar). While images are pulled, the bar says what moves inside the
 * stage before the first node holds every image: how many nodes pull now and how long the stage has lasted.
 */
export function visibleBars(job: Pick<JobView, 'progress' | 'timeline' | 'state'> & { spec?: SpecShape }, now: number): (ProgressBar & { detail?: string })[] {
  const skip = stagesNotApplying(job.spec);
  return progressBars(job.progress)
    .filter((b) => b.total > 0 && !skip.has(BAR_STAGE[b.label] ?? ''))
    .map((b) => {
      if (b.label !== 'Images pulled' || b.done >= b.total || job.state !== 'PullingImages') return b;
      const pulling = Object.values(job.progress?.nodes ?? {}).filter((s) => s === 'pulling').length;
      const span = stageSpans(job.timeline, now).find((s) => s.current && s.state === 'PullingImages');
      const parts = [`${pulling} node(s) pulling now`, span ? `${formatDuration(span.durationMs)} in this stage` : undefined].filter(Boolean);
      return { ...b, detail: parts.join(' · ') };
    });
}

/** Every node id the job page shows anywhere (grid, exit codes, logs, preflight), for one set of short labels. */
export function jobNodeIds(job: Pick<JobView, 'progress' | 'result'>): string[] {
  const ids = new Set<string>(Object.keys(job.progress?.nodes ?? {}));
  const r = job.result;
  for (const l of r?.logs ?? []) ids.add(l.node);
  for (const s of r?.mpi?.subtasks ?? []) if (s.nodeId) ids.add(s.nodeId);
  for (const id of Object.keys(r?.preflight?.nodes ?? {})) ids.add(id);
  for (const id of Object.keys(job.progress?.progress?.preflight?.nodes ?? {})) ids.add(id);
  return [...ids];
}

/** Short labels for every node of the job: the same label for a node in every table. */
export function jobNodeLabels(job: Pick<JobView, 'progress' | 'result'>): Record<string, string> {
  return shortNodeLabels(jobNodeIds(job));
}

// ---- live log tail -------------------------------------------------------------------------------------------------

export type Stream = 'stdout' | 'stderr';

/** What GET /api/jobs/{id}/logs answers (functions/jobLogs.ts JobLogsResponse), the parts the tail reads. */
export interface LogAnswer {
  node: string;
  stream: Stream;
  source: 'live' | 'recorded' | 'none';
  size: number;
  start: number;
  content: string;
  nodes?: string[];
  message?: string;
}

export interface LogTail {
  node: string;
  stream: Stream;
  /** Bytes of the file read so far: the next read asks `since` this offset. */
  offset: number;
  /** The last lines read (at most TAIL_LINES). */
  lines: string[];
  /** An unfinished last line, completed by the next read. */
  partial: string;
  message?: string;
}

export const TAIL_LINES = 40;

export function emptyTail(stream: Stream, node = ''): LogTail {
  return { node, stream, offset: 0, lines: [], partial: '' };
}

/**
 * Adds one answer of the logs route (read with `since = tail.offset`) to the tail, keeping the last TAIL_LINES lines.
 * A file that shrank or an answer from another node starts the tail over; an answer that skipped bytes (the route
 * answers at most 1 MB, the newest) drops the unfinished line it can no longer complete.
 */
export function appendTail(tail: LogTail, answer: LogAnswer, max = TAIL_LINES): LogTail {
  if (answer.source === 'none') return { ...tail, message: answer.message };
  let base = tail;
  if ((tail.node && answer.node !== tail.node) || answer.size < tail.offset) base = emptyTail(tail.stream, answer.node);
  const gap = answer.start > base.offset;
  const text = (gap ? '' : base.partial) + answer.content;
  const parts = text.split('\n');
  const partial = parts.pop() ?? '';
  const lines = [...base.lines, ...(gap && base.lines.length ? ['…'] : []), ...parts].slice(-max);
  return {
    node: answer.node,
    stream: tail.stream,
    offset: Math.max(base.offset, answer.start + byteLength(answer.content)),
    lines,
    partial,
    message: answer.message,
  };
}

/** The tail as text: its lines and the unfinished one. */
export function tailText(tail: LogTail): string {
  return [...tail.lines, ...(tail.partial ? [tail.partial] : [])].join('\n');
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}

/** The live tail is read while the MPI task runs; it stops when the task or the job ends. */
export function shouldTail(job: Pick<JobView, 'state' | 'progress'>): boolean {
  return !isTerminal(job.state) && job.state === 'Running' && job.progress?.progress?.mpi?.state === 'running';
}

// ---- outputs -------------------------------------------------------------------------------------------------------

/** What GET /api/jobs/{id}/outputs answers (shared/core/contract/outputs.ts), the parts the page reads. */
export interface OutputsAnswer {
  jobId: string;
  prefix: string;
  files: { name: string; size: number; lastModified?: string; url: string }[];
  expiresAt: string;
  continuationToken?: string;
  errors?: string[];
}

export interface OutputRow {
  name: string;
  size: string;
  url: string;
  /** The name a download is saved under (the file's own name). */
  saveAs: string;
}

/** "0 B", "512 B", "1.5 KiB", "12.0 MiB". */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '–';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${v.toFixed(1)} ${units[i]}`;
}

/** The outputs in name order (logs/…, nodes/<id>/…, workdir/…), with sizes for people. */
export function outputRows(answer: OutputsAnswer): OutputRow[] {
  return [...answer.files]
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((f) => ({ name: f.name, size: formatBytes(f.size), url: f.url, saveAs: f.name.split('/').pop() || f.name }));
}

/**
 * When to ask for the outputs: they are uploaded once the MPI task has ended, so not before the job cleans up or
 * ends; a job whose spec has no outputs section has none to ask for.
 */
export function outputsDue(job: Pick<JobView, 'state'> & { spec?: SpecShape }): boolean {
  if (job.spec && job.spec.outputs === undefined) return false;
  return isTerminal(job.state) || job.state === 'CleaningUp';
}
