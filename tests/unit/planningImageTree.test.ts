import fc from 'fast-check';
import {
  TransferResult,
  TransferWork,
  TreePlanState,
  initTreePlan,
  isTreeComplete,
  isTreeDone,
  nextTransfers,
  nodesWithoutImages,
  onTransferResults,
  treeDepth,
  treeProgress,
} from '../../shared/core/planning/imageTree';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `n${i}`);
const GOOD = 'sha256:good';
const ctx = (nowMs = 0) => ({ nowMs, rand01: () => 0.5 });
const ok = (w: TransferWork, digests = [GOOD]): TransferResult => ({ nodeId: w.nodeId, ranOnNodeId: w.nodeId, attempt: w.attempt, outcome: 'ok', digests });

/**
 * Runs the issued plan as the nodes would: a registry pull takes `reg` units and starts at once (the planner never
 * issues more than the cap); a copy starts when its source holds the image and one of the source's `fanOut` upload
 * slots is free (copies queued on a source in issue order), and takes 1 unit. Independent of the planner's estimate.
 */
function simulate(work: TransferWork[], fanOut: number, reg: number, holders: string[] = []): Map<string, number> {
  const done = new Map<string, number>(holders.map((h) => [h, 0]));
  const slots = new Map<string, number[]>();
  for (const w of work) {
    if (w.source.kind === 'registry') {
      done.set(w.nodeId, reg);
      continue;
    }
    const src = w.source.nodeId;
    const ready = done.get(src);
    if (ready === undefined) throw new Error(`${w.nodeId} copies from ${src}, which was issued later or never`);
    const s = slots.get(src) ?? new Array<number>(fanOut).fill(0);
    const i = s.indexOf(Math.min(...s));
    const finish = Math.max(ready, s[i]) + 1;
    s[i] = finish;
    slots.set(src, s);
    done.set(w.nodeId, finish);
  }
  return done;
}

describe('image tree: the first plan', () => {
  it('issues every node once, at most registrySlots from the registry, and finishes in one registry pull plus ⌈log(N/seeds)⌉ copies', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 300 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        (n, slots, fanOut, reg) => {
          const plan = initTreePlan({ nodes: ids(n), images: ['img'], registrySlots: slots, fanOut, registryRounds: reg });
          const { state, work } = nextTransfers(plan, 0);
          expect(work.map((w) => w.nodeId).sort()).toEqual(ids(n).sort());
          const fromRegistry = work.filter((w) => w.source.kind === 'registry');
          expect(fromRegistry.length).toBe(Math.min(n, slots));
          for (const w of work) if (w.source.kind === 'peer') expect(w.source.nodeId).not.toBe(w.nodeId);
          const finish = simulate(work, fanOut, reg);
          const last = Math.max(...finish.values());
          // The planner's default queue cap (8 copies per source) is part of the optimum: a seed serves 8 at most.
          expect(last).toBe(reg + treeDepth(n, Math.min(n, slots), fanOut, 8));
          // No source has more than maxQueuePerSource copies queued on it.
          const perSource = new Map<string, number>();
          for (const w of work) if (w.source.kind === 'peer') perSource.set(w.source.nodeId, (perSource.get(w.source.nodeId) ?? 0) + 1);
          for (const c of perSource.values()) expect(c).toBeLessThanOrEqual(state.maxQueuePerSource);
          // Each source serves its copies in issue order: turns 0, 1, 2, … per source.
          const turns = new Map<string, number[]>();
          for (const w of work) if (w.source.kind === 'peer') turns.set(w.source.nodeId, [...(turns.get(w.source.nodeId) ?? []), w.turn!]);
          for (const t of turns.values()) expect(t).toEqual(t.map((_, i) => i));
          // Deterministic: the same input gives the same plan.
          expect(nextTransfers(plan, 0).work).toEqual(work);
        },
      ),
      {
        numRuns: 200,
        examples: [
          [127, 2, 3, 1],
          [512, 1, 1, 1],
        ],
      },
    );
  });

  it('100 nodes, 10 seeds: 4 copy rounds; every seed serves at most 4 nodes over the whole tree', () => {
    const { work } = nextTransfers(initTreePlan({ nodes: ids(100), images: ['img'] }), 0);
    expect(Math.max(...simulate(work, 1, 1).values())).toBe(1 + 4);
    const served = new Map<string, number>();
    for (const w of work) if (w.source.kind === 'peer') served.set(w.source.nodeId, (served.get(w.source.nodeId) ?? 0) + 1);
    for (let i = 0; i < 10; i++) expect(served.get(`n${i}`)).toBeLessThanOrEqual(4);
    expect(treeDepth(100, 10)).toBe(4);
    expect(treeDepth(40, 10)).toBe(2);
    expect(treeDepth(10, 10)).toBe(0);
    // Capped: 2 seeds with 3 upload slots would each serve 9 copies for 127 nodes in 3 rounds; 8 at most takes 4.
    expect(treeDepth(127, 2, 3)).toBe(3);
    expect(treeDepth(127, 2, 3, 8)).toBe(4);
    expect([treeDepth(512, 1, 1), treeDepth(512, 1, 1, 8)]).toEqual([9, 10]);
  });

  it('with holders from an earlier round, nobody pulls from the registry', () => {
    const plan = initTreePlan({ nodes: ['r0', 'r1', 'r2'], holders: ['h0', 'h1'], images: ['img'], pinnedDigests: [GOOD] });
    const { work } = nextTransfers(plan, 0);
    expect(work.every((w) => w.source.kind === 'peer')).toBe(true);
    expect(work.every((w) => w.expectedDigests?.[0] === GOOD)).toBe(true);
    expect(work.map((w) => (w.source as { nodeId: string }).nodeId).slice(0, 2)).toEqual(['h0', 'h1']);
  });

  it('refuses duplicate nodes, a holder that is also to be covered, and a pinned list of the wrong length', () => {
    expect(() => initTreePlan({ nodes: ['a', 'a'], images: ['i'] })).toThrow('unique');
    expect(() => initTreePlan({ nodes: ['a'], holders: ['a'], images: ['i'] })).toThrow('unique');
    expect(() => initTreePlan({ nodes: ['a'], images: ['i', 'j'], pinnedDigests: ['x'] })).toThrow('one digest per image');
    expect(() => initTreePlan({ nodes: ['a'], images: ['i'], fanOut: 0 })).toThrow('fanOut');
  });
});

