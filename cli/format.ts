/** Human-readable text for job views, lists and errors. Pure: returns strings, prints nothing. */
import type { JobView } from './apiClient';
import type { FieldError } from './errors';
import { nodeReplacements, replacementLine } from '../shared/core/contract/nodeReplacements';

export function formatFieldErrors(errors: FieldError[]): string[] {
  return errors.map((e) => {
    const where = e.line !== undefined ? ` (line ${e.line}${e.column !== undefined ? `, column ${e.column}` : ''})` : '';
    return `  ${e.path || '(document)'}: ${e.message}${where}`;
  });
}

function duration(fromIso: string | undefined, toIso: string | undefined): string {
  if (!fromIso || !toIso) return '';
  const s = Math.max(0, Math.round((Date.parse(toIso) - Date.parse(fromIso)) / 1000));
  return s >= 60 ? `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s` : `${s}s`;
}

/** Why a finished job did not succeed, in one line. */
export function outcomeReason(view: JobView): string {
  return view.error?.message ?? view.result?.mpi?.failure ?? view.progress?.lastError ?? '';
}

export function formatJob(view: JobView): string {
  const lines = [`job      ${view.id}  (${view.name})`, `state    ${view.state}${view.stage && view.stage !== view.state ? `  ${view.stage}` : ''}`];
  const tags = Object.entries(view.tags ?? {});
  if (tags.length) lines.push(`tags     ${tags.map(([k, v]) => `${k}=${v}`).join(' ')}`);
  if (view.createdAt) lines.push(`created  ${view.createdAt}${view.updatedAt ? `   updated ${view.updatedAt}` : ''}`);
  if (view.batchPoolId) lines.push(`pool     ${view.batchPoolId}${view.batchJobId ? `   batch job ${view.batchJobId}` : ''}`);
  const queue = queueText(view);
  if (queue) lines.push(`queue    ${queue}`);
  const progress = progressLine(view);
  if (progress) lines.push(`progress ${progress}`);
  if (view.result?.exitCode !== undefined) lines.push(`exit     ${view.result.exitCode}`);
  if (view.result?.nodeMinutes !== undefined) {
    const idle = view.result.cost?.idleNodeMinutesBeforeMpi;
    lines.push(`usage    ${view.result.nodeMinutes} node-minutes${idle !== undefined ? ` (${idle} idle before MPI)` : ''}`);
  }
  lines.push(...attemptLines(view));
  const preflight = preflightText(view);
  if (preflight) lines.push(`preflight ${preflight}`);
  lines.push(...replacedLines(view));
  const timings = Object.entries(view.result?.timings ?? {});
  if (timings.length) lines.push(`timings  ${timings.map(([k, t]) => `${k} ${duration(t.startedAt, t.endedAt)}`).join(', ')}`);
  const outputs = view.result?.outputs;
  if (outputs) {
    lines.push(`outputs  ${outputs.count} file(s), ${formatBytes(outputs.bytes)} in ${outputs.container}/${outputs.prefix}/ (hpcjob download ${view.id})`);
    for (const e of outputs.errors ?? []) lines.push(`         upload failed: ${e}`);
  }
  if (view.error) lines.push(`error    ${view.error.code}: ${view.error.message}`);
  else if (view.progress?.lastError) lines.push(`last error ${view.progress.lastError}`);
  return lines.join('\n');
}

/** One line per poll, for pipes and logs: the state, the live counters (or the place in the queue) and the last error. */
export function statusLine(view: Pick<JobView, 'state' | 'progress' | 'queue'>): string {
  return `${view.state.padEnd(13)} ${queueText(view) ?? progressLine(view)}${view.progress?.lastError ? `  (${view.progress.lastError})` : ''}`;
}

/**
 * Where a Queued job stands: its place in its queue (GET /api/jobs/{id} reads it fresh; the run's own last report
 * otherwise) and why it waits, or the dependencies it waits for. Undefined for a job that is not Queued.
 */
