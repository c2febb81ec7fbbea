/**
 * The Queued stage of the real mpiJob orchestrator, replayed in memory against typed fakes: admission by event and by
 * the polling fallback, cancel while waiting (Cancelled at once, nothing to clean), refusal (Failed), dependencies
 * (an event wakes the job; a parent that can no longer meet the condition cancels it), and the job's budget starting
 * at admission rather than at submission.
 */
import { ADMISSION_EVENT, CANCEL_EVENT, DEPENDENCY_EVENT, type AdmissionStatus, type DependencyStatus } from '../../shared/core/contract';
import { EventType, type HistoryEvent } from '../../local/durable/history';
import { healthyJob, type FakeJob } from './fakeActivities';
import { expectFinishedOnceAndLast, jobInput, replay, scheduled, stagesEntered, SETTINGS } from './jobReplay';
import type { MpiJobInput } from '../../shared/core/contract';

const POLL_MS = 45 * 60_000;

const queuedJob = (id: string, extra: Record<string, unknown> = {}): MpiJobInput => {
  const input = jobInput(id, { nodes: 1, command: 'true', ...extra });
  return { ...input, settings: { ...SETTINGS, queuePollMs: POLL_MS } };
};

/** admissionRequest answering `waiting` (with a place) `n` times, then granted. */
function grantedAfter(n: number): (input: { jobId: string }) => AdmissionStatus {
  let calls = 0;
  return () =>
    ++calls > n
      ? { state: 'granted', grant: 7, grantedAt: '2030-01-01T00:00:00.000Z' }
      : { state: 'waiting', reason: 'standardDSv5Family: 10 of 10 cores in use, the job needs 2', position: { inQueue: 3, overall: 4 } };
}

/** The orchestrator steps' times at which `name` was scheduled. */
function scheduledAt(history: HistoryEvent[], name: string): number[] {
  const out: number[] = [];
  let step = 0;
  for (const e of history) {
    if (e.EventType === EventType.OrchestratorStarted) step = Date.parse(e.Timestamp);
    if (e.EventType === EventType.TaskScheduled && e.Name === name) out.push(step);
  }
  return out;
}

/** The delays of the timers the orchestrator created (fire time minus the step that created it). */
function timerDelays(history: HistoryEvent[]): number[] {
  const out: number[] = [];
  let step = 0;
  for (const e of history) {
    if (e.EventType === EventType.OrchestratorStarted) step = Date.parse(e.Timestamp);
    if (e.EventType === EventType.TimerCreated) out.push(Date.parse(e.FireAt!) - step);
  }
  return out;
}

const endedWhileQueued = (job: FakeJob, r: Awaited<ReturnType<typeof replay>>) => {
  expect(stagesEntered(r.history)).toEqual(['Queued']);
  for (const name of ['costPrice', 'poolCreate', 'poolDelete', 'batchJobCreate', 'batchJobTerminate', 'stagedDataDelete'])
    expect(scheduled(r.history)).not.toContain(name);
  expectFinishedOnceAndLast(r, job);
};