describe('image tree: failures', () => {
  it('a seed that fails: the nodes waiting on it move to other holders, and the registry is not asked again beyond the cap', () => {
    let s = initTreePlan({ nodes: ids(40), images: ['img'], registrySlots: 10 });
    const first = nextTransfers(s, 0);
    s = first.state;
    const waitingOnN0 = first.work.filter((w) => w.source.kind === 'peer' && w.source.nodeId === 'n0');
    expect(waitingOnN0.length).toBeGreaterThan(0);
    // n0's pull fails (not transient); n1..n9 succeed; n0's children report the source lost.
    s = onTransferResults(
      s,
      [
        { nodeId: 'n0', ranOnNodeId: 'n0', attempt: 1, outcome: 'failed', message: 'disk full' },
        ...first.work.filter((w) => /^n[1-9]$/.test(w.nodeId)).map((w) => ok(w)),
        ...waitingOnN0.map((w): TransferResult => ({
          nodeId: w.nodeId,
          ranOnNodeId: w.nodeId,
          attempt: w.attempt,
          outcome: 'sourceLost',
          message: 'source node n0 failed to get the image',
        })),
      ],
      ctx(1000),
    );
    expect(s.pinned).toEqual([GOOD]);
    const second = nextTransfers(s, 1000);
    for (const w of second.work) {
      if (waitingOnN0.some((x) => x.nodeId === w.nodeId)) {
        expect(w.source).not.toEqual({ kind: 'peer', nodeId: 'n0' });
        expect(w.source.kind).toBe('peer');
      }
    }
    // n0 waits out its backoff, then pulls again from the registry (it is a seed), within the cap.
    expect(second.work.some((w) => w.nodeId === 'n0')).toBe(false);
    expect(second.wakeAtMs).toBeGreaterThan(1000);
    const third = nextTransfers(second.state, second.wakeAtMs!);
    expect(third.work.find((w) => w.nodeId === 'n0')?.source).toEqual({ kind: 'registry' });
    // A holder no longer reached by its first child is only suspect after maxLostByPerSource children lost it.
    expect(second.state.nodes.n0.lostBy).toBe(0);
  });

  it('when every seed is gone, nodes fall back to the registry, never more than the cap at once', () => {
    let s = initTreePlan({ nodes: ids(30), images: ['img'], registrySlots: 3, maxAttempts: 1 });
    const first = nextTransfers(s, 0);
    s = first.state;
    // Every node's source became unusable to it: each avoids all others by losing them one after the other.
    for (const id of ids(30)) s = { ...s, nodes: { ...s.nodes, [id]: { ...s.nodes[id], inFlight: null, avoid: ids(30).filter((x) => x !== id) } } };
    const next = nextTransfers(s, 0);
    expect(next.work.length).toBe(3);
    expect(next.work.every((w) => w.source.kind === 'registry')).toBe(true);
  });

  it('a copy with the wrong digest fails the node with a clear message, the source serves nobody else, the node retries from another', () => {
    let s = initTreePlan({ nodes: ids(12), images: ['img'], registrySlots: 2, maxQueuePerSource: 20 });
    const first = nextTransfers(s, 0);
    s = onTransferResults(
      first.state,
      first.work.filter((w) => w.source.kind === 'registry').map((w) => ok(w)),
      ctx(),
    );
    const copy = first.work.find((w) => w.source.kind === 'peer')!;
    s = onTransferResults(s, [ok(copy, ['sha256:evil'])], ctx());
    expect(s.nodes[copy.nodeId].holds).toBe(false);
    expect(s.nodes[copy.nodeId].badDigest).toBe(true);
    expect(s.nodes[copy.nodeId].lastMessage).toBe(
      `image digest mismatch on node ${copy.nodeId}: got sha256:evil from node ${(copy.source as { nodeId: string }).nodeId}, expected ${GOOD}`,
    );
    expect(s.failure).toBeUndefined();
    const again = nextTransfers(s, 10 ** 9).work.find((w) => w.nodeId === copy.nodeId)!;
    expect(again.source).not.toEqual(copy.source);
    expect(again.expectedDigests).toEqual([GOOD]);
    // Nodes issued later never pick the node that held the wrong image.
    expect(nextTransfers(s, 10 ** 9).work.every((w) => w.source.kind !== 'peer' || w.source.nodeId !== copy.nodeId)).toBe(true);
  });

  it('two registry pulls with different digests: the tag moved, the plan fails saying so', () => {
    const first = nextTransfers(initTreePlan({ nodes: ids(4), images: ['app:1'], registrySlots: 2 }), 0);
    const [a, b] = first.work.filter((w) => w.source.kind === 'registry');
    const s = onTransferResults(first.state, [ok(a, ['sha256:one']), ok(b, ['sha256:two'])], ctx());
    expect(s.failure?.reason).toBe('digest');
    expect(s.failure?.message).toContain('the tag changed while the job pulled it');
    expect(isTreeDone(s)).toBe(true);
  });

  it('without pinning (SIFs built from docker:// differ per build), seeds may differ; a copy must still match its own source', () => {
    const first = nextTransfers(
      initTreePlan({ nodes: ids(4), images: ['docker://app:1'], registrySlots: 2, pinRegistryDigests: false, maxQueuePerSource: 20 }),
      0,
    );
    const [a, b] = first.work.filter((w) => w.source.kind === 'registry');
    let s = onTransferResults(first.state, [ok(a, ['sha256:one']), ok(b, ['sha256:two'])], ctx());
    expect(s.failure).toBeUndefined();
    expect(s.pinned).toBeUndefined();
    const copies = first.work.filter((w) => w.source.kind === 'peer');
    const fromA = copies.find((w) => (w.source as { nodeId: string }).nodeId === a.nodeId)!;
    const fromB = copies.find((w) => (w.source as { nodeId: string }).nodeId === b.nodeId)!;
    s = onTransferResults(s, [ok(fromA, ['sha256:one']), ok(fromB, ['sha256:one'])], ctx());
    expect(s.nodes[fromA.nodeId].holds).toBe(true);
    expect(s.nodes[fromB.nodeId].holds).toBe(false);
    expect(s.nodes[fromB.nodeId].lastMessage).toBe(`image digest mismatch on node ${fromB.nodeId}: got sha256:one from node ${b.nodeId}, expected sha256:two`);
  });

  it('a permanent registry error fails the plan at once; a success without digests is a failure', () => {
    const first = nextTransfers(initTreePlan({ nodes: ids(3), images: ['x'], registrySlots: 1 }), 0);
    const seed = first.work[0];
    const s = onTransferResults(first.state, [{ ...ok(seed), digests: undefined }], ctx());
    expect(s.nodes[seed.nodeId].lastMessage).toContain('reported no digest');
    const t = onTransferResults(
      first.state,
      [{ nodeId: seed.nodeId, ranOnNodeId: seed.nodeId, attempt: 1, outcome: 'failed', message: 'manifest unknown' }],
      ctx(),
    );
    expect(t.failure?.reason).toBe('permanent');
  });
});

