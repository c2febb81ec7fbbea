import fc from 'fast-check';
import {
  isLostRun,
  isStalled,
  planSweep,
  summarise,
  type ObservedJobRow,
  type ObservedOrchestration,
  type SweepObservation,
  type SweepSettings,
  type SweepAction,
} from '../../shared/core/ops/sweepRules';
import { JOB_STATES, isTerminal } from '../../shared/core/state/states';

const S: SweepSettings = { stallLimitMs: 10 * 60_000, graceMs: 2 * 60_000, stagingRetentionMs: 60 * 60_000 };
/** With the (optional) retention purge on: 2 hours. */
const SR: SweepSettings = { ...S, jobsRetentionMs: 120 * 60_000 };
const NOW = '2026-01-01T12:00:00.000Z';
const ago = (min: number) => new Date(Date.parse(NOW) - min * 60_000).toISOString();

function job(id: string, patch: Partial<ObservedJobRow> = {}): ObservedJobRow {
  return { id, state: 'Running', createdAt: ago(30), updatedAt: ago(5), keepsPool: false, ...patch };
}
function obs(patch: Partial<SweepObservation>): SweepObservation {
  return { now: NOW, jobs: new Map(), orchestrations: new Map(), pools: [], batchJobs: [], staging: [], ...patch };
}
const running = (progressMin: number): ObservedOrchestration => ({ runtimeStatus: 'Running', lastUpdatedTime: ago(progressMin), progressAt: ago(progressMin) });

