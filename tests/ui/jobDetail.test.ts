/**
 * The job page's pure parts beyond model.ts (web/src/jobDetail.ts, web/src/usage.ts): newest-first order, stages that
 * do not apply, progress within the pull stage, one set of node labels, the live log tail, the outputs list and the
 * usage page's figures.
 */
import {
  appendTail,
  emptyTail,
  formatBytes,
  jobNodeLabels,
  newestFirst,
  outputRows,
  outputsDue,
  shouldTail,
  stagesNotApplying,
  tailText,
  visibleBars,
  TAIL_LINES,
  type LogAnswer,
} from '../../web/src/jobDetail';
import { parseRoute, shortNodeLabels, type JobView } from '../../web/src/model';
import { usageSummary } from '../../web/src/usage';
import { usageReport } from '../../shared/core/ops/usage';
import { jobCost } from '../../shared/core/ops/cost';

const base: JobView = {
  id: 'j1',
  name: 'j1',
  tags: {},
  state: 'Running',
  stage: 'Running',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:01:00.000Z',
};
const live = (content: string, start: number, size = start + Buffer.byteLength(content), node = 'n1'): LogAnswer => ({
  node,
  stream: 'stdout',
  source: 'live',
  size,
  start,
  content,
});

describe('job list order', () => {
  it('lists the newest job first whatever order the API answers', () => {
    const jobs = [
      { ...base, id: 'a-old', createdAt: '2026-01-01T00:00:00.000Z' },
      { ...base, id: 'z-new', createdAt: '2026-01-03T00:00:00.000Z' },
      { ...base, id: 'm-mid', createdAt: '2026-01-02T00:00:00.000Z' },
    ];
    expect(newestFirst(jobs).map((j) => j.id)).toEqual(['z-new', 'm-mid', 'a-old']);
    expect(jobs[0].id).toBe('a-old');
  });
});

describe('stages that do not apply', () => {
  const native = { container: { runtime: 'none', images: [] }, data: { inputs: [] } };
  it('hides image pulling for a native job and staging for a job without inputs', () => {
    expect([...stagesNotApplying(native)].sort()).toEqual(['PullingImages', 'StagingData']);
    expect([...stagesNotApplying({ container: { runtime: 'docker', images: [{}] }, data: { inputs: [{}] } })]).toEqual([]);
    expect([...stagesNotApplying(undefined)]).toEqual([]);
  });

  it('shows no "images pulled 4/4" for a native job and no full bar for 0/0', () => {
    const progress = { progress: { imagesPulled: { done: 4, total: 4 }, nodesReady: { done: 2, total: 4 }, shardsStaged: { done: 0, total: 0 } } };
    expect(visibleBars({ ...base, progress, spec: native }, 0).map((b) => b.label)).toEqual(['Nodes ready']);
    expect(visibleBars({ ...base, progress, spec: { container: { runtime: 'docker', images: [{}] }, data: { inputs: [{}] } } }, 0).map((b) => b.label)).toEqual(
      ['Nodes ready', 'Images pulled'],
    );
  });

  it('says what moves inside the pull stage before any node holds every image', () => {
    const now = Date.parse('2026-01-01T00:01:05.000Z');
    const job = {
      ...base,
      state: 'PullingImages',
      spec: { container: { runtime: 'docker', images: [{}] } },
      timeline: [{ kind: 'transition', to: 'PullingImages', at: '2026-01-01T00:00:00.000Z', reason: 'pull' }],
      progress: { nodes: { a: 'pulling', b: 'pulling', c: 'idle' }, progress: { imagesPulled: { done: 0, total: 3 } } },
    };
    expect(visibleBars(job, now)).toEqual([{ label: 'Images pulled', done: 0, total: 3, detail: '2 node(s) pulling now · 1 min 05 s in this stage' }]);
    expect(visibleBars({ ...job, state: 'StagingData' }, now)[0].detail).toBeUndefined();
  });
});

