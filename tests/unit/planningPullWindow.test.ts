import fc from 'fast-check';
import {
  PullOutcome,
  PullPlanState,
  PullWork,
  initPullPlan,
  isComplete,
  isDone,
  nextPulls,
  nodesNotPulled,
  onPullResult,
  progress,
} from '../../shared/core/planning/pullWindow';
import { deterministicRand01 } from '../../shared/core/planning/hash';

/** What the test believes independently of the planner. */
interface Model {
  now: number;
  inFlight: PullWork[];
  completed: { work: PullWork; ranOn: string; outcome: PullOutcome; message?: string }[];
  coveredByOk: Set<string>;
  concurrency: number;
  nodes: string[];
}
interface Real {
  state: PullPlanState;
}

class StartCommand implements fc.Command<Model, Real> {
  check(): boolean {
    return true;
  }
  run(m: Model, r: Real): void {
    const before = r.state;
    const { state, work, wakeAtMs } = nextPulls(r.state, m.now);
    for (const w of work) {
      // Never start a node that already holds the images, or one that is already pulling.
      expect(before.nodes[w.nodeId].pulled).toBe(false);
      expect(m.inFlight.some((f) => f.nodeId === w.nodeId)).toBe(false);
      expect(w.images).toEqual(before.images);
    }
    if (wakeAtMs !== undefined) expect(wakeAtMs).toBeGreaterThan(m.now);
    m.inFlight.push(...work);
    r.state = state;
    expect(m.inFlight.length).toBeLessThanOrEqual(m.concurrency);
    expect(progress(r.state).inFlight).toBe(m.inFlight.length);
  }
  toString(): string {
    return 'start';
  }
}

class ResultCommand implements fc.Command<Model, Real> {
  constructor(
    readonly pick: number,
    readonly outcome: PullOutcome,
    readonly misplacedTo: number | null,
    readonly transientMessage: string,
  ) {}
  check(m: Readonly<Model>): boolean {
    return m.inFlight.length > 0;
  }
  run(m: Model, r: Real): void {
    const work = m.inFlight.splice(this.pick % m.inFlight.length, 1)[0];
    const ranOn = this.misplacedTo === null ? work.nodeId : m.nodes[this.misplacedTo % m.nodes.length];
    const message = this.outcome === 'ok' ? undefined : this.transientMessage;
    r.state = onPullResult(
      r.state,
      { nodeId: work.nodeId, ranOnNodeId: ranOn, outcome: this.outcome, attempt: work.attempt, message },
      { nowMs: m.now, rand01: deterministicRand01(`test:${work.workId}`) },
    );
    m.completed.push({ work, ranOn, outcome: this.outcome, message });
    if (this.outcome === 'ok') m.coveredByOk.add(ranOn);
    expect(progress(r.state).inFlight).toBe(m.inFlight.length);
    // A node counts as pulled exactly when some pull really succeeded on it.
    expect(new Set(m.nodes.filter((n) => r.state.nodes[n].pulled))).toEqual(m.coveredByOk);
  }
  toString(): string {
    return `result(${this.pick},${this.outcome},${this.misplacedTo})`;
  }
}

class DuplicateResultCommand implements fc.Command<Model, Real> {
  constructor(readonly pick: number) {}
  check(m: Readonly<Model>): boolean {
    return m.completed.length > 0;
  }
  run(m: Model, r: Real): void {
    const old = m.completed[this.pick % m.completed.length];
    const before = JSON.stringify(r.state);
    r.state = onPullResult(
      r.state,
      { nodeId: old.work.nodeId, ranOnNodeId: old.ranOn, outcome: old.outcome, attempt: old.work.attempt, message: old.message },
      { nowMs: m.now, rand01: 0.5 },
    );
    // A redelivered result for work no longer in flight changes nothing (unless that node is in flight again with the
    // same attempt, which cannot happen: attempts only grow).
    expect(JSON.stringify(r.state)).toBe(before);
  }
  toString(): string {
    return `duplicate(${this.pick})`;
  }
}

class AdvanceCommand implements fc.Command<Model, Real> {
  constructor(readonly ms: number) {}
  check(): boolean {
    return true;
  }
  run(m: Model): void {
    m.now += this.ms;
  }
  toString(): string {
    return `advance(${this.ms})`;
  }
}

const transientMessages = ['toomanyrequests: rate limit', 'HTTP 429', 'read: connection reset by peer', 'ETIMEDOUT', '503 Service Unavailable'];

