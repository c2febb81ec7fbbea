/**
 * The admission decision (shared/core/scheduling/admission.ts) and the ledger plans (ledger.ts), property-tested with
 * fast-check: never over-commit, each job admitted at most once, strict order without backfill, the backfill bound
 * over a run of passes, refusal of what can never fit, and liveness on an empty system.
 */
import fc from 'fast-check';
import {
  decideAdmission,
  neverFits,
  queueOrder,
  usageOf,
  type AdmissionLimits,
  type Reservation,
  type WaitingJob,
} from '../../shared/core/scheduling/admission';
import { EMPTY_LEDGER, needsAck, planPass, planReconcile, statusOf, type AdmissionSnapshot } from '../../shared/core/scheduling/ledger';

const FAMILIES = ['fa', 'fb'];
const OWNERS = ['o0', 'o1', 'o2'];

const limitsArb = (opts: { ownCaps?: boolean; backfill?: fc.Arbitrary<number> } = {}): fc.Arbitrary<AdmissionLimits> =>
  fc.record({
    queues: fc.uniqueArray(
      fc.record({
        name: fc.constantFrom('default', 'urgent', 'bulk'),
        priority: fc.integer({ min: -2, max: 2 }),
        maxNodes: opts.ownCaps ? fc.option(fc.integer({ min: 1, max: 10 }), { nil: undefined }) : fc.constant(undefined),
        maxCores: opts.ownCaps ? fc.option(fc.integer({ min: 1, max: 40 }), { nil: undefined }) : fc.constant(undefined),
      }),
      { minLength: 1, maxLength: 3, selector: (q) => q.name },
    ),
    coreQuota: fc.record({
      total: fc.option(fc.integer({ min: 0, max: 80 }), { nil: undefined }),
      families: fc.dictionary(fc.constantFrom(...FAMILIES), fc.integer({ min: 0, max: 60 })),
    }),
    maxPools: fc.option(fc.integer({ min: 0, max: 6 }), { nil: undefined }),
    maxNodes: fc.option(fc.integer({ min: 0, max: 20 }), { nil: undefined }),
    ownerMaxNodes: opts.ownCaps ? fc.option(fc.integer({ min: 1, max: 12 }), { nil: undefined }) : fc.constant(undefined),
    ownerMaxCores: opts.ownCaps ? fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }) : fc.constant(undefined),
    backfillLimit: opts.backfill ?? fc.integer({ min: 0, max: 3 }),
  });

interface JobShape {
  family: string;
  coresPerNode: number;
  nodes: number;
  reuse: boolean;
  owner: string;
  queue: string;
  priority: number;
}

const jobShapeArb: fc.Arbitrary<JobShape> = fc.record({
  family: fc.constantFrom(...FAMILIES),
  coresPerNode: fc.integer({ min: 1, max: 8 }),
  nodes: fc.integer({ min: 1, max: 4 }),
  reuse: fc.integer({ min: 0, max: 4 }).map((n) => n === 0),
  owner: fc.constantFrom(...OWNERS),
  queue: fc.constantFrom('default', 'urgent', 'bulk', 'default', 'default'),
  priority: fc.integer({ min: -1, max: 1 }),
});

function waitingJob(shape: JobShape, i: number, jumpedBy = 0): WaitingJob {
  return {
    jobId: `job-${String(i).padStart(3, '0')}`,
    owner: shape.owner,
    queue: shape.queue,
    priority: shape.priority,
    order: `2030-01-01T00:00:00.000Z|${String(i).padStart(6, '0')}`,
    family: shape.family,
    cores: shape.reuse ? 0 : shape.coresPerNode * shape.nodes,
    nodes: shape.nodes,
    pools: shape.reuse ? 0 : 1,
    jumpedBy,
  };
}

function reservation(shape: JobShape, i: number): Reservation {
  const w = waitingJob(shape, i);
  return {
    jobId: `held-${i}`,
    owner: w.owner,
    queue: w.queue,
    family: w.family,
    cores: w.cores,
    nodes: w.nodes,
    pools: w.pools,
    grantedAt: '2030-01-01T00:00:00.000Z',
    grant: i + 1,
    acked: true,
  };
}

