/** The two pages as DOM, from the view model: the job list and one job. Re-rendered on every poll. */
import { h } from './dom';
import {
  attemptRows,
  costSummary,
  runningCost,
  displayedNodes,
  preflightRows,
  exitCodes,
  formatDuration,
  isTerminal,
  jobDurationMs,
  jobHref,
  nodeCells,
  nodeStateCounts,
  queueSummary,
  stageSpans,
  type JobView,
} from './model';
import { jobNodeLabels, stagesNotApplying, visibleBars } from './jobDetail';
import { outputsCard, tailCard, type JobPageDetail } from './detailPages';

/** A node as the page names it: the short label, the full id on hover. */
function nodeName(id: string | undefined, labels: Record<string, string>): HTMLElement | string {
  return id ? h('span', { class: 'mono', title: id, 'data-testid': 'node-name' }, labels[id] ?? id) : '';
}
import { nodeReplacements } from '../../shared/core/contract/nodeReplacements';

function stateBadge(state: string): HTMLElement {
  return h('span', { class: `badge state-${state}`, 'data-testid': 'job-state' }, state);
}

function tags(t: Record<string, string>): HTMLElement {
  return h(
    'span',
    { class: 'tags' },
    Object.entries(t).map(([k, v]) => h('span', { class: 'tag' }, v ? `${k}=${v}` : k)),
  );
}

export function jobListTable(jobs: JobView[], now: number): HTMLElement {
  if (!jobs.length) return h('p', { class: 'empty', 'data-testid': 'no-jobs' }, 'No jobs match.');
  return h(
    'table',
    { class: 'jobs' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        ['Job', 'State', 'Stage', 'Duration', 'Created', 'Tags'].map((c) => h('th', {}, c)),
      ),
    ),
    h(
      'tbody',
      {},
      jobs.map((j) =>
        h(
          'tr',
          { 'data-testid': 'job-row', 'data-job-id': j.id, 'data-state': j.state },
          h('td', {}, h('a', { href: jobHref(j.id) }, j.name), h('div', { class: 'muted mono' }, j.id)),
          h('td', {}, stateBadge(j.state)),
          h('td', {}, j.stage),
          h('td', { class: 'num' }, formatDuration(jobDurationMs(j, now))),
          h('td', { class: 'muted' }, new Date(j.createdAt).toLocaleString()),
          h('td', {}, tags(j.tags)),
        ),
      ),
    ),
  );
}

function card(title: string, testId: string, ...body: (Node | string | null | undefined | false)[]): HTMLElement {
  return h('section', { class: 'card', 'data-testid': testId }, h('h2', {}, title), ...body);
}

function timelineCard(job: JobView, now: number): HTMLElement {
  // Stages the pipeline passed through without work for this job (a native job's image pull) are left out.
  const skip = stagesNotApplying(job.spec);
  const spans = stageSpans(job.timeline, now).filter((s) => !skip.has(s.state));
  const total = spans.reduce((s, x) => s + Math.max(x.durationMs, 0), 0) || 1;
  const bar = h(
    'div',
    { class: 'timeline-bar' },
    spans
      .filter((s) => s.durationMs > 0)
      .map((s) => {
        const seg = h('span', { class: `seg state-${s.state}`, title: `${s.state}: ${formatDuration(s.durationMs)}` });
        seg.style.flexGrow = String(s.durationMs / total);
        return seg;
      }),
  );
  return card(
    'Stage timeline',
    'timeline',
    bar,
    h(
      'ol',
      { class: 'timeline' },
      spans.map((s) =>
        h(
          'li',
          { class: s.current ? 'current' : '' },
          stateBadge(s.state),
          h('span', { class: 'num' }, isTerminal(s.state) ? '' : formatDuration(s.durationMs)),
          h('span', { class: 'muted' }, `${new Date(s.startedAt).toLocaleTimeString()} · ${s.reason}`),
        ),
      ),
    ),
    replacedList(job),
  );
}

/** Every node the pipeline replaced and why (the timeline's replacement notes). */
function replacedList(job: JobView): HTMLElement | null {
  const replaced = nodeReplacements(job.timeline);
  if (!replaced.length) return null;
  return h(
    'div',
    { 'data-testid': 'replaced-nodes' },
    h('h3', {}, 'Replaced nodes'),
    h(
      'ul',
      { class: 'timeline' },
      replaced.map((r) =>
        h(
          'li',
          { 'data-testid': 'replaced-node', 'data-node': r.node, title: r.node },
          h('span', { class: 'badge' }, r.cause),
          h('span', { class: 'muted' }, `${new Date(r.at).toLocaleTimeString()} · ${r.stage} · ${r.node}: ${r.reasons.join('; ')}`),
        ),
      ),
    ),
  );
}

