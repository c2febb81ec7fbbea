/** The CLI's pure parts: where the connection comes from, and the per-stage rows drawn by `watch`. */
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { resolveConnection, defaultProfilePath } from '../../cli/connection';
import { stageRows } from '../../cli/stageRows';
import { targetPath } from '../../cli/commands/download';
import { CliError, ExitCode } from '../../cli/errors';
import type { JobView } from '../../cli/apiClient';
import { unseenTail } from '../../cli/commands/logs';
import { attemptLines, formatJob, preflightText, progressLine, queueText, statusLine } from '../../cli/format';

describe('resolveConnection', () => {
  let home: string;
  beforeAll(() => {
    home = mkdtempSync(path.join(os.tmpdir(), 'hpcjob-conn-'));
  });
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it('takes each value from flags, then the environment, then the profile file', () => {
    const env = { HOME: home, XDG_CONFIG_HOME: '' };
    const file = defaultProfilePath(env);
    expect(file).toBe(path.join(home, '.config', 'hpcjob', 'config.json'));
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(file, JSON.stringify({ endpoint: 'http://profile.example:7071/', key: 'profile-key' }));
    expect(resolveConnection({}, env)).toEqual({ endpoint: 'http://profile.example:7071', key: 'profile-key' });
    expect(resolveConnection({}, { ...env, HPCJOB_KEY: 'env-key' })).toEqual({ endpoint: 'http://profile.example:7071', key: 'env-key' });
    expect(
      resolveConnection({ endpoint: 'https://flag.example', key: 'flag-key' }, { ...env, HPCJOB_ENDPOINT: 'http://env.example', HPCJOB_KEY: 'env-key' }),
    ).toEqual({ endpoint: 'https://flag.example', key: 'flag-key' });
  });

  it('refuses a missing endpoint, a missing explicit profile and a non-URL with exit code 2', () => {
    const empty = { HOME: path.join(home, 'nowhere') };
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return err instanceof CliError ? err.exitCode : -1;
      }
      return 0;
    };
    expect(code(() => resolveConnection({}, empty))).toBe(ExitCode.Usage);
    expect(code(() => resolveConnection({ profile: path.join(home, 'missing.json') }, empty))).toBe(ExitCode.Usage);
    expect(code(() => resolveConnection({ endpoint: 'not a url' }, empty))).toBe(ExitCode.Usage);
    const bad = path.join(home, 'bad.json');
    writeFileSync(bad, '{"endpoint": 7}');
    expect(code(() => resolveConnection({ profile: bad }, empty))).toBe(ExitCode.Usage);
  });
});

describe('stageRows', () => {
  const view = (state: string, progress: NonNullable<JobView['progress']>['progress']): JobView =>
    ({ id: 'j', name: 'n', state, stage: state, progress: { stage: state, progress } }) as JobView;

  it('maps the live counters and marks stages not reached yet as waiting', () => {
    const rows = stageRows(view('Provisioning', { nodesReady: { done: 1, total: 4 } }));
    expect(rows.map((r) => r.label)).toEqual(['nodes ready', 'images pulled', 'shards staged', 'shards on nodes', 'MPI running', 'cleanup']);
    expect(rows[0]).toMatchObject({ done: 1, total: 4 });
    expect(rows[2]).toMatchObject({ done: 0, note: 'waiting' });
    expect(rows[5]).toMatchObject({ done: 0, total: 1, note: 'waiting' });
  });

  it('fills every bar of a finished job, skipped stages included', () => {
    const rows = stageRows(
      view('Succeeded', {
        nodesReady: { done: 2, total: 2 },
        shardsStaged: { done: 0, total: 0 },
        mpi: { state: 'completed' },
        cleanup: { done: ['batch job terminated', 'pool deleted'] },
      }),
    );
    const byKey = Object.fromEntries(rows.map((r) => [r.key, r]));
    expect(byKey.images.note).toBe('skipped');
    expect(byKey.staged.note).toBe('nothing to do');
    expect(byKey.mpi).toMatchObject({ done: 1, total: 1, note: 'completed' });
    expect(byKey.cleanup).toMatchObject({ done: 2, total: 2, note: 'batch job terminated, pool deleted' });
    expect(byKey.outputs).toBeUndefined();
  });

  it('a job whose nodes upload outputs after the MPI task has a row for them', () => {
    const rows = stageRows(view('Running', { mpi: { state: 'completed' }, outputsUploaded: { done: 1, total: 3 } }));
    expect(rows.map((r) => r.label)).toEqual([
      'nodes ready',
      'images pulled',
      'shards staged',
      'shards on nodes',
      'MPI running',
      'outputs uploaded',
      'cleanup',
    ]);
    expect(rows[5]).toMatchObject({ key: 'outputs', done: 1, total: 3 });
  });
});

describe('download targets (blob names come from storage: none may leave the directory)', () => {
  it('keeps the layout below the prefix and refuses names that would escape', () => {
    expect(targetPath('/tmp/out', 'logs/ranks/1/rank.0/stdout')).toBe(path.join('/tmp/out', 'logs', 'ranks', '1', 'rank.0', 'stdout'));
    for (const bad of ['../x', 'a/../../x', '/etc/passwd', 'a//b', './a', 'a\\..\\b', '', 'a/\0b']) expect(targetPath('/tmp/out', bad)).toBeUndefined();
  });
});