/** Model-based: random interleavings of issuing, results (any outcome, misplaced, wrong digests, duplicates) and time. */
describe('image tree: invariants under random interleavings', () => {
  interface Model {
    now: number;
    inFlight: TransferWork[];
    done: TransferWork[];
    slots: number;
    queue: number;
  }
  interface Real {
    state: TreePlanState;
  }

  class Issue implements fc.Command<Model, Real> {
    check = () => true;
    run(m: Model, r: Real): void {
      const before = r.state;
      const { state, work, wakeAtMs } = nextTransfers(r.state, m.now);
      const canServe = (id: string) =>
        (before.nodes[id].holds || before.nodes[id].inFlight !== null || work.some((w) => w.nodeId === id)) && !before.nodes[id].badDigest;
      for (const w of work) {
        expect(before.nodes[w.nodeId].holds).toBe(false);
        expect(before.nodes[w.nodeId].inFlight).toBeNull();
        expect(m.inFlight.some((f) => f.nodeId === w.nodeId)).toBe(false);
        if (w.source.kind === 'peer') {
          expect(w.source.nodeId).not.toBe(w.nodeId);
          expect(before.nodes[w.nodeId].avoid).not.toContain(w.source.nodeId);
          expect(canServe(w.source.nodeId)).toBe(true);
        }
        if (before.pinned) expect(w.expectedDigests).toEqual(before.pinned);
      }
      if (wakeAtMs !== undefined) expect(wakeAtMs).toBeGreaterThan(m.now);
      m.inFlight.push(...work);
      r.state = state;
      // The registry never sees more than its slots; no source has more than its queue.
      expect(m.inFlight.filter((w) => w.source.kind === 'registry').length).toBeLessThanOrEqual(m.slots);
      const perSource = new Map<string, number>();
      for (const w of m.inFlight) if (w.source.kind === 'peer') perSource.set(w.source.nodeId, (perSource.get(w.source.nodeId) ?? 0) + 1);
      for (const c of perSource.values()) expect(c).toBeLessThanOrEqual(m.queue);
      expect(treeProgress(r.state).inFlight).toBe(m.inFlight.length);
    }
    toString = () => 'issue';
  }

  class Result implements fc.Command<Model, Real> {
    constructor(
      readonly pick: number,
      readonly outcome: 'ok' | 'bad' | 'failed' | 'throttled' | 'sourceLost',
      readonly misplaced: number | null,
      readonly duplicate: boolean,
    ) {}
    check = (m: Readonly<Model>) => m.inFlight.length > 0;
    run(m: Model, r: Real): void {
      const w = m.inFlight[this.pick % m.inFlight.length];
      const all = r.state.order;
      const ranOn = this.misplaced === null ? w.nodeId : all[this.misplaced % all.length];
      const res: TransferResult = {
        nodeId: w.nodeId,
        ranOnNodeId: ranOn,
        attempt: w.attempt,
        outcome: this.outcome === 'bad' ? 'ok' : this.outcome,
        ...(this.outcome === 'ok'
          ? { digests: [GOOD] }
          : this.outcome === 'bad'
            ? { digests: ['sha256:bad'] }
            : { message: this.outcome === 'throttled' ? 'toomanyrequests' : 'boom' }),
      };
      const before = r.state;
      r.state = onTransferResults(r.state, this.duplicate ? [res, res] : [res], ctx(m.now));
      m.inFlight = m.inFlight.filter((x) => x !== w);
      m.done.push(w);
      const after = r.state.nodes[w.nodeId];
      // A node holds the image only through a good digest (or another node's good copy landing on it).
      // The first success pins the digests; later ones must match them.
      const digest = res.digests?.[0];
      const accepted = digest !== undefined && (!before.pinned || before.pinned[0] === digest);
      if (!before.nodes[w.nodeId].holds && ranOn === w.nodeId) expect(after.holds).toBe(accepted);
      for (const id of all) if (r.state.nodes[id].holds && r.state.nodes[id].digests) expect(r.state.nodes[id].digests).toEqual(r.state.pinned);
      // A stale repeat changes nothing.
      expect(onTransferResults(r.state, [res], ctx(m.now))).toEqual(r.state);
    }
    toString = () => `result(${this.pick},${this.outcome},${this.misplaced},${this.duplicate})`;
  }

  class Tick implements fc.Command<Model, Real> {
    constructor(readonly ms: number) {}
    check = () => true;
    run(m: Model): void {
      m.now += this.ms;
    }
    toString = () => `tick(${this.ms})`;
  }

  it('holds for any sequence', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.integer({ min: 1, max: 10 }),
        fc.integer({ min: 1, max: 3 }),
        fc.commands(
          [
            fc.constant(new Issue()),
            fc
              .tuple(
                fc.nat(),
                fc.constantFrom('ok', 'ok', 'ok', 'bad', 'failed', 'throttled', 'sourceLost') as fc.Arbitrary<
                  'ok' | 'bad' | 'failed' | 'throttled' | 'sourceLost'
                >,
                fc.option(fc.nat(), { freq: 5 }),
                fc.boolean(),
              )
              .map(([p, o, mis, dup]) => new Result(p, o, mis, dup)),
            fc.integer({ min: 1, max: 400_000 }).map((ms) => new Tick(ms)),
          ],
          { maxCommands: 150 },
        ),
        (n, slots, queue, cmds) => {
          const state = initTreePlan({
            nodes: ids(n),
            images: ['img'],
            registrySlots: slots,
            maxQueuePerSource: queue,
            maxAttempts: 5,
            maxThrottledAttempts: 20,
            maxSourceLosses: 30,
          });
          fc.modelRun(() => ({ model: { now: 0, inFlight: [], done: [], slots, queue }, real: { state } }), cmds);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('always terminates with every node holding the image when transfers keep succeeding', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 120 }), fc.integer({ min: 1, max: 10 }), fc.array(fc.nat(), { maxLength: 30 }), (n, slots, faults) => {
        let s = initTreePlan({ nodes: ids(n), images: ['img'], registrySlots: slots, maxSourceLosses: 100 });
        let now = 0;
        let registryTransfers = 0;
        let losses = 0;
        for (let round = 0; round < 200 && !isTreeDone(s); round++) {
          const next = nextTransfers(s, now);
          s = next.state;
          const flying = Object.entries(s.nodes)
            .filter(([, x]) => x.inFlight)
            .map(([id, x]) => ({ id, f: x.inFlight! }));
          const results: TransferResult[] = flying.map(({ id, f }, i) => {
            const lose = faults.includes(round * 1000 + i) && f.source.kind === 'peer';
            if (lose) losses++;
            if (f.source.kind === 'registry') registryTransfers++;
            return lose
              ? { nodeId: id, ranOnNodeId: id, attempt: f.attempt, outcome: 'sourceLost', message: 'ssh: connect to host: Connection refused' }
              : { nodeId: id, ranOnNodeId: id, attempt: f.attempt, outcome: 'ok', digests: [GOOD] };
          });
          s = onTransferResults(s, results, ctx(now));
          now = next.wakeAtMs ?? now + 1000;
        }
        expect(isTreeComplete(s)).toBe(true);
        expect(nodesWithoutImages(s)).toEqual([]);
        // The seeds' pulls only; a lost source can send its node back to the registry (within the same cap) when no
        // other node can serve it — at most once per loss (counterexample: 2 nodes, 1 slot, the only peer lost).
        if (losses === 0) expect(registryTransfers).toBe(Math.min(n, slots));
        else expect(registryTransfers).toBeLessThanOrEqual(Math.min(n, slots) + losses);
        const p = treeProgress(s);
        expect(p.fromRegistry + p.fromPeers).toBe(n);
      }),
      { numRuns: 100, examples: [[2, 1, [1]]] },
    );
  });
});
