/**
 * The dashboard's view model, pure (no DOM, no fetch): what the job API answers, reduced to what the pages
 * show. Unit-tested in tests/ui/model.test.ts; the DOM code in render.ts only turns these values into elements.
 */

import type { JobState, TerminalState } from '../../shared/core/state/states';
import type { Counter, NodeProgress, PipelineStatus } from '../../shared/core/contract/progress';
import type { JobCost, JobResultView } from '../../shared/core/contract/jobResult';
import type { JobQueueView } from '../../shared/core/contract/queue';
import { jobControlPlaneCost } from '../../shared/core/ops/usage';
import { CONTROL_PLANE_PRICES } from '../../shared/core/ops/controlPlanePrices';

/** The keys of a record, typed: how the lists below stay complete (a missing or unknown key does not compile). */
function keysOf<K extends string>(r: Record<K, unknown>): K[] {
  return Object.keys(r) as K[];
}

/** Every job state in pipeline order, for the state filter. */
export const JOB_STATES: readonly JobState[] = keysOf<JobState>({
  Submitted: 0,
  Queued: 0,
  Provisioning: 0,
  PullingImages: 0,
  StagingData: 0,
  Running: 0,
  CleaningUp: 0,
  Succeeded: 0,
  Failed: 0,
  Cancelled: 0,
});
const TERMINAL: ReadonlySet<string> = new Set(keysOf<TerminalState>({ Succeeded: 0, Failed: 0, Cancelled: 0 }));

/** Per-node pipeline states in the order a node goes through them (the legend's order). */
export const NODE_STATES: readonly NodeProgress[] = keysOf<NodeProgress>({
  allocating: 0,
  idle: 0,
  pulling: 0,
  pulled: 0,
  downloading: 0,
  ready: 0,
  running: 0,
  done: 0,
  failed: 0,
  ended: 0,
  deleted: 0,
});

/**
 * The orchestration's custom status as the API passes it through. Read leniently: any part may be missing, and node
 * states the dashboard does not know (a newer server) are shown as they come.
 */
export type LiveProgress = Partial<Omit<PipelineStatus, 'nodes' | 'progress'>> & {
  progress?: Partial<PipelineStatus['progress']>;
  nodes?: Record<string, string>;
};

export interface TimelineEvent {
  at: string;
  kind: string;
  from?: string | null;
  to?: string;
  reason: string;
  /** A note's data (node replacements: shared/core/contract/nodeReplacements.ts). */
  data?: unknown;
}

/** The subset of the API's JobView the dashboard reads (GET /api/jobs and GET /api/jobs/{id}). */
export interface JobView {
  id: string;
  name: string;
  owner?: string;
  tags: Record<string, string>;
  state: string;
  stage: string;
  createdAt: string;
  updatedAt: string;
  progress?: LiveProgress | null;
  orchestrationStatus?: string;
  timeline?: TimelineEvent[];
  result?: JobResultView;
  error?: { code: string; message: string };
  cancelRequestedAt?: string;
  cost?: JobCost;
  spec?: { pool?: { nodes?: number; vmSize?: string }; container?: { runtime?: string; images?: unknown[] }; data?: { inputs?: unknown[] }; outputs?: unknown };
  /** While Queued (the single-job answer): its place in the queue. */
  queue?: JobQueueView;
}

/**
 * Where a Queued job stands, in one sentence: its place in its queue and why it waits, or the dependencies it waits
 * for (the run's own report). Undefined once the job left the queue.
 */
export function queueSummary(job: Pick<JobView, 'state' | 'queue' | 'progress'>): string | undefined {
  if (job.state !== 'Queued') return undefined;
  const q = job.queue;
  const live = job.progress?.queue;
  const why = q?.reason ?? live?.reason;
  if (q?.state === 'waiting' && q.position !== undefined) {
    return `Number ${q.position} of ${q.waitingInQueue ?? '?'} in queue ${q.name}${q.positionOverall !== undefined ? ` (${q.positionOverall} overall)` : ''}${why ? `; waiting for ${why}` : ''}.`;
  }
  if (q?.state === 'granted') return `Admitted in queue ${q.name}; starting.`;
  if (q?.state === 'refused') return `Refused: ${q.reason ?? ''}`;
  if (live?.waitingFor === 'dependencies') return `Waiting for ${(live.pending ?? []).join(', ') || 'its dependencies'} to finish.`;
  return `Waiting in queue ${q?.name ?? 'default'}.`;
}

