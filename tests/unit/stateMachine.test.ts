/** The job state machine: explicit rules plus fast-check over random event sequences. */
import fc from 'fast-check';
import {
  ACTIVE_STAGES,
  canTransition,
  IllegalTransitionError,
  isTerminal,
  JOB_STATES,
  nextStates,
  TERMINAL_STATES,
  transition,
  type JobState,
  type TransitionableRow,
} from '../../shared/adapters/state';

const start = (): TransitionableRow => ({ id: 'job-1', state: 'Submitted', stage: 'Submitted', updatedAt: '2026-01-01T00:00:00.000Z', eventSeq: 1 });
/** Position in the pipeline: the machine may only move forward (Queued sits between Submitted and Provisioning). */
const rank = (s: JobState): number => (isTerminal(s) ? 7 : s === 'CleaningUp' ? 6 : s === 'Queued' ? 0.5 : ACTIVE_STAGES.indexOf(s));

test('the happy path and its skips are legal', () => {
  let row = start();
  for (const to of ['Queued', 'Provisioning', 'PullingImages', 'StagingData', 'Running', 'CleaningUp', 'Succeeded'] as JobState[]) {
    row = transition(row, to, `to ${to}`, '2026-01-01T00:00:01.000Z').row;
  }
  expect(row.state).toBe('Succeeded');
  expect(canTransition('Provisioning', 'Running')).toBe(true); // native job without data: nothing to pull or stage
  expect(canTransition('Submitted', 'Failed')).toBe(true); // rejected before anything was created
  expect(canTransition('Submitted', 'Cancelled')).toBe(true);
  expect(canTransition('Submitted', 'Provisioning')).toBe(true); // a run started before the Queued state existed
});

test('Queued: entered from Submitted only; left for an active stage, or ended without cleanup (nothing was created)', () => {
  expect(JOB_STATES.filter((s) => canTransition(s, 'Queued'))).toEqual(['Submitted']);
  expect(nextStates('Queued')).toEqual(['Provisioning', 'PullingImages', 'StagingData', 'Running', 'Failed', 'Cancelled']);
  expect(canTransition('Queued', 'CleaningUp')).toBe(false);
  expect(canTransition('Queued', 'Succeeded')).toBe(false);
});

test.each<[JobState, JobState]>([
  ['Running', 'Succeeded'], // cleanup always runs first
  ['Provisioning', 'Failed'],
  ['Running', 'Provisioning'],
  ['CleaningUp', 'Running'],
  ['Succeeded', 'Failed'],
  ['Cancelled', 'CleaningUp'],
  ['Running', 'Running'],
  ['Queued', 'CleaningUp'],
  ['Queued', 'Succeeded'],
  ['Provisioning', 'Queued'],
  ['Queued', 'Submitted'],
])('%s → %s is illegal and the error names both states', (from, to) => {
  const row = { ...start(), state: from };
  expect(() => transition(row, to, 'because', new Date())).toThrow(IllegalTransitionError);
  try {
    transition(row, to, 'because', new Date());
  } catch (e) {
    expect(e).toMatchObject({ from, to, jobId: 'job-1' });
    expect((e as Error).message).toContain(`${from} → ${to}`);
  }
});

test('transition returns a new row and an event; the input row is untouched', () => {
  const row = start();
  const { row: next, event } = transition(row, 'Provisioning', 'orchestration started', new Date('2026-01-02T03:04:05.000Z'));
  expect(row.state).toBe('Submitted');
  expect(next).toMatchObject({ state: 'Provisioning', stage: 'Provisioning', updatedAt: '2026-01-02T03:04:05.000Z', eventSeq: 2 });
  expect(event).toEqual({
    jobId: 'job-1',
    at: '2026-01-02T03:04:05.000Z',
    kind: 'transition',
    seq: 2,
    from: 'Submitted',
    to: 'Provisioning',
    reason: 'orchestration started',
  });
  expect(next.lastEvent).toEqual(event);
});

test('every state is reachable from Submitted and every non-terminal state can still finish', () => {
  const reach = (from: JobState): Set<JobState> => {
    const seen = new Set<JobState>([from]);
    const queue = [from];
    while (queue.length) {
      for (const n of nextStates(queue.shift()!)) {
        if (!seen.has(n)) {
          seen.add(n);
          queue.push(n);
        }
      }
    }
    return seen;
  };
  expect([...reach('Submitted')].sort()).toEqual([...JOB_STATES].sort());
  for (const s of JOB_STATES.filter((x) => !isTerminal(x))) {
    const r = reach(s);
    expect(TERMINAL_STATES.some((t) => r.has(t))).toBe(true);
    expect(r.has('CleaningUp') || s === 'Submitted' || s === 'Queued').toBe(true);
  }
});

test('random event sequences never reach an illegal state; terminal states are absorbing', () => {
  fc.assert(
    fc.property(fc.array(fc.constantFrom(...JOB_STATES), { maxLength: 40 }), (targets) => {
      let row = start();
      const visited: JobState[] = [row.state];
      for (const to of targets) {
        const before = row;
        const legal = canTransition(row.state, to);
        try {
          const out = transition(row, to, 'random', new Date(0));
          expect(legal).toBe(true);
          expect(out.row.eventSeq).toBe(before.eventSeq + 1);
          expect(out.event).toMatchObject({ from: before.state, to, seq: out.row.eventSeq });
          row = out.row;
          visited.push(row.state);
        } catch (e) {
          expect(legal).toBe(false);
          expect(e).toBeInstanceOf(IllegalTransitionError);
          expect(row).toBe(before); // a refused move changes nothing
          if (isTerminal(before.state)) expect(nextStates(before.state)).toEqual([]);
        }
        expect(JOB_STATES).toContain(row.state);
      }
      // Forward only; once terminal, nothing changes again.
      for (let i = 1; i < visited.length; i++) {
        expect(rank(visited[i])).toBeGreaterThan(rank(visited[i - 1]));
        expect(isTerminal(visited[i - 1])).toBe(false);
      }
      // Succeeded only through cleanup; Failed/Cancelled only through cleanup or straight from Submitted or Queued.
      for (let i = 1; i < visited.length; i++) {
        if (visited[i] === 'Succeeded') expect(visited[i - 1]).toBe('CleaningUp');
        if (visited[i] === 'Failed' || visited[i] === 'Cancelled') expect(['CleaningUp', 'Submitted', 'Queued']).toContain(visited[i - 1]);
      }
    }),
    { numRuns: 300 },
  );
});
