/** The dashboard's pure view model (web/src/model.ts) and its build (web/build.ts), without a browser. */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import {
  attemptRows,
  costSummary,
  displayedNodes,
  preflightRows,
  shortNodeLabels,
  exitCodes,
  formatDuration,
  jobDurationMs,
  jobHref,
  listQuery,
  nodeCells,
  nodeStateCounts,
  parseRoute,
  progressBars,
  queueSummary,
  stageSpans,
  type JobView,
} from '../../web/src/model';
import { buildPage, GENERATED, renderModule } from '../../web/build';

const base: JobView = {
  id: 'j1',
  name: 'j1',
  tags: {},
  state: 'Running',
  stage: 'Running',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:01:00.000Z',
};

describe('dashboard view model', () => {
  it('says where a queued job stands: its place and why it waits, or the dependencies it waits for', () => {
    const queued: JobView = { ...base, state: 'Queued', stage: 'Queued' };
    expect(
      queueSummary({
        ...queued,
        queue: { name: 'default', state: 'waiting', position: 2, waitingInQueue: 9, positionOverall: 4, reason: 'pools: 5 of 5 in use' },
      }),
    ).toBe('Number 2 of 9 in queue default (4 overall); waiting for pools: 5 of 5 in use.');
    expect(
      queueSummary({ ...queued, queue: { name: 'default', state: 'notQueued' }, progress: { queue: { waitingFor: 'dependencies', pending: ['prep'] } } }),
    ).toBe('Waiting for prep to finish.');
    expect(queueSummary({ ...base, queue: { name: 'default', state: 'waiting', position: 1 } })).toBeUndefined();
  });

  it('formats durations by magnitude', () => {
    expect(formatDuration(850)).toBe('850 ms');
    expect(formatDuration(42_000)).toBe('42 s');
    expect(formatDuration(185_000)).toBe('3 min 05 s');
    expect(formatDuration(2 * 3600_000 + 7 * 60_000)).toBe('2 h 07 min');
    expect(formatDuration(-1)).toBe('–');
  });

  it('measures a running job to now and a finished one to its last update', () => {
    const now = Date.parse('2026-01-01T00:05:00.000Z');
    expect(jobDurationMs(base, now)).toBe(300_000);
    expect(jobDurationMs({ ...base, state: 'Succeeded' }, now)).toBe(60_000);
  });

  it('builds the list query from the filters, leaving empty ones out', () => {
    expect(listQuery({ state: '', tag: '  ' })).toBe('top=200');
    expect(new URLSearchParams(listQuery({ state: 'Running', tag: 'team=cfd ' })).get('tag')).toBe('team=cfd');
  });

  it('turns transitions into stage spans that end where the next begins', () => {
    const t = (to: string, at: string) => ({ kind: 'transition', to, at: `2026-01-01T00:0${at}.000Z`, reason: to });
    const spans = stageSpans(
      [t('Provisioning', '0:10'), t('Submitted', '0:00'), { kind: 'note', at: '2026-01-01T00:00:05.000Z', reason: 'x' }, t('Running', '1:00')],
      Date.parse('2026-01-01T00:01:30.000Z'),
    );
    expect(spans.map((s) => [s.state, s.durationMs, s.current])).toEqual([
      ['Submitted', 10_000, false],
      ['Provisioning', 50_000, false],
      ['Running', 30_000, true],
    ]);
    const done = stageSpans([t('Running', '0:00'), t('Succeeded', '0:30')], Date.parse('2026-01-01T01:00:00.000Z'));
    expect(done[1]).toMatchObject({ state: 'Succeeded', durationMs: 0, current: false });
  });

  it('orders nodes naturally and counts them in pipeline order', () => {
    fc.assert(
      fc.property(fc.uniqueArray(fc.nat(200), { maxLength: 30 }), (ns) => {
        const cells = nodeCells(Object.fromEntries(ns.map((n) => [`node-${n}`, 'ready'])));
        expect(cells.map((c) => Number(c.id.slice(5)))).toEqual([...ns].sort((a, b) => a - b));
      }),
    );
    const cells = nodeCells({ a: 'running', b: 'allocating', c: 'running', d: 'weird' });
    expect(nodeStateCounts(cells)).toEqual([
      { state: 'allocating', count: 1 },
      { state: 'running', count: 2 },
      { state: 'weird', count: 1 },
    ]);
    // A large job's status carries counts (fitStatus): shown in pipeline order, zero counts left out.
    expect(nodeStateCounts([], { ready: 90, pulling: 10, failed: 0 })).toEqual([
      { state: 'pulling', count: 10 },
      { state: 'ready', count: 90 },
    ]);
  });

  it('shows nodes running while the MPI task runs, then done or failed by their exit codes', () => {
    const progress = { nodes: { n1: 'ready', n2: 'ready', n3: 'ready', n4: 'pulling' }, progress: { mpi: { state: 'running' } } };
    expect(displayedNodes({ ...base, progress })).toEqual({ n1: 'running', n2: 'running', n3: 'running', n4: 'pulling' });
    const logs = [{ node: 'n1', stdout: 'o', stderr: 'e' }];
    const subtasks = [
      { id: 1, nodeId: 'n2', exitCode: 0, state: 'completed' },
      { id: 2, nodeId: 'n3', exitCode: 0, state: 'completed' },
    ];
    expect(displayedNodes({ ...base, state: 'CleaningUp', progress, result: { exitCode: 0, logs, mpi: { subtasks } } })).toEqual({
      n1: 'done',
      n2: 'done',
      n3: 'done',
      n4: 'pulling',
    });
    // mpirun failed on the master while the subtasks ended well: the master is the failed node.
    expect(displayedNodes({ ...base, state: 'Failed', progress, result: { exitCode: 2, logs, mpi: { subtasks } } })).toEqual({
      n1: 'failed',
      n2: 'done',
      n3: 'done',
      n4: 'pulling',
    });
    // A subtask failed (the job's code is its code): that node is the failed one.
    const failing = [subtasks[0], { ...subtasks[1], exitCode: 3 }];
    expect(displayedNodes({ ...base, state: 'Failed', progress, result: { exitCode: 3, logs, mpi: { subtasks: failing } } })).toEqual({
      n1: 'done',
      n2: 'done',
      n3: 'failed',
      n4: 'pulling',
    });
    expect(displayedNodes({ ...base, state: 'Succeeded', progress: { nodes: { n1: 'ready' } } })).toEqual({ n1: 'done' });
    expect(displayedNodes({ ...base, state: 'Cancelled', progress: { nodes: { n1: 'ready' }, progress: { mpi: { state: 'running' } } } })).toEqual({
      n1: 'ready',
    });
  });

  it('labels nodes by what tells them apart', () => {
    expect(shortNodeLabels(['tvmps_abcdef_d-1', 'tvmps_abcdef_d-2'])).toEqual({ 'tvmps_abcdef_d-1': 'ef_d-1', 'tvmps_abcdef_d-2': 'ef_d-2' });
    expect(shortNodeLabels(['tvmps_a1', 'tvmps_b2'])).toEqual({ tvmps_a1: 'mps_a1', tvmps_b2: 'mps_b2' });
    expect(shortNodeLabels(['aaaaaa', 'aaaaaaa'])).toEqual({ aaaaaa: 'aaaaaa', aaaaaaa: 'aaaaaaa' });
    expect(shortNodeLabels(['node-1'])).toEqual({ 'node-1': 'node-1' });
    fc.assert(
      fc.property(fc.uniqueArray(fc.string({ minLength: 6 }), { minLength: 1, maxLength: 8 }), (ids) => {
        const labels = Object.values(shortNodeLabels(ids));
        expect(new Set(labels).size).toBe(ids.length);
      }),
    );
  });

  it('lists progress counters with shard staging first, and MPI exit codes per subtask', () => {
    const bars = progressBars({
      progress: { nodesReady: { done: 2, total: 4 }, shardsStaged: { done: 3, total: 9 }, shardsDownloaded: { done: 0, total: 9 } },
    });
    expect(bars.map((b) => b.label)).toEqual(['Shards staged', 'Shards on nodes', 'Nodes ready']);
    expect(exitCodes(undefined)).toEqual([]);
    const rows = exitCodes({
      exitCode: 0,
      logs: [{ node: 'n1', stdout: '', stderr: '' }],
      mpi: { subtasks: [{ id: 1, nodeId: 'n2', exitCode: 0, state: 'completed' }] },
    });
    expect(rows).toEqual([
      { label: 'mpirun (master)', node: 'n1', exitCode: 0 },
      { label: 'subtask 1', node: 'n2', exitCode: 0, state: 'completed' },
    ]);
  });

  it('summarizes cost from the JobCost shape, or falls back to node-minutes', () => {
    const cost = {
      estimatedCost: 0.0123,
      currency: 'USD',
      nodeMinutes: { dedicated: 4.5, lowPriority: 0, total: 4.5 },
      vmSize: 'Standard_D8s_v5',
      nodes: 3,
      pricePerNodeHour: 0.384,
      priceSource: 'builtin',
      allocatedAt: '2026-01-01T00:00:00.000Z',
      releasedAt: '2026-01-01T00:01:30.000Z',
      minutes: 1.5,
      perStage: {},
    };
    expect(costSummary({ cost })).toEqual({
      estimate: '0.0123 USD',
      nodeMinutes: 4.5,
      detail: 'Standard_D8s_v5 · 3 nodes · 0.384 USD/node-hour · prices: builtin',
      controlPlane: expect.stringMatching(
        /^control plane ≈ 0\.\d{5} USD \(Functions and storage; estimate, prices as of \d{4}-\d{2}-\d{2}, dated fallback\)$/,
      ) as unknown,
    });
    // A VM size missing from the price table: node-minutes, no estimate.
    expect(costSummary({ result: { cost: { ...cost, estimatedCost: undefined, pricePerNodeHour: undefined } } })).toEqual({
      estimate: undefined,
      nodeMinutes: 4.5,
      detail: 'Standard_D8s_v5 · 3 nodes · prices: builtin',
      controlPlane: expect.any(String) as unknown,
    });
    expect(costSummary({ result: { nodeMinutes: 2 } })).toEqual({ nodeMinutes: 2 });
    expect(costSummary({})).toBeUndefined();
  });

  it('shows the attempts of a job that retried and its last preflight check, failed nodes first', () => {
    const at = '2026-01-01T00:00:00.000Z';
    expect(
      attemptRows({
        result: {
          attempts: [
            {
              attempt: 1,
              startedAt: at,
              endedAt: at,
              nodes: ['a', 'b'],
              outcome: 'failed',
              failureClass: 'preflightFailure',
              reason: 'node b: ssh refused',
              retried: true,
              retryAfterMs: 30_000,
              replacedNodes: ['b'],
              nodeMinutes: 1,
            },
            {
              attempt: 2,
              startedAt: at,
              endedAt: at,
              nodes: ['a', 'c'],
              outcome: 'failed',
              failureClass: 'application',
              reason: 'exit 3',
              retried: false,
              retryReason: "the application's exit code 3 is not in retry.exitCodes",
              nodeMinutes: 1,
            },
          ],
        },
      }),
    ).toEqual([
      { attempt: 1, outcome: 'failed', nodes: 2, why: 'preflightFailure: node b: ssh refused', next: `retried after ${formatDuration(30_000)}, replacing b` },
      { attempt: 2, outcome: 'failed', nodes: 2, why: 'application: exit 3', next: "the application's exit code 3 is not in retry.exitCodes" },
    ]);
    expect(attemptRows({ result: { attempts: [{ attempt: 1, startedAt: at, endedAt: at, nodes: ['a'], outcome: 'succeeded', nodeMinutes: 1 }] } })).toEqual([]);
    expect(
      preflightRows({
        result: {
          preflight: {
            rounds: 1,
            passed: false,
            pingPong: 'measured over 2 pair(s)',
            replaced: [],
            nodes: {
              a: { ok: true, ip: '10.0.0.4', latencyUs: 2, bandwidthMBps: 9000, problems: [] },
              b: { ok: false, ip: '10.0.0.5', problems: ['ssh: connection refused'] },
            },
          },
        },
      }),
    ).toEqual({
      summary: 'Failed after 1 check(s), measured over 2 pair(s).',
      rows: [
        { node: 'b', ok: false, latencyUs: undefined, bandwidthMBps: undefined, problems: 'ssh: connection refused' },
        { node: 'a', ok: true, latencyUs: 2, bandwidthMBps: 9000, problems: '' },
      ],
    });
    expect(preflightRows({})).toBeUndefined();
  });

  it('routes by hash, round-tripping any job id', () => {
    expect(parseRoute('')).toEqual({ page: 'list' });
    expect(parseRoute('#/jobs/%E0%A4%A')).toEqual({ page: 'list' });
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), (id) => {
        expect(parseRoute(jobHref(id))).toEqual({ page: 'job', id });
      }),
    );
  });
});

describe('dashboard build', () => {
  it('the committed page module is what web/build.ts makes from the sources', () => {
    expect(readFileSync(GENERATED, 'utf8')).toBe(renderModule(buildPage()));
  });
});