/** Every limited dimension and its value, for a set of holdings. */
function dimensions(
  limits: AdmissionLimits,
  held: (WaitingJob | Reservation)[],
): { name: string; value: number; limit: number | undefined; uses: (j: WaitingJob) => boolean }[] {
  const u = usageOf(held);
  const dims: { name: string; value: number; limit: number | undefined; uses: (j: WaitingJob) => boolean }[] = [
    { name: 'total cores', value: u.totalCores, limit: limits.coreQuota.total, uses: (j) => j.cores > 0 },
    { name: 'pools', value: u.pools, limit: limits.maxPools, uses: (j) => j.pools > 0 },
    { name: 'nodes', value: u.nodes, limit: limits.maxNodes, uses: (j) => j.nodes > 0 },
  ];
  for (const f of FAMILIES)
    dims.push({ name: `cores ${f}`, value: u.familyCores.get(f) ?? 0, limit: limits.coreQuota.families[f], uses: (j) => j.family === f && j.cores > 0 });
  for (const o of OWNERS) {
    dims.push({ name: `owner ${o} nodes`, value: u.owners.get(o)?.nodes ?? 0, limit: limits.ownerMaxNodes, uses: (j) => j.owner === o });
    dims.push({ name: `owner ${o} cores`, value: u.owners.get(o)?.cores ?? 0, limit: limits.ownerMaxCores, uses: (j) => j.owner === o && j.cores > 0 });
  }
  for (const q of limits.queues) {
    dims.push({ name: `queue ${q.name} nodes`, value: u.queues.get(q.name)?.nodes ?? 0, limit: q.maxNodes, uses: (j) => j.queue === q.name });
    dims.push({ name: `queue ${q.name} cores`, value: u.queues.get(q.name)?.cores ?? 0, limit: q.maxCores, uses: (j) => j.queue === q.name && j.cores > 0 });
  }
  return dims;
}

