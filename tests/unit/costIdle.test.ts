import fc from 'fast-check';
import { idleNodeMinutesBeforeMpi, jobCost } from '../../shared/core/ops/cost';

const at = (min: number) => new Date(Date.UTC(2030, 0, 1, 0, min)).toISOString();

describe('billed idle node-minutes before MPI', () => {
  it('sums each node from its readiness to the MPI task start', () => {
    // node-0 ready at 2, node-1 at 5, MPI started at 10: 8 + 5.
    expect(idleNodeMinutesBeforeMpi({ 'node-0': at(2), 'node-1': at(5) }, [{ at: at(10), nodes: ['node-0', 'node-1'], attemptStartedAt: at(0) }])).toBe(13);
  });

  it("counts a later attempt from its own start (the wait between attempts is the retry's), and a node never seen ready from there too", () => {
    const ready = { 'node-0': at(2), 'node-1': at(3) };
    const starts = [
      { at: at(10), nodes: ['node-0', 'node-1'], attemptStartedAt: at(0) },
      { at: at(30), nodes: ['node-0', 'node-2'], attemptStartedAt: at(25) },
    ];
    expect(idleNodeMinutesBeforeMpi(ready, starts)).toBe(8 + 7 + 5 + 5);
  });

  it('is never negative and never more than nodes × (MPI start − attempt start)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 100 }), { minLength: 1, maxLength: 20 }), fc.integer({ min: 0, max: 100 }), (readyMins, mpiMin) => {
        const ready = Object.fromEntries(readyMins.map((m, i) => [`n${i}`, at(m)]));
        const idle = idleNodeMinutesBeforeMpi(ready, [{ at: at(mpiMin), nodes: Object.keys(ready), attemptStartedAt: at(0) }]);
        expect(idle).toBeGreaterThanOrEqual(0);
        expect(idle).toBeLessThanOrEqual(readyMins.length * mpiMin + 0.01);
      }),
    );
  });

  it('goes into the job cost only when an MPI task started', () => {
    const usage = { dedicatedNodes: 2, lowPriorityNodes: 0, allocatedAt: at(0), releasedAt: at(20) };
    const price = { currency: 'USD', source: 'test' };
    expect(jobCost(usage, {}, price, 13).idleNodeMinutesBeforeMpi).toBe(13);
    expect(jobCost(usage, {}, price)).not.toHaveProperty('idleNodeMinutesBeforeMpi');
  });
});