describe('sweep rules', () => {
  it('leaves a healthy running job and its resources alone', () => {
    const o = obs({
      jobs: new Map([['a', job('a')]]),
      orchestrations: new Map([['a', running(1)]]),
      pools: [{ poolId: 'p-a', jobId: 'a', state: 'active', creationTime: ago(30) }],
      batchJobs: [{ batchJobId: 'b-a', jobId: 'a', state: 'active', creationTime: ago(29) }],
      staging: [{ account: 's1', container: 'stg-a', lastModified: ago(120), jobId: 'a' }],
    });
    expect(planSweep(o, S)).toEqual([]);
  });

  it('a lost run (row Running, orchestration purged): terminates its Batch job, deletes its pool and staged data, fails the row', () => {
    const o = obs({
      jobs: new Map([['a', job('a', { updatedAt: ago(3) })]]),
      pools: [{ poolId: 'p-a', jobId: 'a', state: 'active', creationTime: ago(30) }],
      batchJobs: [{ batchJobId: 'b-a', jobId: 'a', state: 'active', creationTime: ago(29) }],
      staging: [{ account: 's1', container: 'stg-a', lastModified: ago(1), jobId: 'a' }],
    });
    const plan = planSweep(o, S);
    expect(plan.map((a) => a.kind)).toEqual(['terminateBatchJob', 'deletePool', 'deleteStaging', 'failJob']);
    expect(plan.every((a) => a.rule === 'lostRun' && a.jobId === 'a')).toBe(true);
    expect(plan.at(-1)!.reason).toMatch(/^lost: orchestration missing/);
  });

  it('a young job without orchestration is in its grace period', () => {
    expect(isLostRun(job('a', { state: 'Submitted', updatedAt: ago(1) }), undefined, Date.parse(NOW), S.graceMs)).toBe(false);
    expect(isLostRun(job('a', { state: 'Submitted', updatedAt: ago(3) }), undefined, Date.parse(NOW), S.graceMs)).toBe(true);
  });

  it('a stalled run is terminated first and failed with reason stalled', () => {
    const o = obs({ jobs: new Map([['a', job('a')]]), orchestrations: new Map([['a', running(11)]]), pools: [{ poolId: 'p', jobId: 'a', state: 'active' }] });
    const plan = planSweep(o, S);
    expect(plan.map((a) => `${a.rule}:${a.kind}`)).toEqual(['stalledRun:terminateOrchestration', 'stalledRun:deletePool', 'stalledRun:failJob']);
    expect(plan.at(-1)!.reason).toMatch(/^stalled: no progress for 660 s \(limit 600 s\)/);
    expect(isStalled(running(9), Date.parse(NOW), S.stallLimitMs)).toBe(false);
    // Progress in the custom status counts even when lastUpdatedTime is old.
    expect(isStalled({ runtimeStatus: 'Running', lastUpdatedTime: ago(60), progressAt: ago(1) }, Date.parse(NOW), S.stallLimitMs)).toBe(false);
  });

  it('deletes the pool of a finished job unless the job keeps it, and the pool of an unknown job after grace', () => {
    const o = obs({
      jobs: new Map([
        ['done', job('done', { state: 'Succeeded' })],
        ['kept', job('kept', { state: 'Failed', keepsPool: true })],
      ]),
      orchestrations: new Map([
        ['done', { runtimeStatus: 'Completed', lastUpdatedTime: ago(5) }],
        ['kept', { runtimeStatus: 'Completed', lastUpdatedTime: ago(5) }],
      ]),
      pools: [
        { poolId: 'p-done', jobId: 'done', state: 'active' },
        { poolId: 'p-kept', jobId: 'kept', state: 'active' },
        { poolId: 'p-unknown-old', jobId: 'ghost', state: 'active', creationTime: ago(10) },
        { poolId: 'p-unknown-new', jobId: 'ghost2', state: 'active', creationTime: ago(1) },
        { poolId: 'p-going', jobId: 'done', state: 'deleting' },
      ],
    });
    expect(
      planSweep(o, S)
        .filter((a) => a.kind === 'deletePool')
        .map((a) => (a as { poolId: string }).poolId),
    ).toEqual(['p-done', 'p-unknown-old']);
  });

  it('deletes a pool past its wall-clock limit plus grace', () => {
    const o = obs({
      jobs: new Map([['a', job('a', { createdAt: ago(100), wallClockLimitMs: 60 * 60_000 })]]),
      orchestrations: new Map([['a', running(1)]]),
      pools: [{ poolId: 'p', jobId: 'a', state: 'active' }],
    });
    expect(planSweep(o, S).map((a) => a.kind)).toEqual(['deletePool']);
  });

  it("counts the wall-clock limit from the pool's creation: time the job waited in the queue does not count", () => {
    const o = obs({
      jobs: new Map([['a', job('a', { createdAt: ago(300), wallClockLimitMs: 60 * 60_000 })]]),
      orchestrations: new Map([['a', running(1)]]),
      pools: [{ poolId: 'p', jobId: 'a', state: 'active', creationTime: ago(30) }],
    });
    expect(planSweep(o, S)).toEqual([]);
    const late = obs({ ...o, pools: [{ poolId: 'p', jobId: 'a', state: 'active', creationTime: ago(100) }] });
    expect(planSweep(late, S).map((a) => a.kind)).toEqual(['deletePool']);
  });

  it("never takes an array's own row (it has no orchestration) for a lost run", () => {
    const o = obs({ jobs: new Map([['arr', job('arr', { state: 'Running', createdAt: ago(300), updatedAt: ago(300), isArray: true })]]) });
    expect(planSweep(o, S)).toEqual([]);
    const plain = obs({ jobs: new Map([['arr', job('arr', { state: 'Running', createdAt: ago(300), updatedAt: ago(300) })]]) });
    expect(planSweep(plain, S).map((a) => a.kind)).toEqual(['failJob']);
  });

  it('terminates an active Batch job whose orchestration ended; staging is kept until retention', () => {
    const o = obs({
      jobs: new Map([
        ['a', job('a', { state: 'Failed', updatedAt: ago(30) })],
        ['b', job('b', { state: 'Succeeded', updatedAt: ago(90) })],
      ]),
      orchestrations: new Map([['a', { runtimeStatus: 'Failed', lastUpdatedTime: ago(30) }]]),
      batchJobs: [
        { batchJobId: 'b-a', jobId: 'a', state: 'active' },
        { batchJobId: 'b-b', jobId: 'b', state: 'completed' },
      ],
      staging: [
        { account: 's1', container: 'stg-a', lastModified: ago(30), jobId: 'a' },
        { account: 's1', container: 'stg-b', lastModified: ago(90), jobId: 'b' },
        { account: 's2', container: 'stg-x', lastModified: ago(61) },
      ],
    });
    expect(planSweep(o, S).map((a) => `${a.kind}:${'batchJobId' in a ? a.batchJobId : 'container' in a ? a.container : ''}`)).toEqual([
      'terminateBatchJob:b-a',
      'deleteStaging:stg-b',
      'deleteStaging:stg-x',
    ]);
  });

  it('purges finished jobs past the retention only when they own nothing and retention is on', () => {
    const o = obs({
      jobs: new Map([
        ['old', job('old', { state: 'Succeeded', updatedAt: ago(130) })],
        ['old-with-pool', job('old-with-pool', { state: 'Failed', updatedAt: ago(130), keepsPool: true })],
        ['young', job('young', { state: 'Succeeded', updatedAt: ago(100) })],
        ['running', job('running', { updatedAt: ago(200) })],
      ]),
      orchestrations: new Map([
        ['old', { runtimeStatus: 'Completed', lastUpdatedTime: ago(130) }],
        ['running', running(1)],
      ]),
      pools: [{ poolId: 'kept', jobId: 'old-with-pool', state: 'active' }],
    });
    expect(planSweep(o, S)).toEqual([]);
    expect(planSweep(o, SR)).toEqual([{ kind: 'purgeJob', rule: 'retention', jobId: 'old', reason: 'job old ended more than 0.1 day(s) ago' }]);
  });

  it('summarises counts per rule and action', () => {
    expect(
      summarise([
        { kind: 'deletePool', rule: 'leakedPool', jobId: 'a', poolId: 'p', reason: '' },
        { kind: 'deletePool', rule: 'leakedPool', jobId: 'b', poolId: 'q', reason: '' },
        { kind: 'failJob', rule: 'lostRun', jobId: 'c', reason: '' },
      ]),
    ).toEqual({ 'leakedPool.deletePool': 2, 'lostRun.failJob': 1 });
  });
});

