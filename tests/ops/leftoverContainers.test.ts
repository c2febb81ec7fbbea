/** The container rule (shared/core/ops/leftoverContainers), pure: scenarios, then a property over whole cleanups. */
import fc from 'fast-check';
import {
  MAX_CLEANUP_ATTEMPTS,
  NODE_WAIT_LIMIT_MS,
  cleanupJobIdFor,
  cleanupTaskIdFor,
  planContainerCleanup,
  suspectNodes,
  type ObservedCleanupTask,
  type ObservedContainerJob,
} from '../../shared/core/ops/leftoverContainers';
import { planSweep } from '../../shared/core/ops/sweepRules';

const NOW = Date.parse('2026-11-21T12:00:00Z');
const nodes = (...ids: string[]) => ids.map((id) => ({ id, state: 'idle', affinityId: `aff-${id}` }));
const base: ObservedContainerJob = {
  jobId: 'cfd-1',
  endedAt: '2026-11-21T11:50:00Z',
  poolId: 'shared',
  containers: ['mpijob-cfd-1'],
  batchJobId: 'hpc-cfd-1',
  batchJobState: 'completed',
  release: [
    { nodeId: 'n1', state: 'completed', exitCode: 0 },
    { nodeId: 'n2', state: 'completed', exitCode: 1 },
  ],
  poolNodes: nodes('n1', 'n2', 'n3'),
};

describe('which nodes may still hold the containers', () => {
  it('the nodes where the release task did not verifiably remove them; none while the Batch job has not ended', () => {
    expect(suspectNodes(base)).toEqual({ nodes: ['n2'], why: expect.stringContaining('did not remove') });
    expect(suspectNodes({ ...base, release: [...base.release!, { nodeId: 'n3' }] })?.nodes).toEqual(['n2', 'n3']); // never ran on n3
    expect(suspectNodes({ ...base, batchJobState: 'terminating' })).toBeUndefined();
    expect(suspectNodes({ ...base, batchJobState: 'active' })).toBeUndefined();
  });

  it('with the Batch job gone: the nodes the MPI task ran on, else every node of the pool', () => {
    expect(suspectNodes({ ...base, batchJobState: undefined, release: undefined, ranOn: ['n3', 'n1'] })?.nodes).toEqual(['n1', 'n3']);
    expect(suspectNodes({ ...base, batchJobState: undefined, release: undefined })?.nodes).toEqual(['n1', 'n2', 'n3']);
    expect(suspectNodes({ ...base, batchJobId: undefined, batchJobState: undefined })?.nodes).toEqual([]);
  });
});