export interface AttemptRow {
  attempt: number;
  outcome: string;
  nodes: number;
  why: string;
  next: string;
}

/** The attempts of a job that retried (none for a single attempt that was not retried: the error says it all). */
export function attemptRows(job: Pick<JobView, 'result'>): AttemptRow[] {
  const attempts = job.result?.attempts ?? [];
  if (attempts.length < 2 && !attempts.some((a) => a.retried)) return [];
  return attempts.map((a) => ({
    attempt: a.attempt,
    outcome: a.outcome,
    nodes: a.nodes.length,
    why: a.outcome === 'failed' ? [a.failureClass, a.reason].filter(Boolean).join(': ') : '',
    next: a.retried
      ? `retried${a.retryAfterMs !== undefined ? ` after ${formatDuration(a.retryAfterMs)}` : ''}${a.replacedNodes?.length ? `, replacing ${a.replacedNodes.join(', ')}` : ''}`
      : (a.retryReason ?? ''),
  }));
}

export interface PreflightRow {
  node: string;
  ok: boolean;
  latencyUs?: number;
  bandwidthMBps?: number;
  problems: string;
}

/** The last preflight check, node by node (failed nodes first), and its summary line; undefined without one. */
export function preflightRows(job: Pick<JobView, 'result'>): { summary: string; rows: PreflightRow[] } | undefined {
  const p = job.result?.preflight;
  if (!p) return undefined;
  const rows = Object.entries(p.nodes)
    .map(([node, n]) => ({ node, ok: n.ok, latencyUs: n.latencyUs, bandwidthMBps: n.bandwidthMBps, problems: n.problems.join('; ') }))
    .sort((a, b) => Number(a.ok) - Number(b.ok) || a.node.localeCompare(b.node));
  const summary = `${p.passed ? 'Passed' : 'Failed'} after ${p.rounds} check(s), ${p.pingPong}${p.replaced.length ? `; replaced ${p.replaced.join(', ')}` : ''}.`;
  return { summary, rows };
}

export interface ListFilters {
  state: string;
  tag: string;
}

/** Query string for GET /api/jobs from the filter form (empty fields are left out). */
export function listQuery(filters: ListFilters): string {
  const q = new URLSearchParams();
  if (filters.state) q.set('state', filters.state);
  if (filters.tag.trim()) q.set('tag', filters.tag.trim());
  q.set('top', '200');
  return q.toString();
}

export function isTerminal(state: string): boolean {
  return TERMINAL.has(state);
}