// Properties over random worlds: the plan only touches what it observed as ours and never a healthy job.
const minutes = fc.integer({ min: 0, max: 300 });
const jobIds = fc.constantFrom('a', 'b', 'c', 'd', 'e');
const world = fc.record({
  jobs: fc.array(
    fc.record({
      id: jobIds,
      state: fc.constantFrom(...JOB_STATES),
      created: minutes,
      updated: minutes,
      keepsPool: fc.boolean(),
      wall: fc.option(fc.integer({ min: 1, max: 200 })),
    }),
  ),
  orchs: fc.array(
    fc.record({
      id: jobIds,
      status: fc.constantFrom('Running', 'Pending', 'Completed', 'Failed', 'Terminated'),
      updated: minutes,
      progress: fc.option(minutes),
    }),
  ),
  pools: fc.array(fc.record({ jobId: fc.constantFrom('a', 'b', 'c', 'd', 'e', 'z'), state: fc.constantFrom('active', 'deleting'), created: minutes })),
  bjs: fc.array(fc.record({ jobId: fc.constantFrom('a', 'b', 'c', 'z'), state: fc.constantFrom('active', 'completed', 'terminating'), created: minutes })),
  staging: fc.array(fc.record({ jobId: fc.option(jobIds), modified: minutes })),
});

type World = typeof world extends fc.Arbitrary<infer T> ? T : never;

function build(w: World): SweepObservation {
  return obs({
    jobs: new Map(
      w.jobs.map((j) => [
        j.id,
        job(j.id, {
          state: j.state,
          createdAt: ago(j.created),
          updatedAt: ago(j.updated),
          keepsPool: j.keepsPool,
          wallClockLimitMs: j.wall === null ? undefined : j.wall * 60_000,
        }),
      ]),
    ),
    orchestrations: new Map(
      w.orchs.map((o) => [o.id, { runtimeStatus: o.status, lastUpdatedTime: ago(o.updated), progressAt: o.progress === null ? undefined : ago(o.progress) }]),
    ),
    pools: w.pools.map((p, i) => ({ poolId: `pool-${i}`, jobId: p.jobId, state: p.state, creationTime: ago(p.created) })),
    batchJobs: w.bjs.map((b, i) => ({ batchJobId: `bj-${i}`, jobId: b.jobId, state: b.state, creationTime: ago(b.created) })),
    staging: w.staging.map((c, i) => ({ account: 's1', container: `stg-${i}`, lastModified: ago(c.modified), jobId: c.jobId ?? undefined })),
  });
}

/** The state a plan's failJob or cancelJob action ends a job in. */
function ended(plan: SweepAction[], id: string): 'Failed' | 'Cancelled' | undefined {
  const a = plan.find((b) => (b.kind === 'failJob' || b.kind === 'cancelJob') && b.jobId === id);
  return a ? (a.kind === 'failJob' ? 'Failed' : 'Cancelled') : undefined;
}