describe('mpiJob orchestrator in the queue, replayed', () => {
  it('waits in Queued until the admission event, asks again at once, and provisions with its grant', async () => {
    const job = healthyJob({ admissionRequest: grantedAfter(1) });
    const r = await replay(queuedJob('queue-event'), job, {
      raiseAfterActivity: [{ activity: 'admissionRequest', name: ADMISSION_EVENT, input: { granted: true } }],
    });
    expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    expect(stagesEntered(r.history).slice(0, 2)).toEqual(['Queued', 'Provisioning']);
    const asks = scheduledAt(r.history, 'admissionRequest');
    expect(asks).toHaveLength(2);
    // Woken by the event, one step later: not by the 45-minute poll.
    expect(asks[1] - asks[0]).toBeLessThan(POLL_MS);
    const provisioning = r.history.find(
      (e) => e.EventType === EventType.TaskScheduled && e.Name === 'jobTransition' && JSON.parse(e.Input ?? '{}').to === 'Provisioning',
    );
    expect(JSON.parse(provisioning!.Input!).reason).toMatch(/admission grant 7/);
    expect(scheduled(r.history).indexOf('admissionRequest')).toBeLessThan(scheduled(r.history).indexOf('poolCreate'));
    expectFinishedOnceAndLast(r, job);
  });

  it('a lost event only delays: the job asks again after every poll interval until it is admitted', async () => {
    const job = healthyJob({ admissionRequest: grantedAfter(3) });
    const r = await replay(queuedJob('queue-poll'), job);
    expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    expect(scheduledAt(r.history, 'admissionRequest')).toHaveLength(4);
    expect(timerDelays(r.history).slice(0, 3)).toEqual([POLL_MS, POLL_MS, POLL_MS]);
  });

  it('cancelled while queued: ends Cancelled with the reason, without cleanup, and gives its place back', async () => {
    const job = healthyJob({ admissionRequest: grantedAfter(1_000) });
    const r = await replay(queuedJob('queue-cancel'), job, {
      raiseAfterActivity: [{ activity: 'admissionRequest', name: CANCEL_EVENT, input: { reason: 'not needed any more' } }],
    });
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: 'not needed any more' });
    expect(scheduled(r.history).filter((n) => n === 'admissionRequest')).toHaveLength(1);
    endedWhileQueued(job, r);
  });

  it('refused at admission (can never fit): ends Failed with the reason, without cleanup', async () => {
    const job = healthyJob({
      admissionRequest: () => ({ state: 'refused', reason: "the job needs 240 standardHBv3Family cores; the Batch account's quota for that family is 120" }),
    });
    const r = await replay(queuedJob('queue-refused'), job);
    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason: expect.stringMatching(/^refused at admission: the job needs 240 standardHBv3Family cores/),
    });
    endedWhileQueued(job, r);
  });

  it('with dependencies: waits for them first (woken by their end), then asks admission', async () => {
    let checks = 0;
    const job = healthyJob({ dependenciesCheck: (): DependencyStatus => (++checks < 2 ? { state: 'pending', pending: ['parent-a'] } : { state: 'met' }) });
    const input = queuedJob('queue-deps');
    input.spec = { ...input.spec, dependsOn: [{ job: 'parent-a', condition: 'succeeded' }] };
    const r = await replay(input, job, { raiseAfterActivity: [{ activity: 'dependenciesCheck', name: DEPENDENCY_EVENT }] });
    expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    const order = scheduled(r.history);
    expect(order.filter((n) => n === 'dependenciesCheck')).toHaveLength(2);
    expect(order.lastIndexOf('dependenciesCheck')).toBeLessThan(order.indexOf('admissionRequest'));
    const checksAt = scheduledAt(r.history, 'dependenciesCheck');
    expect(checksAt[1] - checksAt[0]).toBeLessThan(POLL_MS);
  });

  it('a dependency that can no longer be met cancels the job with the reason; it never asks admission', async () => {
    const job = healthyJob({
      dependenciesCheck: () => ({
        state: 'impossible',
        reason: 'dependency parent-a ended Failed: MPI task exited with code 3 (this job needed it to succeed)',
      }),
    });
    const input = queuedJob('queue-deps-failed');
    input.spec = { ...input.spec, dependsOn: [{ job: 'parent-a', condition: 'succeeded' }] };
    const r = await replay(input, job);
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: expect.stringMatching(/dependency parent-a ended Failed/) });
    expect(scheduled(r.history)).not.toContain('admissionRequest');
    endedWhileQueued(job, r);
  });

  it('a release that keeps failing does not keep the end from being recorded (the sweep reconciles)', async () => {
    const job = healthyJob({
      admissionRelease: () => {
        throw new Error('storage unavailable');
      },
    });
    const r = await replay(queuedJob('queue-release-fails'), job);
    expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    expect(scheduled(r.history).filter((n) => n === 'admissionRelease')).toHaveLength(3);
    expect(scheduled(r.history).slice(-2)).toEqual(['jobFinish', 'jobEnded']);
  });

  it('time in the queue does not count against the pipeline budget: it starts at admission', async () => {
    // 20-minute steps: 12 polls wait 8 hours, beyond the budget (resize timeout + wall clock + 6 h = 6 h 25 min).
    let observed = 0;
    const job = healthyJob({ admissionRequest: grantedAfter(12), mpiTaskObserve: () => ({ state: ++observed < 2 ? 'running' : 'completed' }) });
    const r = await replay(queuedJob('queue-budget'), job, { clockStepMs: 20 * 60_000 });
    const asks = scheduledAt(r.history, 'admissionRequest');
    expect(asks.at(-1)! - asks[0]).toBeGreaterThan(6.5 * 3_600_000);
    expect(job.finished()).toMatchObject({ state: 'Succeeded' });
    expect(job.finished().result.timings.Queued).toBeDefined();
  });
});
