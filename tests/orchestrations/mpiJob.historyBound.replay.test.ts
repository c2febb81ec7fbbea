/**
 * The MPI wait in the mpiWait sub-orchestration (orchestrations/stages/mpiWait.ts), replayed: the job's history rows do
 * not grow with the number of polls (issue 30), the wait keeps the polling delays and the checks of the inline wait,
 * and a cancel while it waits still cleans up.
 */
import { EventType, type HistoryEvent } from '../../local/durable/history';
import { MPI_WAIT_POLLS_PER_GENERATION } from '../../shared/core/contract';
import { MPI_WAIT_ORCHESTRATION } from '../../orchestrations/stages/mpiWait';
import type { SimResult } from '../durable/helpers/simulator';
import { healthyJob } from './fakeActivities';
import { cancelOnEntering, cleanupSteps, expectFinishedOnceAndLast, jobInput, replay, scheduled, SETTINGS } from './jobReplay';

const K = MPI_WAIT_POLLS_PER_GENERATION;

/** A job whose MPI task is seen running `polls - 1` times, then completed (`polls` looks in all). */
async function runWithPolls(polls: number, id = `hist-${polls}`): Promise<{ r: SimResult; job: ReturnType<typeof healthyJob> }> {
  let observed = 0;
  const job = healthyJob({
    mpiTaskObserve: () =>
      ++observed < polls ? { state: 'running', startTime: '2030-01-01T01:00:00.000Z' } : { state: 'completed', startTime: '2030-01-01T01:00:00.000Z' },
  });
  const r = await replay(jobInput(id, { nodes: 2, command: 'true' }), job);
  expect(observed).toBe(polls);
  return { r, job };
}

const waits = (r: SimResult) => Object.values(r.children).filter((c) => c.state.name === MPI_WAIT_ORCHESTRATION);
/** History rows as the History table holds them at the end: the job's and each wait's current execution. */
const rows = (r: SimResult) => r.history.length + waits(r).reduce((n, c) => n + c.history.length, 0);

describe('mpiJob: the MPI wait continues as new (history bounded)', () => {
  it('writes the same rows for N and 4N polls (N a multiple of the generation size)', async () => {
    const short = await runWithPolls(K);
    const long = await runWithPolls(4 * K);
    expect(short.job.finished()).toMatchObject({ state: 'Succeeded' });
    expect(long.job.finished()).toMatchObject({ state: 'Succeeded' });
    // The job's own history: identical in length (one wait, whatever it polled).
    expect(long.r.history.length).toBe(short.r.history.length);
    expect(scheduled(long.r.history).filter((n) => n === 'mpiTaskObserve')).toHaveLength(1);
    // The wait ran 1 execution for N polls, 4 for 4N; only the last one's rows remain, and they are the same.
    expect(waits(short.r).map((w) => w.executions)).toEqual([1]);
    expect(waits(long.r).map((w) => w.executions)).toEqual([4]);
    expect(rows(long.r)).toBe(rows(short.r));
  });

  it('keeps any run under the documented bound: the wait holds at most K polls of 8 rows each', async () => {
    const perPoll = 8;
    const fixed = (await runWithPolls(2)).r;
    // One poll in the wait: the rows beside its single poll are the constant part.
    const base = rows(fixed) - perPoll;
    for (const polls of [3, K + 1, 2 * K + 3, 5 * K]) {
      const { r } = await runWithPolls(polls);
      const lastGeneration = ((polls - 2) % K) + 1;
      expect(rows(r)).toBe(base + perPoll * lastGeneration);
      expect(rows(r)).toBeLessThanOrEqual(base + perPoll * K);
    }
  });

  it("polls with the inline wait's delays, across generations", async () => {
    const { r } = await runWithPolls(K + 3);
    // The last execution holds polls K+1.. of the wait (the backoff position travels in its input).
    const [wait] = waits(r);
    const delays: number[] = [];
    let stepAt = 0;
    for (const e of wait.history as HistoryEvent[]) {
      if (e.EventType === EventType.OrchestratorStarted) stepAt = Date.parse(e.Timestamp);
      if (e.EventType === EventType.TimerCreated) delays.push(Date.parse(e.FireAt!) - stepAt);
    }
    // Half the maximum interval (30 s) by then, as runningPollDelayMs says.
    expect(delays).toEqual([30_000, 30_000]);
    const first = (await runWithPolls(4, 'hist-first')).r;
    const firstDelays: number[] = [];
    for (const e of waits(first)[0].history) {
      if (e.EventType === EventType.OrchestratorStarted) stepAt = Date.parse(e.Timestamp);
      if (e.EventType === EventType.TimerCreated) firstDelays.push(Date.parse(e.FireAt!) - stepAt);
    }
    expect(firstDelays).toEqual([10_000, 20_000, 30_000]);
  });

  it('a cancel while the wait runs cancels the job and cleans up', async () => {
    const job = healthyJob({ mpiTaskObserve: () => ({ state: 'running', startTime: '2030-01-01T01:00:00.000Z' }) });
    const r = await replay(jobInput('hist-cancel', { nodes: 2, command: 'true' }), job, cancelOnEntering('Running', 'stop it'));
    expect(job.finished()).toMatchObject({ state: 'Cancelled', reason: 'stop it' });
    expect(cleanupSteps(r)).toEqual(expect.arrayContaining(['batchJobTerminate', 'poolDelete']));
    expectFinishedOnceAndLast(r, job);
  });

  it('the wall-clock limit ends a job whose task never finishes', async () => {
    const job = healthyJob({ mpiTaskObserve: () => ({ state: 'running', startTime: '2030-01-01T01:00:00.000Z' }) });
    const r = await replay(jobInput('hist-timeout', { nodes: 2, command: 'true', limits: { maxWallClock: 'PT2H' } }), job);
    expect(job.finished().state).toBe('Failed');
    expect(job.finished().reason).toMatch(/^Running: wall-clock limit .* exceeded/);
    // The wait continued as new several times and stopped at the limit; the job's history stayed small.
    expect(waits(r).some((w) => w.executions > 1)).toBe(true);
    expect(scheduled(r.history).filter((n) => n === 'mpiTaskObserve')).toHaveLength(1);
  });

  it('the budget cancels a job whose task runs on past it, through the wait', async () => {
    const job = healthyJob({ mpiTaskObserve: () => ({ state: 'running', startTime: '2030-01-01T01:00:00.000Z' }) });
    const r = await replay(jobInput('hist-budget', { nodes: 2, command: 'true', limits: { maxNodeHours: 1 } }), job);
    expect(job.finished().state).toBe('Cancelled');
    expect(job.finished().reason).toMatch(/^budget: [\d.]+ node-hours used, limit maxNodeHours 1\b/);
    expect(cleanupSteps(r)).toEqual(expect.arrayContaining(['poolDelete']));
  });

  it('runs without the setting (runs started before it) keep the inline wait', async () => {
    let observed = 0;
    const job = healthyJob({ mpiTaskObserve: () => ({ state: ++observed < 5 ? 'running' : 'completed' }) });
    const base = jobInput('hist-inline', { nodes: 2, command: 'true' });
    const r = await replay({ ...base, settings: { ...SETTINGS, mpiWaitPollsPerGeneration: undefined } }, job);
    expect(waits(r)).toEqual([]);
    expect(scheduled(r.history).filter((n) => n === 'mpiTaskObserve')).toHaveLength(5);
  });
});