describe('sweep plan properties', () => {
  it('acts only on observed owned resources, at most once each, and fails only non-terminal rows', () => {
    fc.assert(
      fc.property(world, (w) => {
        const o = build(w);
        const plan = planSweep(o, SR);
        const poolIds = new Set(o.pools.map((p) => p.poolId));
        const keys = plan.map((a) =>
          JSON.stringify([a.kind, 'poolId' in a ? a.poolId : 'batchJobId' in a ? a.batchJobId : 'container' in a ? a.container : a.jobId]),
        );
        expect(new Set(keys).size).toBe(keys.length);
        for (const a of plan) {
          if (a.kind === 'deletePool') {
            expect(poolIds.has(a.poolId)).toBe(true);
            expect(o.pools.find((p) => p.poolId === a.poolId)!.state).not.toBe('deleting');
          }
          if (a.kind === 'failJob' || a.kind === 'cancelJob') expect(isTerminal(o.jobs.get(a.jobId)!.state)).toBe(false);
          if (a.kind === 'cancelJob')
            expect(['Terminated', undefined, 'Completed', 'Failed', 'Canceled']).toContain(o.orchestrations.get(a.jobId)?.runtimeStatus);
          if (a.kind === 'purgeJob') {
            expect(isTerminal(o.jobs.get(a.jobId)!.state)).toBe(true);
            expect(plan.filter((b) => b.jobId === a.jobId)).toHaveLength(1);
          }
          if (a.kind === 'terminateOrchestration') expect(plan.some((b) => b.kind === 'failJob' && b.jobId === a.jobId)).toBe(true);
        }
      }),
    );
  });

  it('never touches a job that is running, progressing and within its limits', () => {
    fc.assert(
      fc.property(world, (w) => {
        const o = build(w);
        const healthy = [...o.jobs.values()].filter((j) => {
          const orch = o.orchestrations.get(j.id);
          return (
            !isTerminal(j.state) &&
            orch?.runtimeStatus === 'Running' &&
            !isStalled(orch, Date.parse(NOW), S.stallLimitMs) &&
            (j.wallClockLimitMs === undefined ||
              o.pools
                .filter((p) => p.jobId === j.id)
                .every((p) => Date.parse(NOW) - Date.parse(p.creationTime ?? j.createdAt) <= j.wallClockLimitMs! + S.graceMs))
          );
        });
        const plan = planSweep(o, SR);
        for (const j of healthy) expect(plan.filter((a) => a.jobId === j.id)).toEqual([]);
      }),
    );
  });

  it('is idempotent: once the actions are applied, the next plan is empty', () => {
    fc.assert(
      fc.property(world, (w) => {
        const o = build(w);
        const plan = planSweep(o, SR);
        const purged = (id: string) => plan.some((a) => a.kind === 'purgeJob' && a.jobId === id);
        const after = obs({
          jobs: new Map(
            [...o.jobs].filter(([id]) => !purged(id)).map(([id, j]) => [id, ended(plan, id) ? { ...j, state: ended(plan, id)!, updatedAt: NOW } : j]),
          ),
          orchestrations: new Map(
            [...o.orchestrations]
              .filter(([id]) => !purged(id))
              .map(([id, r]) => [
                id,
                plan.some((a) => a.kind === 'terminateOrchestration' && a.jobId === id) ? { ...r, runtimeStatus: 'Terminated', lastUpdatedTime: NOW } : r,
              ]),
          ),
          pools: o.pools.filter((p) => !plan.some((a) => a.kind === 'deletePool' && a.poolId === p.poolId)),
          batchJobs: o.batchJobs.map((b) =>
            plan.some((a) => a.kind === 'terminateBatchJob' && a.batchJobId === b.batchJobId) ? { ...b, state: 'terminating' } : b,
          ),
          staging: o.staging.filter((c) => !plan.some((a) => a.kind === 'deleteStaging' && a.container === c.container)),
        });
        // Retention may only become due for jobs this plan just finished or cleaned: none of them is old enough.
        expect(planSweep(after, SR).filter((a) => a.kind !== 'purgeJob' || !plan.some((b) => b.jobId === a.jobId))).toEqual([]);
      }),
    );
  });
});
