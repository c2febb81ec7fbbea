/**
 * The overlapped pipeline (settings.overlapStaging, PIPELINE_OVERLAP) replayed against typed fakes: the shard copy
 * starts at admission, beside provisioning and the pulls; a node's download starts only after its own pull was seen
 * done and after every shard was copied and its URL minted; neither the preflight nor the MPI task starts before every
 * node's download was seen done. Each property is read from the order of events in the orchestration's history (what
 * the orchestrator had been told when it scheduled something), never from timings. Cancel and failure during the
 * early copy, the deletion of containers a copy wrote before a cancel, and replaced nodes on a retry are covered too.
 */
import { EventType, type HistoryEvent } from '../../local/durable/history';
import type { ActivityInput, MpiResult, MpiTaskObservation, NodeTaskObservation } from '../../shared/core/contract';
import type { PoolObservation } from '../../shared/core/planning/provisionPolicy';
import type { SimResult } from '../durable/helpers/simulator';
import { fakeDigests, fakeNode, healthyJob, poolObservation, preflightReport, fakeIps, type FakeActivities, type FakeJob } from './fakeActivities';
import { cleanupSteps, expectFinishedOnceAndLast, jobInput, replay, scheduled, scheduledInputs, SETTINGS, stagesEntered } from './jobReplay';
import type { MpiJobInput } from '../../shared/core/contract';
import type { ListedInputBlob } from '../../shared/adapters/storage/listing';

const OVERLAP = { ...SETTINGS, overlapStaging: true, stagingAccounts: ['stage0', 'stage1'], copyConcurrency: 2 };

/**
 * `nodes` nodes, one image pulled from the registry one node at a time (the window, so a node's pull ends while others
 * wait for theirs), input data; the overlapped settings.
 */
function overlapJob(id: string, nodes: number): MpiJobInput {
  const input = jobInput(id, {
    nodes,
    command: 'app',
    container: { runtime: 'docker', images: ['registry.example.com/hpc/app:1.0'], pullConcurrency: 1, imageDistribution: 'registry' },
    data: { inputs: [{ account: 'inputsacct', container: 'inputs', prefix: 'deck/' }] },
  });
  return { ...input, settings: OVERLAP };
}

/** 450 MB in five 90 MB blobs: five shards over two staging accounts. */
const fiveShards = (): ListedInputBlob[] =>
  ['a', 'b', 'c', 'd', 'e'].map((n) => ({ account: 'inputsacct', container: 'inputs', name: `deck/${n}.bin`, size: 90_000_000 }));

/**
 * Node tasks that run for a while: a task is `running` at its first `looks(id)` observations, then completes where it
 * was pinned. The pool is still allocating at the first `allocatingLooks` looks.
 */
function slowJob(opts: { nodes: number; allocatingLooks: number; looks: (taskId: string) => number; overrides?: FakeActivities }): FakeJob {
  const seen = new Map<string, number>();
  let poolLooks = 0;
  const observePool = (): PoolObservation => {
    const states = Array.from({ length: opts.nodes }, () => (poolLooks < opts.allocatingLooks ? 'starting' : 'idle'));
    poolLooks++;
    return poolObservation(states);
  };
  const job: FakeJob = healthyJob({
    inputsList: fiveShards,
    poolObserve: observePool,
    nodeTasksObserve: ({ taskIds, digests }) =>
      taskIds.map((id): NodeTaskObservation => {
        const n = (seen.get(id) ?? 0) + 1;
        seen.set(id, n);
        return n <= opts.looks(id) ? { id, state: 'running' } : { id, state: 'completed', exitCode: 0, nodeId: job.pinnedNode(id), ...fakeDigests(digests) };
      }),
    preflightCollect: () => preflightReport(fakeIps(opts.nodes)),
    ...opts.overrides,
  });
  return job;
}

