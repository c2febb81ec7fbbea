/** The pauses between looks at a job (local/jobRunner.ts watchJob): the project's one backoff, quick at first, to a bound. */
import fc from 'fast-check';
import { WATCH_BACKOFF } from '../../local/jobRunner';
import { backoffCeilingMs } from '../../shared/core/planning/backoff';

test('each pause is 1.5 times the previous, from the first pause up to the bound', () => {
  const delays = Array.from({ length: 7 }, (_, i) => backoffCeilingMs(i + 1, WATCH_BACKOFF));
  expect(delays).toEqual([500, 750, 1125, 1688, 2000, 2000, 2000]);
});

test('from any look, the next pause never shrinks and never passes the bound', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 1_000 }), (look) => {
      const d = backoffCeilingMs(look, WATCH_BACKOFF);
      const next = backoffCeilingMs(look + 1, WATCH_BACKOFF);
      return d >= WATCH_BACKOFF.baseMs && next >= d && next <= WATCH_BACKOFF.maxMs;
    }),
  );
});