/** One chip per node state with its count. */
function legend(counts: { state: string; count: number }[]): HTMLElement {
  return h(
    'div',
    { class: 'legend' },
    counts.map((c) => h('span', { class: `chip node-${c.state}`, 'data-testid': 'node-count' }, `${c.state} ${c.count}`)),
  );
}

function nodesCard(job: JobView, labels: Record<string, string>): HTMLElement {
  const cells = nodeCells(displayedNodes(job));
  const expected = job.spec?.pool?.nodes;
  const counted = job.progress?.nodeCounts;
  if (!cells.length && counted) {
    return card(
      'Nodes',
      'nodes',
      legend(nodeStateCounts([], counted)),
      h('p', { class: 'muted' }, 'Too many nodes to show one by one in the live status; counts per state.'),
    );
  }
  if (!cells.length) return card('Nodes', 'nodes', h('p', { class: 'muted' }, expected ? `${expected} nodes requested; none allocated yet.` : 'No nodes yet.'));
  return card(
    'Nodes',
    'nodes',
    legend(nodeStateCounts(cells)),
    h(
      'div',
      { class: 'node-grid' },
      cells.map((c) =>
        h(
          'div',
          { class: `node node-${c.state}`, title: `${c.id}: ${c.state}`, 'data-testid': 'node-cell', 'data-node': c.id, 'data-state': c.state },
          h('span', { class: 'node-id' }, labels[c.id]),
          h('span', { class: 'node-state' }, c.state),
        ),
      ),
    ),
  );
}

function progressCard(job: JobView, now: number): HTMLElement | null {
  const bars = visibleBars(job, now);
  const mpi = job.progress?.progress?.mpi;
  const cleanup = job.progress?.progress?.cleanup?.done;
  if (!bars.length && !mpi && !cleanup?.length) return null;
  return card(
    'Progress',
    'progress',
    h(
      'div',
      { class: 'bars' },
      bars.map((b) =>
        h(
          'label',
          { class: 'bar' },
          h('span', {}, b.label),
          h('progress', { max: Math.max(b.total, 1), value: b.total ? b.done : 1 }),
          h('span', { class: 'num' }, `${b.done}/${b.total}`),
          b.detail ? h('span', { class: 'muted bar-detail', 'data-testid': 'bar-detail' }, b.detail) : null,
        ),
      ),
    ),
    mpi?.state ? h('p', {}, 'MPI task: ', h('b', {}, mpi.state), mpi.startedAt ? ` since ${new Date(mpi.startedAt).toLocaleTimeString()}` : '') : null,
    cleanup?.length ? h('p', { class: 'muted' }, `Cleaned up: ${cleanup.join(', ')}`) : null,
  );
}

function mpiCard(job: JobView, onLog: (node: string, stream: 'stdout' | 'stderr') => void, labels: Record<string, string>): HTMLElement | null {
  const rows = exitCodes(job.result);
  const logs = job.result?.logs ?? [];
  const tail = job.result?.mpi?.stdoutTail;
  if (!rows.length && !logs.length && !tail) return null;
  return card(
    'MPI result',
    'mpi',
    rows.length
      ? h(
          'table',
          { class: 'codes' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['', 'Node', 'State', 'Exit code'].map((c) => h('th', {}, c)),
            ),
          ),
          h(
            'tbody',
            {},
            rows.map((r) =>
              h(
                'tr',
                { 'data-testid': 'exit-code' },
                h('td', {}, r.label),
                h('td', {}, nodeName(r.node, labels)),
                h('td', {}, r.state ?? ''),
                h('td', { class: `num ${r.exitCode === 0 ? 'ok' : r.exitCode === undefined ? '' : 'bad'}` }, r.exitCode ?? '–'),
              ),
            ),
          ),
        )
      : null,
    job.result?.mpi?.failure ? h('p', { class: 'bad' }, job.result.mpi.failure) : null,
    logs.length
      ? h(
          'div',
          { class: 'logs' },
          h('h3', {}, 'Logs'),
          h(
            'ul',
            {},
            logs.map((l) =>
              h(
                'li',
                { 'data-testid': 'log-link' },
                nodeName(l.node, labels),
                ' ',
                h(
                  'a',
                  {
                    href: l.stdout,
                    onclick: (ev: Event) => {
                      ev.preventDefault();
                      onLog(l.node, 'stdout');
                    },
                  },
                  'stdout',
                ),
                ' · ',
                h(
                  'a',
                  {
                    href: l.stderr,
                    onclick: (ev: Event) => {
                      ev.preventDefault();
                      onLog(l.node, 'stderr');
                    },
                  },
                  'stderr',
                ),
              ),
            ),
          ),
        )
      : null,
    tail ? h('details', {}, h('summary', {}, "End of the master's stdout"), h('pre', {}, tail)) : null,
  );
}