describe('decideAdmission', () => {
  it('never over-commits a limit that an admitted job uses; admits each waiting job at most once; refuses exactly what can never fit', () => {
    fc.assert(
      fc.property(
        limitsArb({ ownCaps: true }),
        fc.array(jobShapeArb, { maxLength: 6 }),
        fc.array(jobShapeArb, { maxLength: 25 }),
        fc.integer({ min: 1, max: 30 }),
        (limits, heldShapes, shapes, cap) => {
          const held = heldShapes.map(reservation);
          const waiting = shapes.map((s, i) => waitingJob(s, i));
          const d = decideAdmission(limits, held, waiting, cap);
          const ids = d.admit.map((j) => j.jobId);
          expect(new Set(ids).size).toBe(ids.length);
          expect(ids.length).toBeLessThanOrEqual(cap);
          for (const j of d.admit) expect(waiting).toContainEqual(j);
          const refused = new Set(d.refuse.map((r) => r.jobId));
          for (const j of waiting) expect(refused.has(j.jobId)).toBe(neverFits(limits, j) !== undefined);
          for (const id of ids) expect(refused.has(id)).toBe(false);
          for (const r of d.refuse) expect(r.reason.length).toBeGreaterThan(10);
          const after = dimensions(limits, [...held, ...d.admit]);
          for (const dim of after) {
            if (dim.limit !== undefined && d.admit.some(dim.uses))
              expect({ dim: dim.name, over: dim.value > dim.limit }).toEqual({ dim: dim.name, over: false });
          }
          // Every job left waiting has a reason.
          for (const j of waiting) if (!ids.includes(j.jobId) && !refused.has(j.jobId)) expect(d.waiting[j.jobId]).toEqual(expect.any(String));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('without backfill and without owner or queue caps, the admitted jobs are a prefix of the order (first come first served within a priority)', () => {
    fc.assert(
      fc.property(
        limitsArb({ backfill: fc.constant(0) }),
        fc.array(jobShapeArb, { maxLength: 4 }),
        fc.array(jobShapeArb, { maxLength: 25 }),
        (limits, heldShapes, shapes) => {
          const waiting = shapes.map((s, i) => waitingJob(s, i));
          const d = decideAdmission(limits, heldShapes.map(reservation), waiting);
          const refused = new Set(d.refuse.map((r) => r.jobId));
          const eligible = queueOrder(limits, waiting)
            .filter((j) => !refused.has(j.jobId))
            .map((j) => j.jobId);
          expect(d.admit.map((j) => j.jobId)).toEqual(eligible.slice(0, d.admit.length));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('on an empty system the first job in order that can ever fit is admitted (no deadlock)', () => {
    fc.assert(
      fc.property(limitsArb({ ownCaps: true }), fc.array(jobShapeArb, { minLength: 1, maxLength: 20 }), (limits, shapes) => {
        const waiting = shapes.map((s, i) => waitingJob(s, i));
        const d = decideAdmission(limits, [], waiting);
        const first = queueOrder(limits, waiting).find((j) => neverFits(limits, j) === undefined);
        if (first) expect(d.admit[0]?.jobId).toBe(first.jobId);
        else expect(d.admit).toEqual([]);
      }),
      { numRuns: 300 },
    );
  });

  it('bounded backfill: over a run of passes with arrivals and completions, no job sees more than backfillLimit later jobs start ahead of it', () => {
    const step = fc.record({ arrivals: fc.array(jobShapeArb, { maxLength: 4 }), completions: fc.integer({ min: 0, max: 3 }) });
    fc.assert(
      fc.property(limitsArb({ backfill: fc.integer({ min: 0, max: 3 }) }), fc.array(step, { minLength: 1, maxLength: 25 }), (limits, steps) => {
        let waiting: WaitingJob[] = [];
        let running: WaitingJob[] = [];
        let n = 0;
        const overtaken = new Map<string, number>();
        const compare = (a: WaitingJob, b: WaitingJob) => queueOrder(limits, [a, b])[0] === a;
        for (const s of steps) {
          waiting.push(...s.arrivals.map((shape) => waitingJob(shape, n++)));
          running = running.slice(s.completions);
          const held = running.map((j, i): Reservation => ({ ...j, jobId: j.jobId, grantedAt: '', grant: i, acked: true }));
          const d = decideAdmission(limits, held, waiting);
          const admitted = new Set(d.admit.map((j) => j.jobId));
          const refused = new Set(d.refuse.map((r) => r.jobId));
          const left = waiting.filter((j) => !admitted.has(j.jobId) && !refused.has(j.jobId));
          for (const j of left) {
            const later = d.admit.filter((a) => compare(j, a)).length;
            overtaken.set(j.jobId, (overtaken.get(j.jobId) ?? 0) + later);
            expect({ job: j.jobId, overtaken: overtaken.get(j.jobId)! <= limits.backfillLimit }).toEqual({ job: j.jobId, overtaken: true });
          }
          running.push(...d.admit);
          waiting = left.map((j) => ({ ...j, jumpedBy: d.jumped[j.jobId] ?? j.jumpedBy }));
        }
      }),
      { numRuns: 400 },
    );
  });

  it('backfill lets a smaller later job start while the head cannot fit, and stops after backfillLimit', () => {
    const limits: AdmissionLimits = { queues: [{ name: 'default', priority: 0 }], coreQuota: { families: { fa: 10 } }, backfillLimit: 2 };
    const held: Reservation[] = [
      { jobId: 'big-running', owner: 'o', queue: 'default', family: 'fa', cores: 6, nodes: 1, pools: 1, grantedAt: '', grant: 1, acked: true },
    ];
    const head = waitingJob({ family: 'fa', coresPerNode: 8, nodes: 1, reuse: false, owner: 'o', queue: 'default', priority: 0 }, 0);
    const small = [1, 2, 3].map((i) => waitingJob({ family: 'fa', coresPerNode: 1, nodes: 1, reuse: false, owner: 'o', queue: 'default', priority: 0 }, i));
    const d = decideAdmission(limits, held, [head, ...small]);
    expect(d.admit.map((j) => j.jobId)).toEqual([small[0].jobId, small[1].jobId]);
    expect(d.jumped).toEqual({ [head.jobId]: 2 });
    expect(d.waiting[small[2].jobId]).toMatch(/behind job-000.*passed 2 time/);
    expect(d.waiting[head.jobId]).toMatch(/fa: 6 of 10 cores in use, the job needs 8/);
  });

  it('a job waiting on its own owner cap holds nobody else back', () => {
    const limits: AdmissionLimits = { queues: [{ name: 'default', priority: 0 }], coreQuota: { families: {} }, ownerMaxNodes: 2, backfillLimit: 0 };
    const held: Reservation[] = [
      { jobId: 'a-running', owner: 'alice', queue: 'default', family: 'fa', cores: 2, nodes: 2, pools: 1, grantedAt: '', grant: 1, acked: true },
    ];
    const alice = waitingJob({ family: 'fa', coresPerNode: 1, nodes: 1, reuse: false, owner: 'alice', queue: 'default', priority: 0 }, 0);
    const bob = waitingJob({ family: 'fa', coresPerNode: 1, nodes: 1, reuse: false, owner: 'bob', queue: 'default', priority: 0 }, 1);
    const d = decideAdmission(limits, held, [alice, bob]);
    expect(d.admit.map((j) => j.jobId)).toEqual([bob.jobId]);
    expect(d.waiting[alice.jobId]).toMatch(/owner alice: 2 of 2 nodes/);
  });

  it('orders by queue priority, then job priority, then submission', () => {
    const limits: AdmissionLimits = {
      queues: [
        { name: 'default', priority: 0 },
        { name: 'urgent', priority: 5 },
      ],
      coreQuota: { families: {} },
      backfillLimit: 0,
    };
    const shape = (queue: string, priority: number): JobShape => ({ family: 'fa', coresPerNode: 1, nodes: 1, reuse: false, owner: 'o', queue, priority });
    const jobs = [
      waitingJob(shape('default', 0), 0),
      waitingJob(shape('default', 3), 1),
      waitingJob(shape('urgent', -1), 2),
      waitingJob(shape('default', 3), 3),
    ];
    expect(queueOrder(limits, jobs).map((j) => j.jobId)).toEqual(['job-002', 'job-001', 'job-003', 'job-000']);
  });
});

describe('the ledger', () => {
  const limits: AdmissionLimits = { queues: [{ name: 'default', priority: 0 }], coreQuota: { families: { fa: 4 } }, backfillLimit: 0 };
  const job = (i: number, cores = 2) => waitingJob({ family: 'fa', coresPerNode: cores, nodes: 1, reuse: false, owner: 'o', queue: 'default', priority: 0 }, i);
  const now = new Date('2030-01-01T00:10:00.000Z');

  it('a pass numbers its grants, deletes the admitted waiting rows, refuses what never fits and acknowledges the asking job', () => {
    const s: AdmissionSnapshot = { ledger: EMPTY_LEDGER, waiting: [job(0), job(1), job(2), job(3, 8)] };
    const p = planPass(s, limits, now, 30_000, 'job-001');
    expect(p.admitted.map((r) => [r.jobId, r.grant, r.acked])).toEqual([
      ['job-000', 1, false],
      ['job-001', 2, true],
    ]);
    expect(p.refused).toEqual([{ jobId: 'job-003', reason: expect.stringMatching(/8 fa cores.*quota for that family is 4/) }]);
    expect(p.deleteWaiting.sort()).toEqual(['job-000', 'job-001', 'job-003']);
    expect(p.ledger?.grantSeq).toBe(2);
    const after: AdmissionSnapshot = { ledger: p.ledger!, waiting: [job(2)] };
    expect(statusOf(after, 'job-000')).toEqual({ state: 'granted', grant: 1, grantedAt: now.toISOString(), queue: 'default' });
    expect(statusOf(after, 'job-003')).toMatchObject({ state: 'refused' });
    expect(statusOf(after, 'job-002')).toEqual({ state: 'waiting' });
    expect(statusOf(after, 'job-009')).toEqual({ state: 'absent' });
    // Nothing fits and nothing is unseen for long: a second pass changes nothing.
    expect(planPass(after, limits, now, 30_000).ledger).toBeUndefined();
    // Later, unseen grants and refusals are re-sent.
    expect(planPass(after, limits, new Date(now.getTime() + 31_000), 30_000).resend.sort()).toEqual(['job-000', 'job-003']);
    // A run that saw its grant (an acknowledgement row) is not sent it again; a pass that changes nothing commits nothing.
    const acked = planPass({ ...after, acks: new Set(['job-000']) }, limits, new Date(now.getTime() + 31_000), 30_000, 'job-003');
    expect(acked.resend).toEqual([]);
    expect(acked.ledger).toBeUndefined();
  });

  it('a release frees the capacity for the next pass; a stale waiting row of a granted job is dropped, never granted twice', () => {
    const first = planPass({ ledger: EMPTY_LEDGER, waiting: [job(0), job(1), job(2)] }, limits, now, 30_000);
    const s: AdmissionSnapshot = { ledger: first.ledger!, waiting: [job(2), job(0)] }; // job-000 enqueued again by a retried call
    const again = planPass(s, limits, now, 30_000);
    expect(again.admitted).toEqual([]);
    expect(again.deleteWaiting).toEqual(['job-000']);
    // job-000 ends: its release row is folded in by the next pass, which gives its cores to job-002 in the same commit.
    const next = planPass({ ledger: again.ledger!, waiting: [job(2)], acks: new Set(['job-000']), releases: new Set(['job-000']) }, limits, now, 30_000);
    expect(next.ledger?.reservations['job-000']).toBeUndefined();
    expect(next.admitted.map((r) => [r.jobId, r.grant])).toEqual([['job-002', 3]]);
    expect(next).toMatchObject({ deleteReleases: ['job-000'], deleteAcks: ['job-000'], deleteWaiting: ['job-002'] });
    // A release of a job that holds nothing only removes its row; a released job still waiting is never granted.
    const idle = planPass({ ledger: next.ledger!, waiting: [job(3, 1)], releases: new Set(['never-there', 'job-003']) }, limits, now, 30_000);
    expect(idle.admitted).toEqual([]);
    expect(idle).toMatchObject({ deleteReleases: ['job-003', 'never-there'], deleteWaiting: ['job-003'] });
  });

  it('a pass folds at most 30 releases and keeps the transaction within 100 operations', () => {
    const wide: AdmissionLimits = { queues: [{ name: 'default', priority: 0 }], coreQuota: { families: {} }, backfillLimit: 0 };
    const many = Array.from({ length: 150 }, (_, i) => job(i));
    const granted = planPass({ ledger: EMPTY_LEDGER, waiting: many }, wide, now, 30_000);
    expect(granted.admitted).toHaveLength(99);
    const ending = new Set(granted.admitted.slice(0, 50).map((r) => r.jobId));
    const next = planPass({ ledger: granted.ledger!, waiting: many.slice(99), acks: ending, releases: ending }, wide, now, 30_000);
    expect(next.deleteReleases).toHaveLength(30);
    const ops = 1 + next.deleteWaiting.length + (next.deleteAcks?.length ?? 0) + (next.deleteReleases?.length ?? 0);
    expect(ops).toBeLessThanOrEqual(100);
    expect(next.admitted).toHaveLength(100 - 1 - 60);
  });

  it('reconciliation drops what ended jobs hold, with their rows; acknowledgements stop re-sends', () => {
    const first = planPass({ ledger: EMPTY_LEDGER, waiting: [job(0), job(1), job(2)] }, limits, now, 30_000);
    const r = planReconcile({ ledger: first.ledger!, waiting: [job(2)], acks: new Set(['job-000', 'job-001']) }, new Set(['job-000', 'job-002']));
    expect(r.dropped.sort()).toEqual(['job-000', 'job-002']);
    expect(Object.keys(r.ledger!.reservations)).toEqual(['job-001']);
    expect(r.deleteWaiting).toEqual(['job-002']);
    expect(r.deleteAcks).toEqual(['job-000']);
    const s: AdmissionSnapshot = { ledger: first.ledger!, waiting: [job(2)], acks: new Set(['job-001']) };
    expect(needsAck(s, 'job-000')).toBe(true);
    expect(needsAck(s, 'job-001')).toBe(false);
    expect(needsAck(s, 'job-002')).toBe(false);
  });
});