describe('planContainerCleanup', () => {
  it('adds one pinned cleanup task per suspect node, in a housekeeping job', () => {
    expect(planContainerCleanup(base, NOW)).toEqual({
      kind: 'cleanContainers',
      jobId: 'cfd-1',
      poolId: 'shared',
      cleanupJobId: cleanupJobIdFor('cfd-1'),
      containers: ['mpijob-cfd-1'],
      tasks: [{ taskId: cleanupTaskIdFor('n2', 1), nodeId: 'n2', affinityId: 'aff-n2' }],
      reason: expect.stringContaining('n2'),
    });
  });

  it('waits while its task runs, then finishes (deleting the housekeeping job) once the task cleaned the node', () => {
    const cleanup = (tasks: ObservedCleanupTask[]) => ({ ...base, cleanup: { batchJobId: 'hpccmi-cfd-1', tasks } });
    const id = cleanupTaskIdFor('n2', 1);
    expect(planContainerCleanup(cleanup([{ taskId: id, state: 'running', nodeId: 'n2' }]), NOW)).toBeUndefined();
    expect(planContainerCleanup(cleanup([{ taskId: id, state: 'completed', exitCode: 0, nodeId: 'n2' }]), NOW)).toEqual({
      kind: 'finishContainerCleanup',
      jobId: 'cfd-1',
      cleanupJobId: 'hpccmi-cfd-1',
      reason: expect.stringContaining('removed by cleanup tasks on n2'),
    });
  });

  it('retries a failed task, and one that ran on another node (affinity is a hint), up to the limit, then gives up and says so', () => {
    const withTasks = (tasks: ObservedCleanupTask[]) => planContainerCleanup({ ...base, cleanup: { batchJobId: 'hpccmi-cfd-1', tasks } }, NOW);
    const t = (attempt: number, exitCode: number, nodeId = 'n2') => ({ taskId: cleanupTaskIdFor('n2', attempt), state: 'completed', exitCode, nodeId });
    expect(withTasks([t(1, 1)])).toMatchObject({ kind: 'cleanContainers', tasks: [{ taskId: cleanupTaskIdFor('n2', 2), nodeId: 'n2' }] });
    expect(withTasks([t(1, 0, 'n3')])).toMatchObject({ kind: 'cleanContainers', tasks: [{ taskId: cleanupTaskIdFor('n2', 2) }] });
    const attempts = Array.from({ length: MAX_CLEANUP_ATTEMPTS }, (_, i) => t(i + 1, 1));
    expect(withTasks(attempts)).toMatchObject({
      kind: 'finishContainerCleanup',
      reason: expect.stringContaining(`gave up on n2 (${MAX_CLEANUP_ATTEMPTS} cleanup tasks failed)`),
    });
  });

  it('finishes at once when nothing is suspect, when the suspect nodes left the pool, or when the pool is gone', () => {
    expect(planContainerCleanup({ ...base, release: [{ nodeId: 'n1', state: 'completed', exitCode: 0 }] }, NOW)).toMatchObject({
      kind: 'finishContainerCleanup',
      reason: expect.stringContaining('removed its containers on every node'),
    });
    expect(planContainerCleanup({ ...base, poolNodes: nodes('n1', 'n3') }, NOW)).toMatchObject({
      kind: 'finishContainerCleanup',
      reason: expect.stringContaining('(n2) have left the pool'),
    });
    expect(planContainerCleanup({ ...base, poolNodes: undefined }, NOW)).toMatchObject({
      kind: 'finishContainerCleanup',
      reason: 'pool shared is gone, and its nodes with it',
    });
  });

  it('waits for a suspect node that cannot run tasks now, for a day after the job ended', () => {
    const offline = { ...base, poolNodes: [...nodes('n1', 'n3'), { id: 'n2', state: 'offline', affinityId: 'aff-n2' }] };
    expect(planContainerCleanup(offline, NOW)).toBeUndefined();
    expect(planContainerCleanup(offline, Date.parse(base.endedAt) + NODE_WAIT_LIMIT_MS + 1)).toMatchObject({
      kind: 'finishContainerCleanup',
      reason: expect.stringContaining('gave up on n2 (offline'),
    });
  });

  it('keeps each housekeeping job id and task id within Batch limits', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[a-z0-9][a-z0-9-]{0,63}$/),
        fc.string({ minLength: 1, maxLength: 80 }),
        fc.integer({ min: 1, max: 99 }),
        (jobId, nodeId, attempt) => {
          expect(cleanupJobIdFor(jobId)).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
          expect(cleanupTaskIdFor(nodeId, attempt)).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
        },
      ),
    );
  });
});