describe('unseenTail (logs --follow after the node is gone)', () => {
  it('prints only what the recorded tail has beyond the text already printed', () => {
    expect(unseenTail('a\nb\nc\n', 'b\nc\nd\n')).toBe('d\n');
    expect(unseenTail('a\nb\n', 'a\nb\n')).toBe('');
    expect(unseenTail('', 'x\n')).toBe('x\n');
    // Recorded tails end without the file's final line break.
    expect(unseenTail('a\nb\nc\n', 'b\nc')).toBe('');
    expect(unseenTail('a\nb\n', 'a\nb\nc')).toBe('c');
    // Nothing in common: the whole tail (the live reads saw none of it).
    expect(unseenTail('a\n', 'x\ny\n')).toBe('x\ny\n');
    // The recorded tail keeps whole lines without the file's last newline.
    expect(unseenTail('tick 1\ntick 2\n', 'tick 1\ntick 2')).toBe('');
    expect(unseenTail('tick 1\n', 'tick 1\ntick 2')).toBe('tick 2');
  });
});

describe('a queued job in status and watch', () => {
  const queued: JobView = { id: 'q1', name: 'q1', state: 'Queued', stage: 'Queued' };

  it('shows its place in the queue and why it waits', () => {
    const view: JobView = {
      ...queued,
      queue: {
        name: 'default',
        state: 'waiting',
        position: 3,
        positionOverall: 7,
        waitingInQueue: 12,
        reason: 'standardHBv3Family: 720 of 720 cores in use, the job needs 240',
      },
    };
    expect(queueText(view)).toBe('#3 of 12 in queue default (#7 overall) · waiting for standardHBv3Family: 720 of 720 cores in use, the job needs 240');
    expect(statusLine(view)).toBe(
      'Queued        #3 of 12 in queue default (#7 overall) · waiting for standardHBv3Family: 720 of 720 cores in use, the job needs 240',
    );
    expect(formatJob(view).split('\n')).toContain(
      'queue    #3 of 12 in queue default (#7 overall) · waiting for standardHBv3Family: 720 of 720 cores in use, the job needs 240',
    );
  });

  it("shows the dependencies it waits for, from the run's own report, and nothing once it left the queue", () => {
    expect(
      queueText({ ...queued, queue: { name: 'default', state: 'notQueued' }, progress: { queue: { waitingFor: 'dependencies', pending: ['prep', 'mesh'] } } }),
    ).toBe('waiting for dependencies: prep, mesh');
    expect(queueText({ ...queued, queue: { name: 'urgent', state: 'granted', grant: 41 } })).toBe('admitted (grant 41) in queue urgent');
    expect(queueText({ ...queued, state: 'Running', queue: { name: 'default', state: 'waiting', position: 1 } })).toBeUndefined();
  });
});

describe('attempts and the preflight check in status and watch', () => {
  const base: JobView = { id: 'r1', name: 'r1', state: 'Succeeded', stage: 'Succeeded' };
  const at = '2026-11-23T10:00:00Z';

  it('lists every attempt of a job that retried, with why it ended and what came next', () => {
    const view: JobView = {
      ...base,
      result: {
        timings: {},
        attempts: [
          {
            attempt: 1,
            startedAt: at,
            endedAt: at,
            nodes: ['n1', 'n2'],
            outcome: 'failed',
            failureClass: 'nodeFailure',
            reason: 'node n2 became unusable',
            retried: true,
            retryAfterMs: 30_000,
            replacedNodes: ['n2'],
            nodeMinutes: 2,
          },
          { attempt: 2, startedAt: at, endedAt: at, nodes: ['n1', 'n3'], outcome: 'succeeded', nodeMinutes: 3 },
        ],
      },
    };
    expect(attemptLines(view)).toEqual([
      'attempts #1 failed on 2 node(s) (nodeFailure: node n2 became unusable); retried after 30 s, replacing n2',
      '         #2 succeeded on 2 node(s)',
    ]);
    expect(formatJob(view)).toContain('attempts #1 failed');
    // One attempt that was not retried says nothing: the error line tells it.
    expect(
      attemptLines({
        ...base,
        result: { timings: {}, attempts: [{ attempt: 1, startedAt: at, endedAt: at, nodes: ['n1'], outcome: 'succeeded', nodeMinutes: 1 }] },
      }),
    ).toEqual([]);
  });

  it('shows the last check with its worst figures and the nodes it replaced; the live line shows the check and the attempt', () => {
    const view: JobView = {
      ...base,
      result: {
        timings: {},
        preflight: {
          rounds: 2,
          passed: true,
          pingPong: 'measured over 2 pair(s)',
          replaced: ['n2'],
          nodes: {
            n1: { ok: true, ip: '10.0.0.4', latencyUs: 2.1, bandwidthMBps: 11000, problems: [] },
            n3: { ok: true, ip: '10.0.0.6', latencyUs: 3.4, bandwidthMBps: 9000, problems: [] },
          },
        },
      },
    };
    expect(preflightText(view)).toBe(
      'passed on 2 node(s) after 2 check(s): worst latency 3.4 µs, worst bandwidth 9000 MB/s (measured over 2 pair(s)); replaced n2',
    );
    expect(formatJob(view).split('\n')).toContain(`preflight ${preflightText(view)}`);
    expect(progressLine({ progress: { progress: { preflight: { state: 'replacing', round: 2 }, attempt: { current: 2, max: 3 } } } })).toBe(
      'preflight replacing (check 2) · attempt 2/3',
    );
  });
});