describe('node labels', () => {
  it("labels a node the same in every table, the common prefix of all the job's nodes cut", () => {
    const long = (n: number) => `tvmps_0123456789abcdef0123456789abcdef0123456789abcdef_d-${n}`;
    const labels = jobNodeLabels({
      progress: { nodes: { [long(1)]: 'ready', [long(2)]: 'ready' } },
      result: { logs: [{ node: long(1), stdout: '', stderr: '' }], mpi: { subtasks: [{ id: 1, state: 'completed', nodeId: long(3) }] } },
    });
    expect(Object.keys(labels).sort()).toEqual([long(1), long(2), long(3)]);
    expect(labels[long(1)]).toBe('ef_d-1');
    expect(new Set(Object.values(labels)).size).toBe(3);
  });

  it("cuts ids that differ in a long hash to the head that tells them apart (the emulator's and Azure's ids)", () => {
    const a = 'tvmps_081b59a7cbea31ce1d1f4c55195799065234b1e8ffab831bf5b22b4e64b22b3f_d';
    const b = 'tvmps_301823456cddf3451f2ce40ed35aed29582ea4ee988bbe56a72069e56e036286_d';
    const c = 'tvmps_081b59f7cbea31ce1d1f4c55195799065234b1e8ffab831bf5b22b4e64b22b3f_d';
    expect(shortNodeLabels([a, b])).toEqual({ [a]: '081b59…', [b]: '301823…' });
    expect(shortNodeLabels([a, b, c])).toEqual({ [a]: '081b59a…', [b]: '3018234…', [c]: '081b59f…' });
    expect(shortNodeLabels([a])).toEqual({ [a]: 'tvmps_081b59a…' });
    expect(shortNodeLabels([a.slice(6), b.slice(6)])).toEqual({ [a.slice(6)]: '081b59…', [b.slice(6)]: '301823…' });
  });
});

describe('live log tail', () => {
  it('appends what was written since the last read, completing the unfinished line', () => {
    let t = appendTail(emptyTail('stdout'), live('one\ntw', 0));
    expect(t).toMatchObject({ node: 'n1', offset: 6, lines: ['one'], partial: 'tw' });
    t = appendTail(t, live('o\nthree\n', 6));
    expect(tailText(t)).toBe('one\ntwo\nthree');
    expect(t.offset).toBe(14);
    expect(appendTail(t, live('', 14))).toEqual({ ...t, message: undefined });
  });

  it('keeps the last lines only, and marks bytes it never saw', () => {
    const many = Array.from({ length: 100 }, (_, i) => `line ${i}`).join('\n') + '\n';
    const t = appendTail(emptyTail('stdout'), live(many, 0));
    expect(t.lines).toHaveLength(TAIL_LINES);
    expect(t.lines.at(-1)).toBe('line 99');
    // The route answers the newest MB only: a read that starts after the offset skipped bytes.
    const skipped = appendTail(appendTail(emptyTail('stdout'), live('a\nhalf', 0)), live('new\n', 5000));
    expect(skipped.lines).toEqual(['a', '…', 'new']);
    expect(skipped.offset).toBe(5004);
  });

  it("starts over when the file shrank or another node answered, and keeps the route's message when there is no file", () => {
    const t = appendTail(emptyTail('stdout'), live('old\n', 0));
    expect(appendTail(t, live('fresh\n', 0, 6)).lines).toEqual(['old', 'fresh']);
    expect(appendTail({ ...t, offset: 100 }, live('fresh\n', 0, 6)).lines).toEqual(['fresh']);
    expect(appendTail(t, live('x\n', 0, 2, 'n2'))).toMatchObject({ node: 'n2', lines: ['x'] });
    expect(appendTail(t, { node: '', stream: 'stdout', source: 'none', size: 0, start: 0, content: '', message: 'not started' })).toMatchObject({
      lines: ['old'],
      message: 'not started',
    });
  });

  it('is read only while the MPI task runs', () => {
    const running = { ...base, progress: { progress: { mpi: { state: 'running' } } } };
    expect(shouldTail(running)).toBe(true);
    expect(shouldTail({ ...running, state: 'CleaningUp' })).toBe(false);
    expect(shouldTail({ ...running, state: 'Cancelled' })).toBe(false);
    expect(shouldTail({ ...running, progress: { progress: { mpi: { state: 'completed' } } } })).toBe(false);
  });
});