/** Where things happened in the history: scheduling and completion indexes, by activity and by node task id. */
function eventsOf(history: HistoryEvent[]) {
  const scheduledAt = new Map<number, { name: string; input: unknown; index: number }>();
  const added = new Map<string, number>();
  const seenDone = new Map<string, number>();
  const completed: { name: string; index: number }[] = [];
  const scheduledIdx: { name: string; index: number }[] = [];
  history.forEach((e, index) => {
    if (e.EventType === EventType.TaskScheduled) {
      const input = JSON.parse(e.Input ?? 'null') as unknown;
      scheduledAt.set(e.EventId, { name: e.Name!, input, index });
      scheduledIdx.push({ name: e.Name!, index });
      if (e.Name === 'nodeTasksAdd') for (const t of (input as ActivityInput<'nodeTasksAdd'>).tasks) added.set(t.id, index);
    }
    if (e.EventType === EventType.TaskCompleted) {
      const s = scheduledAt.get(e.TaskScheduledId!)!;
      completed.push({ name: s.name, index });
      if (s.name === 'nodeTasksObserve') {
        for (const o of JSON.parse(e.Result!) as NodeTaskObservation[])
          if (o.state === 'completed' && o.exitCode === 0 && !seenDone.has(o.id)) seenDone.set(o.id, index);
      }
    }
  });
  const first = (list: { name: string; index: number }[], name: string) => list.find((x) => x.name === name)?.index ?? -1;
  const last = (list: { name: string; index: number }[], name: string) => [...list].reverse().find((x) => x.name === name)?.index ?? -1;
  return {
    added,
    seenDone,
    firstScheduled: (name: string) => first(scheduledIdx, name),
    lastScheduled: (name: string) => last(scheduledIdx, name),
    allScheduled: (name: string) => scheduledIdx.filter((x) => x.name === name).map((x) => x.index),
    lastCompleted: (name: string) => last(completed, name),
    allCompleted: (name: string) => completed.filter((x) => x.name === name).map((x) => x.index),
  };
}

/** A pull or download task id's node slot and prefix: `dl-a2-1-a1` → { prefix: 'dl-a2', slot: 1 }. */
function parseTaskId(id: string): { prefix: string; slot: number } {
  const m = /^(.*)-(\d+)-a\d+$/.exec(id);
  if (!m) throw new Error(`unexpected node task id ${id}`);
  return { prefix: m[1], slot: Number(m[2]) };
}

/**
 * The ordering rules every overlapped run must keep: a download task added only after the same node's pull was seen
 * done (under the same attempt tag) and after every shard copy and the URL minting completed; the preflight and the
 * MPI task of an attempt only after every download of that attempt's nodes was seen done.
 */
function expectStagingOrder(r: SimResult, tags: string[] = ['']): void {
  const ev = eventsOf(r.history);
  const urlsDone = ev.lastCompleted('shardUrls');
  expect(urlsDone).toBeGreaterThan(Math.max(...ev.allCompleted('shardCopy')));
  const downloads = [...ev.added.keys()].filter((id) => id.startsWith('dl'));
  expect(downloads.length).toBeGreaterThan(0);
  for (const dl of downloads) {
    const { prefix, slot } = parseTaskId(dl);
    const pullPrefix = prefix.replace(/^dl/, 'pull');
    const pulls = [...ev.seenDone.entries()].filter(
      ([id]) => id.startsWith(pullPrefix + '-') && parseTaskId(id).prefix === pullPrefix && parseTaskId(id).slot === slot,
    );
    expect({ dl, pullSeenDone: pulls.length > 0 }).toEqual({ dl, pullSeenDone: true });
    expect(ev.added.get(dl)!).toBeGreaterThan(Math.min(...pulls.map(([, i]) => i)));
    expect(ev.added.get(dl)!).toBeGreaterThan(urlsDone);
  }
  // Every download of the nodes that run an MPI task was seen done before that task (and its preflight) was added.
  const mpiAdds = ev.allScheduled('mpiTaskAdd');
  expect(mpiAdds.length).toBe(tags.length);
  const lastDownloadDone = Math.max(...downloads.map((id) => ev.seenDone.get(id) ?? Infinity));
  expect(lastDownloadDone).toBeLessThan(Infinity);
  const firstAttempt = downloads.filter((d) => parseTaskId(d).prefix === 'dl');
  expect(ev.firstScheduled('preflightTaskAdd')).toBeGreaterThan(Math.max(...firstAttempt.map((d) => ev.seenDone.get(d)!)));
  for (const d of downloads) {
    const owner = tags.findIndex((t) => parseTaskId(d).prefix === `dl${t}`);
    expect(mpiAdds[Math.max(0, owner)]).toBeGreaterThan(ev.seenDone.get(d)!);
  }
}