function costCard(job: JobView, now: number): HTMLElement | null {
  const running = runningCost(job, now);
  if (running)
    return card('Cost', 'cost', h('p', { class: 'big' }, running.split(' (')[0]), h('p', { class: 'muted' }, running.slice(running.indexOf('(') + 1, -1)));
  const cost = costSummary(job);
  if (!cost) return null;
  return card(
    'Cost',
    'cost',
    cost.estimate ? h('p', { class: 'big' }, cost.estimate) : null,
    cost.nodeMinutes !== undefined ? h('p', {}, `${cost.nodeMinutes} node-minutes`) : null,
    cost.detail ? h('p', { class: 'muted' }, cost.detail) : null,
    cost.controlPlane ? h('p', { class: 'muted', 'data-testid': 'control-plane-cost' }, cost.controlPlane) : null,
  );
}

function attemptsCard(job: JobView, labels: Record<string, string>): HTMLElement | null {
  const attempts = attemptRows(job);
  const preflight = preflightRows(job);
  if (!attempts.length && !preflight) return null;
  return card(
    'Attempts and preflight',
    'attempts',
    attempts.length
      ? h(
          'table',
          { class: 'codes' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['Attempt', 'Outcome', 'Nodes', 'Why', 'Then'].map((c) => h('th', {}, c)),
            ),
          ),
          h(
            'tbody',
            {},
            attempts.map((a) =>
              h(
                'tr',
                { 'data-testid': 'attempt-row' },
                h('td', { class: 'num' }, `#${a.attempt}`),
                h('td', { class: a.outcome === 'succeeded' ? 'ok' : 'bad' }, a.outcome),
                h('td', { class: 'num' }, a.nodes),
                h('td', {}, a.why),
                h('td', { class: 'muted' }, a.next),
              ),
            ),
          ),
        )
      : null,
    preflight
      ? h(
          'div',
          {},
          h('h3', {}, 'Preflight check'),
          h('p', { 'data-testid': 'preflight-summary' }, preflight.summary),
          h(
            'table',
            { class: 'codes' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Node', 'OK', 'Latency µs', 'Bandwidth MB/s', 'Problems'].map((c) => h('th', {}, c)),
              ),
            ),
            h(
              'tbody',
              {},
              preflight.rows.map((r) =>
                h(
                  'tr',
                  { 'data-testid': 'preflight-node' },
                  h('td', {}, nodeName(r.node, labels)),
                  h('td', { class: r.ok ? 'ok' : 'bad' }, r.ok ? 'yes' : 'no'),
                  h('td', { class: 'num' }, r.latencyUs ?? '–'),
                  h('td', { class: 'num' }, r.bandwidthMBps ?? '–'),
                  h('td', {}, r.problems),
                ),
              ),
            ),
          ),
        )
      : null,
  );
}

export interface JobPageHandlers {
  onCancel: () => void;
  onLog: (node: string, stream: 'stdout' | 'stderr') => void;
}

export function jobPage(job: JobView, now: number, handlers: JobPageHandlers, detail: JobPageDetail = {}): HTMLElement {
  const running = !isTerminal(job.state);
  const labels = jobNodeLabels(job);
  const problem = job.error?.message ?? job.progress?.lastError;
  const queue = queueSummary(job);
  return h(
    'div',
    { class: 'job', 'data-testid': 'job-page', 'data-job-id': job.id, 'data-state': job.state },
    h(
      'header',
      { class: 'job-head' },
      h(
        'div',
        {},
        h('h1', {}, job.name, ' ', h('span', { class: 'muted mono' }, job.id)),
        h(
          'p',
          {},
          stateBadge(job.state),
          ' ',
          h('span', { 'data-testid': 'job-stage' }, job.stage),
          ' · ',
          h('span', { class: 'num', 'data-testid': 'job-duration' }, formatDuration(jobDurationMs(job, now))),
          job.spec?.pool ? h('span', { class: 'muted' }, ` · ${job.spec.pool.nodes ?? '?'} × ${job.spec.pool.vmSize ?? '?'}`) : null,
          ' ',
          tags(job.tags),
        ),
      ),
      running
        ? h(
            'button',
            { class: 'danger', type: 'button', 'data-testid': 'cancel-button', disabled: Boolean(job.cancelRequestedAt), onclick: handlers.onCancel },
            job.cancelRequestedAt ? 'Cancelling…' : 'Cancel job',
          )
        : null,
    ),
    queue ? h('p', { class: 'queue', 'data-testid': 'job-queue' }, queue) : null,
    problem ? h('p', { class: 'problem', 'data-testid': 'job-error' }, problem) : null,
    h(
      'div',
      { class: 'cards' },
      nodesCard(job, labels),
      progressCard(job, now),
      tailCard(detail.tail, labels),
      timelineCard(job, now),
      attemptsCard(job, labels),
      mpiCard(job, handlers.onLog, labels),
      outputsCard(detail.outputs),
      costCard(job, now),
    ),
  );
}