/** "850 ms", "42 s", "3 min 05 s", "2 h 07 min". */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${String(s % 60).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} min`;
}

/** How long the job has run: to its last update once finished, to `now` while it runs. */
export function jobDurationMs(job: Pick<JobView, 'state' | 'createdAt' | 'updatedAt'>, now: number): number {
  const end = isTerminal(job.state) ? Date.parse(job.updatedAt) : now;
  return end - Date.parse(job.createdAt);
}

export interface StageSpan {
  state: string;
  startedAt: string;
  durationMs: number;
  reason: string;
  current: boolean;
}

/** The stage timeline from the job's transition events: each state lasts until the next transition. */
export function stageSpans(timeline: TimelineEvent[] | undefined, now: number): StageSpan[] {
  const transitions = (timeline ?? []).filter((e) => e.kind === 'transition' && e.to).sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
  return transitions.map((e, i) => {
    const next = transitions[i + 1];
    const terminal = isTerminal(e.to as string);
    const end = next ? Date.parse(next.at) : terminal ? Date.parse(e.at) : now;
    return { state: e.to as string, startedAt: e.at, durationMs: end - Date.parse(e.at), reason: e.reason, current: !next && !terminal };
  });
}

export interface NodeCell {
  id: string;
  state: string;
}

/** Node ids sorted naturally (node-2 before node-10), so the grid keeps its order between polls. */
export function nodeCells(nodes: Record<string, string> | undefined): NodeCell[] {
  const collator = new Intl.Collator('en', { numeric: true });
  return Object.entries(nodes ?? {})
    .map(([id, state]) => ({ id, state }))
    .sort((a, b) => collator.compare(a.id, b.id));
}

/**
 * The node states to show. The pipeline reports each node up to "ready" (progress.nodes); past that the MPI
 * task tells the rest: while it runs, ready nodes are running; once its result is collected, each node with a
 * subtask is done or failed by that subtask's exit code, and the master (the first node with logs, where
 * mpirun ran) by the job's exit code unless a subtask already explains a failure.
 */
export function displayedNodes(job: Pick<JobView, 'state' | 'progress' | 'result'>): Record<string, string> {
  const nodes: Record<string, string> = { ...(job.progress?.nodes ?? {}) };
  const result = job.result;
  const subtasks = (result?.mpi?.subtasks ?? []).filter((s) => s.nodeId && s.exitCode !== undefined);
  const finished = result?.exitCode !== undefined;
  const mpiState = job.progress?.progress?.mpi?.state;
  const master = result?.logs?.[0]?.node;
  const subtaskFailed = subtasks.some((s) => s.exitCode !== 0);
  for (const [id, state] of Object.entries(nodes)) {
    if (state !== 'ready') continue;
    const sub = subtasks.find((s) => s.nodeId === id);
    if (sub) nodes[id] = sub.exitCode === 0 ? 'done' : 'failed';
    else if (id === master && finished) nodes[id] = result?.exitCode === 0 || subtaskFailed ? 'done' : 'failed';
    else if (finished || job.state === 'Succeeded') nodes[id] = 'done';
    else if (mpiState === 'running' && job.state === 'Running') nodes[id] = 'running';
  }
  return nodes;
}

/**
 * Short labels for the page's nodes: Batch node ids share a long pool-specific prefix ("tvmps_ffd0…_d"), so the
 * part common to all ids is dropped, keeping at least `keep` characters of each. Ids that stay long after that (Azure's
 * and the emulator's: a 64-hex-digit hash between a common head and tail) are cut to the shortest head of their
 * distinct part that still tells them apart, with an ellipsis; the full id goes in the element's title.
 */
export function shortNodeLabels(ids: string[], keep = 6, max = 14): Record<string, string> {
  let prefix = ids.length > 1 ? ids[0] : '';
  for (const id of ids) while (prefix && !id.startsWith(prefix)) prefix = prefix.slice(0, -1);
  // Cut less when an id would keep fewer than `keep` characters: all ids lose the same prefix, so labels stay distinct.
  const cut = Math.max(0, Math.min(prefix.length, ...ids.map((id) => id.length - keep)));
  if (ids.every((id) => id.length - cut <= max)) return Object.fromEntries(ids.map((id) => [id, id.slice(cut)]));
  // Long ids: drop the common tail too (never into the cut head), then show the shortest head of what is left that
  // still tells the ids apart, at least `keep` characters (taken from before the cut when what differs is shorter).
  let suffix = ids.length > 1 ? ids[0].slice(cut) : '';
  for (const id of ids) while (suffix && !id.slice(cut).endsWith(suffix)) suffix = suffix.slice(1);
  const ends = ids.map((id) => id.length - suffix.length);
  const start = Math.max(0, Math.min(cut, Math.min(...ends) - keep));
  const cores = ids.map((id, i) => id.slice(start, ends[i]));
  const longest = Math.max(...cores.map((c) => c.length));
  let len = Math.min(ids.length > 1 ? keep : max - 1, longest);
  while (new Set(cores.map((c) => c.slice(0, len))).size < cores.length && len < longest) len += 1;
  return Object.fromEntries(ids.map((id, i) => [id, cores[i].length > len ? `${cores[i].slice(0, len)}…` : cores[i]]));
}

/**
 * How many nodes are in each state, in pipeline order, leaving out states no node is in. A large job's status
 * carries counts instead of per-node states (shared/core/contract/progress.ts fitStatus): those are used as they are.
 */
export function nodeStateCounts(cells: NodeCell[], reported?: Partial<Record<string, number>>): { state: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const c of cells) counts.set(c.state, (counts.get(c.state) ?? 0) + 1);
  for (const [state, n] of Object.entries(reported ?? {})) if (n) counts.set(state, (counts.get(state) ?? 0) + n);
  const order = [...NODE_STATES, ...[...counts.keys()].filter((s) => !(NODE_STATES as readonly string[]).includes(s)).sort()];
  return order.filter((s) => counts.has(s)).map((state) => ({ state, count: counts.get(state) as number }));
}

export interface ProgressBar {
  label: string;
  done: number;
  total: number;
}

/** The counters of the live progress worth a bar (shard staging first: it is what users wait for). */
export function progressBars(progress: LiveProgress | null | undefined): ProgressBar[] {
  const p = progress?.progress ?? {};
  const bars: ProgressBar[] = [];
  const add = (label: string, c: Counter | undefined) => {
    if (c && typeof c.done === 'number' && typeof c.total === 'number') bars.push({ label, done: c.done, total: c.total });
  };
  add('Shards staged', p.shardsStaged);
  add('Shards on nodes', p.shardsDownloaded);
  add('Nodes ready', p.nodesReady);
  add('Images pulled', p.imagesPulled);
  return bars;
}

export interface ExitCodeRow {
  label: string;
  node?: string;
  exitCode?: number;
  state?: string;
}

/** The MPI exit codes: the job's (mpirun on the master, or the first failed subtask's), then each subtask's. */
export function exitCodes(result: JobResultView | undefined): ExitCodeRow[] {
  if (!result) return [];
  const rows: ExitCodeRow[] = [];
  if (result.exitCode !== undefined) rows.push({ label: 'mpirun (master)', node: result.logs?.[0]?.node, exitCode: result.exitCode });
  for (const s of result.mpi?.subtasks ?? []) {
    rows.push({ label: `subtask ${s.id}`, node: s.nodeId, exitCode: s.exitCode, state: s.state });
  }
  return rows;
}

export interface CostSummary {
  estimate?: string;
  nodeMinutes?: number;
  detail?: string;
  /** The control plane's own estimated cost of the job (Functions and storage transactions), beside the nodes'. */
  controlPlane?: string;
}

/** The cost block, from `cost` on the job view (or in its result); falls back to the result's node-minutes. */
export function costSummary(job: Pick<JobView, 'cost' | 'result'>): CostSummary | undefined {
  const cost = job.cost ?? job.result?.cost;
  if (cost) {
    const parts = [
      cost.vmSize,
      `${cost.nodes} nodes`,
      cost.pricePerNodeHour !== undefined ? `${cost.pricePerNodeHour} ${cost.currency}/node-hour` : undefined,
      `prices: ${cost.priceSource}`,
    ].filter((p): p is string => !!p);
    return {
      estimate: cost.estimatedCost !== undefined ? `${cost.estimatedCost.toFixed(cost.estimatedCost < 1 ? 4 : 2)} ${cost.currency}` : undefined,
      nodeMinutes: cost.nodeMinutes.total,
      detail: parts.join(' · '),
      controlPlane: `control plane ≈ ${jobControlPlaneCost(cost).toFixed(5)} ${CONTROL_PLANE_PRICES.currency} (Functions and storage; estimate, prices as of ${CONTROL_PLANE_PRICES.asOf}${CONTROL_PLANE_PRICES.fallback ? ', dated fallback' : ''})`,
    };
  }
  if (typeof job.result?.nodeMinutes === 'number') return { nodeMinutes: job.result.nodeMinutes };
  return undefined;
}

/**
 * The running cost of a job whose pool is up: nodes × price × the time since allocation, from what the pipeline
 * publishes (`progress.billing`). Undefined once the job has its final cost, before the pool exists, or without a price.
 */
export function runningCost(job: Pick<JobView, 'cost' | 'result' | 'progress'>, now: number): string | undefined {
  if (job.cost ?? job.result?.cost) return undefined;
  const b = job.progress?.billing;
  if (!b?.since || b.pricePerNodeHour === undefined || !b.nodes) return undefined;
  const amount = (b.nodes * b.pricePerNodeHour * Math.max(0, now - Date.parse(b.since))) / 3_600_000;
  return `${amount.toFixed(amount < 1 ? 4 : 2)} ${b.currency} so far (${b.nodes} nodes × ${b.pricePerNodeHour} ${b.currency}/node-hour; prices: ${b.priceSource})`;
}

/** Hash routes: "#/" is the job list, "#/jobs/<id>" one job, "#/usage" the usage page. */
export type Route = { page: 'list' } | { page: 'job'; id: string } | { page: 'usage' };

export function parseRoute(hash: string): Route {
  if (/^#\/usage\/?$/.test(hash)) return { page: 'usage' };
  const m = /^#\/jobs\/([^/?#]+)/.exec(hash);
  if (!m) return { page: 'list' };
  try {
    return { page: 'job', id: decodeURIComponent(m[1]) };
  } catch {
    return { page: 'list' };
  }
}

export function jobHref(id: string): string {
  return `#/jobs/${encodeURIComponent(id)}`;
}