describe('mpiJob orchestrator with overlapped staging, replayed', () => {
  it('copies from admission beside provisioning; each node downloads after its own pull and the copy; MPI after every download', async () => {
    // Three nodes pulled one at a time (each pull runs 2 looks), the pool allocating for 3 looks.
    const job = slowJob({ nodes: 3, allocatingLooks: 3, looks: (id) => (id.startsWith('pull') ? 2 : 1) });
    const r = await replay(overlapJob('overlap-order', 3), job);
    expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp']);
    const ev = eventsOf(r.history);

    // The copy runs beside provisioning: every shard copied before the Batch job exists (the pool was still allocating).
    expect(ev.allScheduled('shardCopy')).toHaveLength(5);
    expect(ev.lastCompleted('shardCopy')).toBeLessThan(ev.firstScheduled('batchJobCreate'));
    // At most copyConcurrency (2) copies in flight at any point of the history.
    let inFlight = 0;
    let most = 0;
    const copyIds = new Set(r.history.filter((e) => e.EventType === EventType.TaskScheduled && e.Name === 'shardCopy').map((e) => e.EventId));
    for (const e of r.history) {
      if (e.EventType === EventType.TaskScheduled && copyIds.has(e.EventId)) most = Math.max(most, ++inFlight);
      if ((e.EventType === EventType.TaskCompleted || e.EventType === EventType.TaskFailed) && copyIds.has(e.TaskScheduledId!)) inFlight--;
    }
    expect(most).toBe(2);

    expectStagingOrder(r);
    // The overlap itself: node 0 downloads while node 2 has not even started pulling.
    expect(ev.added.get('dl-0-a1')!).toBeLessThan(ev.added.get('pull-2-a1')!);
    // Each node once, its own slot's shards (5 shards over 3 slots: 2, 2, 1), every shard exactly once.
    const dls = scheduledInputs(r.history, 'nodeTasksAdd')
      .flatMap((a) => a.tasks)
      .filter((t) => t.id.startsWith('dl'));
    expect(dls.map((t) => `${t.id}@${t.affinityId}`).sort()).toEqual(['dl-0-a1@aff-0', 'dl-1-a1@aff-1', 'dl-2-a1@aff-2']);
    const files = dls.flatMap((t) => (t.resourceFiles ?? []).map((f) => f.filePath)).sort();
    expect(files).toEqual(
      scheduledInputs(r.history, 'shardCopy')
        .map((c) => `shards/${c.shard.id}`)
        .sort(),
    );
    expect(dls.map((t) => (t.resourceFiles ?? []).length).sort()).toEqual([1, 2, 2]);

    // The job's result shows the overlap and the billed idle time.
    const { result } = job.finished();
    expect(result.staging?.overlapped).toBe(true);
    expect(Date.parse(result.staging!.copy.startedAt)).toBeLessThan(Date.parse(result.timings.Provisioning.endedAt!));
    expect(Date.parse(result.staging!.copy.endedAt!)).toBeLessThan(Date.parse(result.timings.PullingImages.endedAt!));
    expect(Date.parse(result.staging!.downloads!.startedAt)).toBeLessThan(Date.parse(result.timings.PullingImages.endedAt!));
    expect(result.cost?.idleNodeMinutesBeforeMpi).toBeGreaterThan(0);
    expectFinishedOnceAndLast(r, job);
  });

  it('the same job sequential (a run started without the setting): copy after the pulls, so more billed idle node-minutes', async () => {
    const looks = (id: string) => (id.startsWith('pull') ? 2 : 1);
    const seq = slowJob({ nodes: 3, allocatingLooks: 3, looks });
    const ov = slowJob({ nodes: 3, allocatingLooks: 3, looks });
    const input = overlapJob('overlap-compare', 3);
    const rs = await replay({ ...input, settings: { ...OVERLAP, overlapStaging: undefined } }, seq);
    await replay(input, ov);
    const evs = eventsOf(rs.history);
    // Sequential: the first copy only after the last pull was seen done.
    expect(evs.firstScheduled('shardCopy')).toBeGreaterThan(Math.max(...[...evs.seenDone.entries()].filter(([id]) => id.startsWith('pull')).map(([, i]) => i)));
    expect(seq.finished().result.staging).toBeUndefined();
    expect(ov.finished().result.cost!.idleNodeMinutesBeforeMpi!).toBeLessThan(seq.finished().result.cost!.idleNodeMinutesBeforeMpi!);
  });

  it('a pool of fewer nodes than planned (partialAllocation continue): the shards planned at admission are re-slotted over the nodes there are', async () => {
    const job = slowJob({
      nodes: 3,
      allocatingLooks: 1,
      looks: () => 1,
      overrides: { poolObserve: () => poolObservation(['idle', 'idle', 'starting']) },
    });
    const input = overlapJob('overlap-partial', 3);
    input.spec.pool = { ...input.spec.pool, partialAllocation: { policy: 'continue', minNodes: 2 }, resizeTimeout: 'PT5M' } as typeof input.spec.pool;
    const r = await replay(input, job);
    expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    const dls = scheduledInputs(r.history, 'nodeTasksAdd')
      .flatMap((a) => a.tasks)
      .filter((t) => t.id.startsWith('dl'));
    expect(dls.map((t) => t.id).sort()).toEqual(['dl-0-a1', 'dl-1-a1']);
    // All five shards, each downloaded by exactly one of the two nodes.
    expect(dls.flatMap((t) => (t.resourceFiles ?? []).map((f) => f.filePath)).sort()).toHaveLength(5);
    expect(new Set(dls.flatMap((t) => (t.resourceFiles ?? []).map((f) => f.filePath))).size).toBe(5);
    expect(scheduledInputs(r.history, 'mpiTaskAdd')[0].numberOfInstances).toBe(2);
    expectStagingOrder(r);
  });

  it('cancelled while the early copy runs and the pool allocates: the copies in flight end before the containers they wrote are deleted', async () => {
    // Each copy meets a transient error twice (Durable retries it after 2 s, then 4 s): the copies outlast the
    // cleanup's first steps, so a deletion that did not wait for them would come before their ends.
    const job = slowJob({
      nodes: 2,
      allocatingLooks: 50,
      looks: () => 1,
      overrides: {
        shardCopy: ({ shard }, attempt) => {
          if (attempt < 3) throw new Error('503 ServerBusy');
          return { shardId: shard.id, bytes: shard.bytes, md5: 'bWQ1', skipped: false };
        },
      },
    });
    const r = await replay(overlapJob('overlap-cancel', 2), job, {
      raiseAfterActivity: [{ activity: 'shardCopy', name: 'cancel', input: { reason: 'wrong deck' } }],
    });
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: 'wrong deck' });
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'CleaningUp']);
    expect(scheduled(r.history)).not.toContain('batchJobCreate');
    expect(scheduled(r.history)).not.toContain('shardUrls');
    // Durable's retries of the copies in flight run on into cleanup; nothing else does.
    expect(cleanupSteps(r).filter((n) => n !== 'shardCopy')).toEqual(['poolDelete', 'stagedDataDelete']);
    const ev = eventsOf(r.history);
    // No copy left the queue after the cancel, and every copy that ran had ended before the deletion was asked for.
    const copies = new Set(scheduledInputs(r.history, 'shardCopy').map((c) => c.shard.id));
    expect(copies.size).toBeLessThan(5);
    expect(ev.allCompleted('shardCopy')).toHaveLength(copies.size);
    expect(ev.firstScheduled('stagedDataDelete')).toBeGreaterThan(ev.lastCompleted('shardCopy'));
    // The pool's deletion did not wait for the copies.
    expect(ev.firstScheduled('poolDelete')).toBeLessThan(ev.firstScheduled('stagedDataDelete'));
    const written = [...new Set(scheduledInputs(r.history, 'shardCopy').map((c) => `${c.shard.account}/${c.shard.container}`))].sort();
    const deleted = scheduledInputs(r.history, 'stagedDataDelete')
      .flatMap((d) => d.containers.map((c) => `${c.account}/${c.container}`))
      .sort();
    expect(deleted).toEqual(expect.arrayContaining(written));
    expectFinishedOnceAndLast(r, job);
  });

  it('a shard copy that fails for good while the pool allocates: Failed in StagingData, no Batch job, pool and staged data deleted', async () => {
    const job = slowJob({
      nodes: 2,
      allocatingLooks: 50,
      looks: () => 1,
      overrides: {
        shardCopy: ({ shard }) => {
          if (shard.id === 'shard-000001') throw new Error('source blob changed while copying (ETag mismatch)');
          return { shardId: shard.id, bytes: shard.bytes, md5: 'bWQ1', skipped: false };
        },
      },
    });
    const r = await replay(overlapJob('overlap-copy-fails', 2), job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Failed');
    expect(outcome.reason).toMatch(
      /^StagingData: shard shard-0+1 not copied: Activity function 'shardCopy' failed: source blob changed while copying \(ETag mismatch\)/,
    );
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'CleaningUp']);
    expect(scheduled(r.history)).not.toContain('batchJobCreate');
    // Durable retried the copy (3 tries) before the stage gave up; nothing more was copied after that.
    expect(scheduledInputs(r.history, 'shardCopy').filter((c) => c.shard.id === 'shard-000001')).toHaveLength(3);
    expect(cleanupSteps(r)).toEqual(['poolDelete', 'stagedDataDelete']);
    expect(outcome.result.attempts?.[0]).toMatchObject({ outcome: 'failed', failureClass: 'stage', retried: false });
    expectFinishedOnceAndLast(r, job);
  });

  it('a download that fails on a node while another still pulls: Failed in StagingData; cleanup as in the sequential pipeline', async () => {
    const job = slowJob({
      nodes: 2,
      allocatingLooks: 1,
      looks: (id) => (id.startsWith('pull-1') ? 40 : 1),
    });
    const observe = job.fakes.nodeTasksObserve!;
    job.fakes.nodeTasksObserve = (input, attempt) =>
      observe(input, attempt).map((o) =>
        o.id.startsWith('dl-0') && o.state === 'completed'
          ? { ...o, exitCode: 1, failure: 'FailureExitCode: The task exited with an exit code representing a failure', outputTail: 'No space left on device' }
          : o,
      );
    const r = await replay(overlapJob('overlap-dl-fails', 2), job);
    const outcome = job.finished();
    expect(outcome.state).toBe('Failed');
    expect(outcome.reason).toMatch(/^StagingData: node node-0 failed after 3 attempt\(s\): FailureExitCode: .*No space left on device/);
    // It failed while the pull stage still waited on node 1.
    expect(stagesEntered(r.history)).toEqual(['Queued', 'Provisioning', 'PullingImages', 'CleaningUp']);
    expect(scheduled(r.history)).not.toContain('preflightTaskAdd');
    expect(scheduled(r.history)).not.toContain('mpiTaskAdd');
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete', 'stagedDataDelete']);
    expectFinishedOnceAndLast(r, job);
  });

  it('a node lost under the MPI task: attempt 2 replaces it; the new node pulls, then downloads its slot; the shards are not copied again', async () => {
    let nodes = [fakeNode(0, 'idle'), fakeNode(1, 'idle')];
    let next = 2;
    let target = 2;
    let mpiLooks = 0;
    const mpiResult = (taskId: string, exitCode: number): MpiResult => ({ taskId, exitCode, subtasks: [], logs: [], stdoutTail: '' });
    const job = slowJob({
      nodes: 2,
      allocatingLooks: 0,
      looks: (id) => (id.startsWith('pull') ? 2 : 1),
      overrides: {
        poolObserve: (): PoolObservation => ({
          state: 'active',
          allocationState: 'steady',
          currentDedicatedNodes: nodes.length,
          targetDedicatedNodes: target,
          resizeErrors: [],
          nodes: nodes.map((n) => ({ ...n })),
        }),
        poolRemoveNodes: ({ nodeIds }) => {
          nodes = nodes.filter((n) => !nodeIds.includes(n.id));
          target = nodes.length;
        },
        poolResize: ({ target: t }) => {
          target = t;
          while (nodes.length < t) nodes.push(fakeNode(next++, 'idle'));
        },
        mpiTaskObserve: ({ taskId }): MpiTaskObservation => {
          if (taskId !== 'mpi') return { state: 'completed' };
          if (++mpiLooks < 2) return { state: 'running' };
          nodes = nodes.map((n) => (n.id === 'node-1' ? { ...n, state: 'unusable' } : n));
          return { state: 'active', requeueCount: 1 };
        },
        mpiResultCollect: ({ taskId }) => mpiResult(taskId, taskId === 'mpi' ? -1 : 0),
        preflightCollect: () => preflightReport(nodes.filter((n) => n.state === 'idle').map((n) => n.ipAddress)),
      },
    });
    const input = overlapJob('overlap-retry', 2);
    input.spec.retry = { ...input.spec.retry, maxAttempts: 2 };
    const r = await replay(input, job);
    const outcome = job.finished();
    expect(outcome).toMatchObject({ state: 'Succeeded' });
    expect(outcome.result.attempts!.map((a) => a.nodes)).toEqual([
      ['node-0', 'node-1'],
      ['node-0', 'node-2'],
    ]);
    // Copied and minted once; the replacement pulls and downloads under attempt 2's prefixes, in node-1's slot.
    expect(scheduledInputs(r.history, 'shardCopy')).toHaveLength(5);
    expect(scheduled(r.history).filter((n) => n === 'shardUrls')).toHaveLength(1);
    const tasks = scheduledInputs(r.history, 'nodeTasksAdd').flatMap((a) => a.tasks);
    expect(tasks.map((t) => `${t.id}@${t.affinityId}`).sort()).toEqual([
      'dl-0-a1@aff-0',
      'dl-1-a1@aff-1',
      'dl-a2-0-a1@aff-2',
      'pull-0-a1@aff-0',
      'pull-1-a1@aff-1',
      'pull-a2-0-a1@aff-2',
    ]);
    const files = (id: string) => (tasks.find((t) => t.id === id)?.resourceFiles ?? []).map((f) => f.filePath);
    expect(files('dl-a2-0-a1')).toEqual(files('dl-1-a1'));
    expectStagingOrder(r, ['', '-a2']);
    const ev = eventsOf(r.history);
    expect(ev.added.get('dl-a2-0-a1')!).toBeGreaterThan(ev.seenDone.get('pull-a2-0-a1')!);
    expect(ev.allScheduled('mpiTaskAdd')[1]).toBeGreaterThan(ev.seenDone.get('dl-a2-0-a1')!);
    expect(cleanupSteps(r)).toEqual(['batchJobTerminate', 'poolDelete', 'stagedDataDelete']);
    expectFinishedOnceAndLast(r, job);
  });
});