const commandArb = fc.commands(
  [
    fc.constant(new StartCommand()),
    fc
      .tuple(
        fc.nat(),
        fc.constantFrom<PullOutcome>('ok', 'ok', 'throttled', 'failed'),
        fc.option(fc.nat(), { nil: null, freq: 3 }),
        fc.constantFrom(...transientMessages),
      )
      .map(([p, o, mis, msg]) => new ResultCommand(p, o, mis, msg)),
    fc.nat().map((p) => new DuplicateResultCommand(p)),
    fc.integer({ min: 0, max: 400_000 }).map((ms) => new AdvanceCommand(ms)),
  ],
  { maxCommands: 120 },
);

/** Run to the end with every pull succeeding on its intended node, honouring backoff via wake-ups. */
function drain(m: Model, r: Real): void {
  for (let guard = 0; guard < 10_000 && !isDone(r.state); guard++) {
    const { state, work, wakeAtMs } = nextPulls(r.state, m.now);
    r.state = state;
    m.inFlight.push(...work);
    expect(m.inFlight.length).toBeLessThanOrEqual(m.concurrency);
    const w = m.inFlight.shift();
    if (w) {
      r.state = onPullResult(r.state, { nodeId: w.nodeId, ranOnNodeId: w.nodeId, outcome: 'ok', attempt: w.attempt }, { nowMs: m.now, rand01: 0.3 });
    } else if (wakeAtMs !== undefined) {
      m.now = wakeAtMs;
    } else {
      throw new Error(`stuck: nothing in flight, nothing to start, no wake-up; not pulled: ${nodesNotPulled(r.state)}`);
    }
  }
}

describe('pull window (model-based)', () => {
  it('never exceeds the window, never re-pulls a covered node, and covers every node when pulls eventually succeed', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 25 }), fc.integer({ min: 1, max: 6 }), commandArb, (nodeCount, concurrency, cmds) => {
        const nodes = Array.from({ length: nodeCount }, (_, i) => `tvm-${i}`);
        const state = initPullPlan({
          nodes,
          images: ['registry.local/hpc/mpi:1', 'registry.local/tools:2'],
          concurrency,
          // Only transient errors are generated here; make the limits high enough that "eventually ok" holds.
          maxThrottledAttempts: 1_000,
          maxRedirects: 1_000,
        });
        const m: Model = { now: 1_700_000_000_000, inFlight: [], completed: [], coveredByOk: new Set(), concurrency, nodes };
        const r: Real = { state };
        fc.modelRun(() => ({ model: m, real: r }), cmds);
        drain(m, r);
        expect(r.state.failure).toBeUndefined();
        expect(isComplete(r.state)).toBe(true);
        expect(progress(r.state)).toMatchObject({ pulled: nodeCount, total: nodeCount, failed: 0 });
      }),
      { numRuns: 200 },
    );
  });
});

