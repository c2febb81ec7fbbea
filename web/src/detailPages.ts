/** The job page's live log tail and outputs panel, and the usage page, as DOM (from jobDetail.ts and usage.ts). */
import { h } from './dom';
import { jobHref } from './model';
import { outputRows, tailText, type LogTail, type OutputsAnswer } from './jobDetail';
import type { UsageSummary } from './usage';

export interface JobPageDetail {
  /** The live tail of the MPI task's files: present once read; `live` while it is still being read. */
  tail?: { stdout: LogTail; stderr: LogTail; live: boolean };
  /** The outputs: the API's answer, or why there is none (no outputs section, not uploaded yet, an error). */
  outputs?: { answer?: OutputsAnswer; message?: string };
}

function card(title: string, testId: string, ...body: (Node | string | null | undefined | false)[]): HTMLElement {
  return h('section', { class: 'card', 'data-testid': testId }, h('h2', {}, title), ...body);
}

function tailBlock(t: LogTail, labels: Record<string, string>): HTMLElement {
  const text = tailText(t);
  return h(
    'div',
    { class: 'tail', 'data-testid': `tail-${t.stream}`, 'data-node': t.node },
    h(
      'h3',
      {},
      h('span', { class: 'mono', title: t.node }, labels[t.node] ?? (t.node || 'master')),
      ` · ${t.stream}.txt`,
      h('span', { class: 'muted' }, ` (last ${t.lines.length + (t.partial ? 1 : 0)} lines)`),
    ),
    h('pre', { class: 'tail-text' }, text || t.message || '(nothing written yet)'),
  );
}

/** The end of the MPI task's stdout and stderr on the master node, refreshed on every poll while the task runs. */
export function tailCard(tail: JobPageDetail['tail'], labels: Record<string, string>): HTMLElement | null {
  if (!tail) return null;
  return h(
    'section',
    { class: 'card wide', 'data-testid': 'log-tail', 'data-live': String(tail.live) },
    h('h2', {}, tail.live ? 'Live log tail' : 'Log tail (the MPI task has ended)'),
    h(
      'p',
      { class: 'muted' },
      tail.live ? "The MPI task's files on its master node, read on every refresh." : 'No longer refreshed: the MPI result has the logs per node.',
    ),
    tailBlock(tail.stdout, labels),
    tailBlock(tail.stderr, labels),
  );
}

/**
 * The job's output files with download links. The links are the API's read-only SAS URLs (valid until `expiresAt`):
 * they need no token of ours, and the page's Content-Security-Policy lets it fetch nothing but its own API, so a link
 * is a plain navigation to the blob in a new tab (saved under the file's name where the browser honours `download`).
 */
export function outputsCard(outputs: JobPageDetail['outputs']): HTMLElement | null {
  if (!outputs) return null;
  const a = outputs.answer;
  if (!a) return card('Outputs', 'outputs', h('p', { class: 'muted', 'data-testid': 'outputs-message' }, outputs.message ?? 'Loading…'));
  const rows = outputRows(a);
  return card(
    'Outputs',
    'outputs',
    h('p', { class: 'muted' }, `${rows.length} file(s) under ${a.prefix}/ · links valid until ${new Date(a.expiresAt).toLocaleTimeString()}`),
    a.errors?.length
      ? h(
          'ul',
          { class: 'bad' },
          a.errors.map((e) => h('li', {}, e)),
        )
      : null,
    rows.length
      ? h(
          'table',
          { class: 'codes outputs' },
          h(
            'thead',
            {},
            h(
              'tr',
              {},
              ['File', 'Size'].map((c) => h('th', {}, c)),
            ),
          ),
          h(
            'tbody',
            {},
            rows.map((r) =>
              h(
                'tr',
                { 'data-testid': 'output-row' },
                h(
                  'td',
                  { class: 'path' },
                  h(
                    'a',
                    { href: r.url, download: r.saveAs, target: '_blank', rel: 'noopener noreferrer', 'data-testid': 'output-link', 'data-name': r.name },
                    r.name,
                  ),
                ),
                h('td', { class: 'num' }, r.size),
              ),
            ),
          ),
        )
      : h('p', { class: 'muted' }, 'No files were uploaded.'),
    a.continuationToken ? h('p', { class: 'muted' }, 'More files than shown: `hpcjob download` fetches them all.') : null,
  );
}