describe('outputs', () => {
  it('lists files by name with sizes for people and the name to save under', () => {
    const rows = outputRows({
      jobId: 'j',
      prefix: 'users/dev/j',
      expiresAt: '',
      files: [
        { name: 'workdir/result.txt', size: 1536, url: 'https://x/r?sig' },
        { name: 'logs/stdout.txt', size: 12, url: 'https://x/s?sig' },
      ],
    });
    expect(rows).toEqual([
      { name: 'logs/stdout.txt', size: '12 B', url: 'https://x/s?sig', saveAs: 'stdout.txt' },
      { name: 'workdir/result.txt', size: '1.5 KiB', url: 'https://x/r?sig', saveAs: 'result.txt' },
    ]);
    expect(formatBytes(5 * 1024 ** 3)).toBe('5.0 GiB');
  });

  it('asks for the outputs once the MPI task has ended, and never for a job without an outputs section', () => {
    expect(outputsDue({ state: 'Running', spec: { outputs: {} } })).toBe(false);
    expect(outputsDue({ state: 'CleaningUp', spec: { outputs: {} } })).toBe(true);
    expect(outputsDue({ state: 'Cancelled', spec: { outputs: {} } })).toBe(true);
    expect(outputsDue({ state: 'Succeeded', spec: {} })).toBe(false);
  });
});

describe('usage page', () => {
  it('routes #/usage to its own page', () => {
    expect(parseRoute('#/usage')).toEqual({ page: 'usage' });
    expect(parseRoute('#/usagex')).toEqual({ page: 'list' });
  });

  it("shows each job's nodes' cost beside its control-plane cost, the totals and the prices' date", () => {
    const cost = (rel: string, minutes: number, price?: number) =>
      jobCost(
        {
          dedicatedNodes: 4,
          lowPriorityNodes: 0,
          allocatedAt: new Date(Date.parse(rel) - minutes * 60_000).toISOString(),
          releasedAt: rel,
          vmSize: 'Standard_D8s_v5',
        },
        {},
        { pricePerNodeHour: price, currency: 'USD', source: 'Retail Prices stand-in, 2026-11-27' },
      );
    const report = usageReport([
      { id: 'old', tags: {}, cost: cost('2026-03-01T10:00:00Z', 30, 0.384) },
      { id: 'new', tags: {}, cost: cost('2026-03-02T10:00:00Z', 60) },
    ]);
    const u = usageSummary(JSON.parse(JSON.stringify(report)));
    expect(u.perJob.map((j) => j.id)).toEqual(['new', 'old']);
    expect(u.perJob[0].nodesCost).toBe('no price');
    expect(u.perJob[1].nodesCost).toBe('0.7680 USD');
    expect(u.perJob[1].controlPlaneCost).toMatch(/^0\.\d{5} USD$/);
    expect(Number(u.perJob[1].cpuSeconds)).toBeGreaterThan(0);
    expect(Number(u.storageTransactions)).toBeGreaterThan(0);
    expect(u.nodesCost).toBe('0.7680 USD');
    expect(u.unpriced).toMatch(/^1 job/);
    expect(u.controlPlanePrices).toMatch(/^prices as of \d{4}-\d{2}-\d{2}: dated fallback: /);
    expect(usageSummary({ controlPlane: { pricesAsOf: '2026-01-02', fallback: true, priceSource: 'a table' } }).controlPlanePrices).toBe(
      'prices as of 2026-01-02 (dated fallback): a table',
    );
    expect(u.nodePriceSources).toEqual(['Retail Prices stand-in, 2026-11-27']);
    expect(u.perDay.map((d) => d.day)).toEqual(['2026-03-02', '2026-03-01']);
  });

  it('shows "–" for what an older server does not send', () => {
    const u = usageSummary({ total: { jobs: 0, nodeMinutes: 0, estimatedCost: 0, unpriced: 0 }, perDay: {}, perTag: {} });
    expect(u).toMatchObject({ controlPlaneCost: '–', cpuSeconds: '–', storageTransactions: '–', perJob: [] });
  });
});