describe('pull window examples', () => {
  const t0 = 1_000_000;

  it('starts at most `concurrency` pulls and slides the window as results arrive', () => {
    let s = initPullPlan({ nodes: Array.from({ length: 25 }, (_, i) => `n${i}`), images: ['img'] });
    const first = nextPulls(s, t0);
    expect(first.work.map((w) => w.nodeId)).toEqual(Array.from({ length: 10 }, (_, i) => `n${i}`));
    expect(first.work[0]).toEqual({ nodeId: 'n0', images: ['img'], attempt: 1, workId: 'n0#1' });
    s = first.state;
    expect(nextPulls(s, t0).work).toEqual([]);
    s = onPullResult(s, { nodeId: 'n3', ranOnNodeId: 'n3', outcome: 'ok', attempt: 1 }, { nowMs: t0, rand01: 0 });
    const second = nextPulls(s, t0);
    expect(second.work.map((w) => w.nodeId)).toEqual(['n10']);
    expect(progress(second.state)).toEqual({ pulled: 1, total: 25, inFlight: 10, waiting: 0, failed: 0 });
  });

  it('counts a pull that ran elsewhere for the node it ran on and re-issues the intended node', () => {
    let s = nextPulls(initPullPlan({ nodes: ['a', 'b', 'c'], images: ['img'], concurrency: 1 }), t0).state;
    s = onPullResult(s, { nodeId: 'a', ranOnNodeId: 'c', outcome: 'ok', attempt: 1 }, { nowMs: t0, rand01: 0 });
    expect(s.nodes.c).toMatchObject({ pulled: true, coveredBy: 'a' });
    expect(s.nodes.a.pulled).toBe(false);
    const next = nextPulls(s, t0);
    expect(next.work).toEqual([{ nodeId: 'a', images: ['img'], attempt: 2, workId: 'a#2' }]);
    expect(nodesNotPulled(next.state)).toEqual(['a', 'b']);
  });

  it('backs off a throttled node with deterministic jitter and wakes up when the backoff ends', () => {
    const run = (rand01: number) => {
      let s = nextPulls(initPullPlan({ nodes: ['a'], images: ['img'] }), t0).state;
      s = onPullResult(s, { nodeId: 'a', ranOnNodeId: 'a', outcome: 'throttled', attempt: 1, message: 'toomanyrequests' }, { nowMs: t0, rand01 });
      return s;
    };
    const s = run(0.25);
    expect(JSON.stringify(run(0.25))).toBe(JSON.stringify(s)); // replay-safe
    const wait = s.nodes.a.notBeforeMs - t0;
    expect(wait).toBe(2_500); // ceiling 4 s for attempt 1, equal jitter: 2 s + 0.25 * 2 s
    const early = nextPulls(s, t0 + 1_000);
    expect(early.work).toEqual([]);
    expect(early.wakeAtMs).toBe(t0 + 2_500);
    expect(progress(s, t0 + 1_000).waiting).toBe(1);
    expect(nextPulls(s, t0 + 2_500).work).toEqual([{ nodeId: 'a', images: ['img'], attempt: 2, workId: 'a#2' }]);
  });

  it('fails the plan with the node and registry message on a permanent error', () => {
    let s = nextPulls(initPullPlan({ nodes: ['a', 'b'], images: ['reg/x:1'] }), t0).state;
    s = onPullResult(
      s,
      { nodeId: 'b', ranOnNodeId: 'b', outcome: 'failed', attempt: 1, message: 'manifest unknown: manifest tagged by "1" is not found' },
      { nowMs: t0, rand01: 0 },
    );
    expect(s.failure).toEqual({
      nodeId: 'b',
      ranOnNodeId: 'b',
      message: 'manifest unknown: manifest tagged by "1" is not found',
      attempts: 1,
      reason: 'permanent',
    });
    expect(isDone(s)).toBe(true);
    expect(nextPulls(s, t0).work).toEqual([]);
    expect(progress(s).failed).toBe(1);
  });

  it('retries an unclassified failure up to maxAttempts, then fails', () => {
    let s = initPullPlan({ nodes: ['a'], images: ['img'], maxAttempts: 2 });
    let now = t0;
    for (let attempt = 1; attempt <= 2; attempt++) {
      const next = nextPulls(s, now);
      expect(next.work).toHaveLength(1);
      s = onPullResult(next.state, { nodeId: 'a', ranOnNodeId: 'a', outcome: 'failed', attempt, message: 'disk full' }, { nowMs: now, rand01: 0.5 });
      now = s.nodes.a.notBeforeMs;
    }
    expect(s.failure).toMatchObject({ nodeId: 'a', reason: 'maxAttempts', message: 'disk full', attempts: 2 });
  });

  it('treats a failure with a transient message as throttling, and gives up after maxThrottledAttempts', () => {
    let s = initPullPlan({ nodes: ['a'], images: ['img'], maxThrottledAttempts: 3, maxAttempts: 1 });
    let now = t0;
    for (let attempt = 1; attempt <= 3; attempt++) {
      const next = nextPulls(s, now);
      s = onPullResult(
        next.state,
        { nodeId: 'a', ranOnNodeId: 'a', outcome: 'failed', attempt, message: 'read tcp: connection reset by peer' },
        { nowMs: now, rand01: 0.5 },
      );
      if (attempt < 3) expect(s.failure).toBeUndefined();
      now = s.nodes.a.notBeforeMs;
    }
    expect(s.failure).toMatchObject({ reason: 'throttled', attempts: 3 });
    expect(s.failure?.message).toMatch(/connection reset by peer/);
  });

  it('is JSON-serializable at every step', () => {
    let s = initPullPlan({ nodes: ['a', 'b'], images: ['img'] });
    s = nextPulls(s, t0).state;
    expect(JSON.parse(JSON.stringify(s))).toEqual(s);
  });

  it('with no images, every node is already done', () => {
    const s = initPullPlan({ nodes: ['a'], images: [] });
    expect(isComplete(s)).toBe(true);
    expect(nextPulls(s, t0).work).toEqual([]);
  });

  it('rejects duplicate node ids and a non-positive window', () => {
    expect(() => initPullPlan({ nodes: ['a', 'a'], images: ['i'] })).toThrow(/unique/);
    expect(() => initPullPlan({ nodes: ['a'], images: ['i'], concurrency: 0 })).toThrow(/concurrency/);
  });
});