describe('a whole cleanup, sweep after sweep (property)', () => {
  // Each node's cleanup task may fail, run on another node, or succeed; nodes may leave the pool between sweeps.
  const outcome = fc.constantFrom('ok', 'fail', 'elsewhere');
  it('ends within the attempt limit, and only when every suspect node still in the pool was cleaned or given up on', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({ release: fc.constantFrom('ok', 'failed', 'none'), outcomes: fc.array(outcome, { minLength: 1, maxLength: 5 }), leaves: fc.boolean() }),
          { minLength: 1, maxLength: 6 },
        ),
        (spec) => {
          const ids = spec.map((_, i) => `node-${i}`);
          const job: ObservedContainerJob = {
            ...base,
            release: spec.flatMap((n, i) =>
              n.release === 'none' ? [{ nodeId: ids[i] }] : [{ nodeId: ids[i], state: 'completed', exitCode: n.release === 'ok' ? 0 : 1 }],
            ),
            poolNodes: nodes(...ids),
          };
          const suspects = spec.map((n, i) => (n.release === 'ok' ? undefined : ids[i])).filter((x): x is string => !!x);
          const tasks: ObservedCleanupTask[] = [];
          for (let sweep = 0; sweep < 20; sweep++) {
            const action = planContainerCleanup({ ...job, cleanup: tasks.length ? { batchJobId: 'c', tasks } : undefined }, NOW);
            if (!action) throw new Error('nothing to wait for, yet no decision');
            if (action.kind === 'finishContainerCleanup') {
              for (const id of suspects) {
                if (!job.poolNodes!.some((n) => n.id === id)) continue; // left the pool: its containers went with it
                const cleaned = tasks.some((t) => t.nodeId === id && t.exitCode === 0);
                const attempts = tasks.filter((t) => t.taskId.startsWith(cleanupTaskIdFor(id, 0).slice(0, -1))).length;
                expect(cleaned || attempts === MAX_CLEANUP_ATTEMPTS).toBe(true);
              }
              return;
            }
            for (const t of action.tasks) {
              const i = ids.indexOf(t.nodeId);
              const attempt = tasks.filter((x) => x.taskId.startsWith(cleanupTaskIdFor(t.nodeId, 0).slice(0, -1))).length;
              expect(attempt).toBeLessThan(MAX_CLEANUP_ATTEMPTS);
              const o = spec[i].outcomes[Math.min(attempt, spec[i].outcomes.length - 1)];
              const where = o === 'elsewhere' ? ids[(i + 1) % ids.length] : t.nodeId;
              tasks.push({ taskId: t.taskId, state: 'completed', exitCode: o === 'fail' ? 1 : 0, nodeId: where });
            }
            // Between sweeps, nodes marked to leave do so.
            job.poolNodes = job.poolNodes!.filter((n) => !(sweep === 1 && spec[ids.indexOf(n.id)].leaves));
          }
          throw new Error('no finish within 20 sweeps');
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('planSweep with the container rule', () => {
  const empty = { now: new Date(NOW).toISOString(), jobs: new Map(), orchestrations: new Map(), pools: [], staging: [] };
  const settings = { stallLimitMs: 600_000, graceMs: 60_000, stagingRetentionMs: 3_600_000 };

  it('names its actions leftoverContainers, and the leaked-job rule leaves housekeeping jobs to it', () => {
    const cleanupJob = { batchJobId: 'hpccmi-cfd-1', jobId: 'cfd-1', state: 'active', purpose: 'container-cleanup' };
    const plan = planSweep({ ...empty, batchJobs: [cleanupJob], containerJobs: [{ ...base, cleanup: { batchJobId: 'hpccmi-cfd-1', tasks: [] } }] }, settings);
    expect(plan.map((a) => [a.rule, a.kind])).toEqual([['leftoverContainers', 'cleanContainers']]);
  });

  it('deletes a housekeeping job no finished job waits on any more (its job purged, or already found clean)', () => {
    const cleanupJob = { batchJobId: 'hpccmi-gone', jobId: 'gone', state: 'active', purpose: 'container-cleanup' };
    expect(planSweep({ ...empty, batchJobs: [cleanupJob], containerJobs: [] }, settings)).toEqual([
      { kind: 'deleteBatchJob', rule: 'leftoverContainers', jobId: 'gone', batchJobId: 'hpccmi-gone', reason: expect.any(String) },
    ]);
  });

  it('leaves a housekeeping job that Batch is already deleting (it stays listed, state deleting, for a while)', () => {
    const deleting = { batchJobId: 'hpccmi-gone', jobId: 'gone', state: 'deleting', purpose: 'container-cleanup' };
    expect(planSweep({ ...empty, batchJobs: [deleting], containerJobs: [] }, settings)).toEqual([]);
  });
});