export function usagePage(u: UsageSummary): HTMLElement {
  const stat = (label: string, value: string, title?: string) => h('div', { class: 'stat', title }, h('span', { class: 'muted' }, label), h('b', {}, value));
  return h(
    'div',
    { class: 'usage', 'data-testid': 'usage-page' },
    h('h1', {}, 'Usage'),
    h(
      'p',
      { class: 'muted' },
      "Your finished jobs (an admin's: every job): what the nodes cost, and beside it what the control plane itself costs to run them.",
    ),
    h(
      'div',
      { class: 'cards' },
      card(
        'Nodes',
        'usage-nodes',
        h('p', { class: 'big', 'data-testid': 'usage-nodes-cost' }, u.nodesCost),
        h('div', { class: 'stats' }, stat('jobs', u.jobs), stat('node-minutes', u.nodeMinutes)),
        u.unpriced ? h('p', { class: 'muted' }, u.unpriced) : null,
        u.nodePriceSources.length ? h('p', { class: 'muted', 'data-testid': 'usage-node-prices' }, `prices: ${u.nodePriceSources.join('; ')}`) : null,
      ),
      card(
        'Control plane',
        'usage-control-plane',
        h('p', { class: 'big', 'data-testid': 'usage-cp-cost' }, u.controlPlaneCost),
        h(
          'div',
          { class: 'stats' },
          stat('Functions CPU-seconds', u.cpuSeconds),
          stat('executions', u.executions),
          stat('storage transactions', u.storageTransactions, u.storageDetail),
        ),
        h('p', { class: 'muted', 'data-testid': 'usage-cp-prices' }, u.controlPlanePrices),
        u.basis ? h('p', { class: 'muted' }, `basis: ${u.basis}`) : null,
      ),
    ),
    card(
      'Per job',
      'usage-jobs',
      u.perJob.length
        ? h(
            'table',
            { class: 'codes' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Job', 'Released', 'Nodes', 'Node-minutes', "Nodes' cost", 'Control plane', 'CPU-s', 'Storage tx'].map((c) => h('th', {}, c)),
              ),
            ),
            h(
              'tbody',
              {},
              u.perJob.map((j) =>
                h(
                  'tr',
                  { 'data-testid': 'usage-job', 'data-job-id': j.id },
                  h('td', { class: 'path' }, h('a', { href: jobHref(j.id) }, j.id)),
                  h('td', { class: 'muted' }, j.released ? new Date(j.released).toLocaleString() : ''),
                  h('td', {}, j.shape),
                  h('td', { class: 'num' }, j.nodeMinutes),
                  h('td', { class: 'num' }, j.nodesCost),
                  h('td', { class: 'num' }, j.controlPlaneCost),
                  h('td', { class: 'num' }, j.cpuSeconds),
                  h('td', { class: 'num', title: j.storageDetail }, j.storageTransactions),
                ),
              ),
            ),
          )
        : h('p', { class: 'muted' }, 'No finished job with a cost yet.'),
      u.omitted ? h('p', { class: 'muted' }, u.omitted) : null,
    ),
    u.perDay.length
      ? card(
          'Per day (of pool release)',
          'usage-days',
          h(
            'table',
            { class: 'codes' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['Day', 'Jobs', 'Node-minutes', "Nodes' cost", 'Control plane'].map((c) => h('th', {}, c)),
              ),
            ),
            h(
              'tbody',
              {},
              u.perDay.map((d) =>
                h(
                  'tr',
                  {},
                  h('td', {}, d.day),
                  h('td', { class: 'num' }, d.jobs),
                  h('td', { class: 'num' }, d.nodeMinutes),
                  h('td', { class: 'num' }, d.nodesCost),
                  h('td', { class: 'num' }, d.controlPlaneCost),
                ),
              ),
            ),
          ),
        )
      : null,
  );
}