export function queueText(view: Pick<JobView, 'state' | 'progress' | 'queue'>): string | undefined {
  if (view.state !== 'Queued') return undefined;
  const q = view.queue;
  const live = view.progress?.queue;
  const why = q?.reason ?? live?.reason;
  if (q?.state === 'waiting') {
    const place =
      q.position !== undefined
        ? `#${q.position} of ${q.waitingInQueue ?? '?'} in queue ${q.name}${q.positionOverall !== undefined ? ` (#${q.positionOverall} overall)` : ''}`
        : `waiting in queue ${q.name}`;
    return `${place}${why ? ` · waiting for ${why}` : ''}`;
  }
  if (q?.state === 'granted') return `admitted (grant ${q.grant}) in queue ${q.name}`;
  if (q?.state === 'refused') return `refused: ${q.reason ?? ''}`;
  if (live?.waitingFor === 'dependencies') return `waiting for dependencies: ${(live.pending ?? q?.pending ?? []).join(', ') || '…'}`;
  if (live?.waitingFor === 'admission' && live.position !== undefined)
    return `#${live.position} in its queue (#${live.positionOverall ?? '?'} overall)${why ? ` · waiting for ${why}` : ''}`;
  return `waiting in queue ${q?.name ?? 'default'}`;
}

/** The live counters on one line: "nodes ready 2/2 · shards staged 0/0 · mpi running". */
export function progressLine(view: Pick<JobView, 'progress'>): string {
  const p = view.progress?.progress ?? {};
  const parts: string[] = [];
  const counter = (label: string, c: { done: number; total: number } | undefined) => {
    if (c) parts.push(`${label} ${c.done}/${c.total}`);
  };
  counter('nodes ready', p.nodesReady);
  counter('images pulled', p.imagesPulled);
  counter('shards staged', p.shardsStaged);
  counter('shards on nodes', p.shardsDownloaded);
  if (p.preflight) parts.push(`preflight ${p.preflight.state}${p.preflight.round > 1 ? ` (check ${p.preflight.round})` : ''}`);
  if (p.attempt && p.attempt.max > 1) parts.push(`attempt ${p.attempt.current}/${p.attempt.max}`);
  if (p.mpi?.state) parts.push(`mpi ${p.mpi.state}`);
  counter('outputs uploaded', p.outputsUploaded);
  if (p.cleanup?.done.length) parts.push(`cleanup: ${p.cleanup.done.join(', ')}`);
  return parts.join(' · ');
}

/** 1536 → "1.5 KiB". */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u]}`;
}

function pad(text: string, width: number): string {
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

export function formatJobTable(jobs: JobView[]): string {
  if (!jobs.length) return 'no jobs';
  const rows = [['ID', 'NAME', 'STATE', 'STAGE', 'CREATED', 'TAGS']];
  for (const j of jobs) {
    rows.push([
      j.id,
      j.name,
      j.state,
      j.stage,
      j.createdAt ?? '',
      Object.entries(j.tags ?? {})
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    ]);
  }
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  return rows
    .map((r) =>
      r
        .map((cell, c) => (c === r.length - 1 ? cell : pad(cell, widths[c])))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** The attempts of a job that retried (or could): one line each, with why it ended and what came next. */
export function attemptLines(view: Pick<JobView, 'result'>): string[] {
  const attempts = view.result?.attempts ?? [];
  if (attempts.length < 2 && !attempts.some((a) => a.retried)) return [];
  return attempts.map((a, i) => {
    const why = a.outcome === 'failed' ? ` (${[a.failureClass, a.reason].filter(Boolean).join(': ')})` : '';
    const next = a.retried
      ? `; retried${a.retryAfterMs !== undefined ? ` after ${Math.round(a.retryAfterMs / 1000)} s` : ''}${a.replacedNodes?.length ? `, replacing ${a.replacedNodes.join(', ')}` : ''}`
      : a.retryReason
        ? `; not retried: ${a.retryReason}`
        : '';
    return `${i === 0 ? 'attempts' : '        '} #${a.attempt} ${a.outcome} on ${a.nodes.length} node(s)${why}${next}`;
  });
}

/** Every node the pipeline replaced and why (the timeline's replacement notes), one line each. */
export function replacedLines(view: Pick<JobView, 'timeline'>): string[] {
  return nodeReplacements(view.timeline).map((r, i) => `${i === 0 ? 'replaced' : '        '} ${replacementLine(r)}`);
}

/** The last preflight check: passed or not, over how many nodes, the worst figures and the nodes it replaced. */
export function preflightText(view: Pick<JobView, 'result'>): string | undefined {
  const p = view.result?.preflight;
  if (!p) return undefined;
  const nodes = Object.values(p.nodes);
  const worst = (pick: (n: (typeof nodes)[number]) => number | undefined, better: (a: number, b: number) => number) => {
    const values = nodes.map(pick).filter((v): v is number => v !== undefined);
    return values.length ? values.reduce(better) : undefined;
  };
  const latency = worst(
    (n) => n.latencyUs,
    (a, b) => Math.max(a, b),
  );
  const bandwidth = worst(
    (n) => n.bandwidthMBps,
    (a, b) => Math.min(a, b),
  );
  const figures = [latency !== undefined ? `worst latency ${latency} µs` : '', bandwidth !== undefined ? `worst bandwidth ${bandwidth} MB/s` : '']
    .filter(Boolean)
    .join(', ');
  return (
    `${p.passed ? 'passed' : 'failed'} on ${nodes.length} node(s) after ${p.rounds} check(s)${figures ? `: ${figures}` : ''} (${p.pingPong})` +
    `${p.replaced.length ? `; replaced ${p.replaced.join(', ')}` : ''}`
  );
}
