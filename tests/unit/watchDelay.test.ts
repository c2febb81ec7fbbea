/** The pause between looks at a job (local/jobRunner.ts watchJob): quick at first, backing off to a bound. */
import fc from 'fast-check';
import { nextWatchDelay, WATCH_FIRST_MS, WATCH_MAX_MS } from '../../local/jobRunner';

test('each pause is 1.5 times the previous, from the first pause up to the bound', () => {
  const delays = [WATCH_FIRST_MS];
  for (let i = 0; i < 6; i++) delays.push(nextWatchDelay(delays[delays.length - 1]));
  expect(delays).toEqual([500, 750, 1125, 1688, 2000, 2000, 2000]);
});

test('from any pause, the next one never shrinks and never passes the bound', () => {
  fc.assert(
    fc.property(fc.integer({ min: WATCH_FIRST_MS, max: WATCH_MAX_MS }), (d) => {
      const next = nextWatchDelay(d);
      return next >= d && next <= WATCH_MAX_MS;
    }),
  );
});
