/**
 * Pools have owners, as the sweep sees them: a pool's recorded submitter travels with its deletion (the timeline note
 * and the sweep's log line name it), a kept pool stays whoever owns it, and the sweep only ever sees pools the control
 * plane can attribute (listOwnedPools reads the job id from their metadata): a pool without it is never a candidate.
 */
import { planSweep, type ObservedJobRow, type SweepObservation, type SweepSettings } from '../../shared/core/ops/sweepRules';
import { listOwnedPools } from '../../shared/adapters/batch/pools';
import type { BatchContext } from '../../shared/adapters/batch/client';
import { poolOwnershipMetadata } from '../../shared/adapters/batch/common';
import { DEFAULT_RETRY_POLICY } from '../../shared/adapters/batch/retry';

const S: SweepSettings = { stallLimitMs: 10 * 60_000, graceMs: 2 * 60_000, stagingRetentionMs: 60 * 60_000 };
const NOW = '2026-01-01T12:00:00.000Z';
const ago = (min: number) => new Date(Date.parse(NOW) - min * 60_000).toISOString();
const job = (id: string, patch: Partial<ObservedJobRow> = {}): ObservedJobRow => ({
  id,
  state: 'Running',
  createdAt: ago(30),
  updatedAt: ago(5),
  keepsPool: false,
  ...patch,
});
const obs = (patch: Partial<SweepObservation>): SweepObservation => ({
  now: NOW,
  jobs: new Map(),
  orchestrations: new Map(),
  pools: [],
  batchJobs: [],
  staging: [],
  ...patch,
});
const done = { runtimeStatus: 'Completed', lastUpdatedTime: ago(5) };

describe('the sweep and pool owners', () => {
  it('names the owner on the deletion of a pool, and none for a pool from before owners', () => {
    const o = obs({
      jobs: new Map([
        ['a', job('a', { state: 'Succeeded' })],
        ['old', job('old', { state: 'Failed' })],
      ]),
      orchestrations: new Map([
        ['a', done],
        ['old', done],
      ]),
      pools: [
        { poolId: 'hpc-a', jobId: 'a', owner: 'tid/alice', state: 'active' },
        { poolId: 'hpc-old', jobId: 'old', state: 'active' },
      ],
    });
    const deletions = planSweep(o, S).filter((a) => a.kind === 'deletePool');
    expect(deletions).toEqual([
      expect.objectContaining({ poolId: 'hpc-a', owner: 'tid/alice', rule: 'leakedPool' }),
      expect.not.objectContaining({ owner: expect.anything() }),
    ]);
  });

  it('keeps a kept pool, whoever owns it', () => {
    const o = obs({
      jobs: new Map([['k', job('k', { state: 'Failed', keepsPool: true })]]),
      orchestrations: new Map([['k', done]]),
      pools: [{ poolId: 'hpc-k', jobId: 'k', owner: 'tid/bob', state: 'active' }],
    });
    expect(planSweep(o, S)).toEqual([]);
  });

  it('lists only pools it can attribute (control-plane metadata), with their recorded owner', async () => {
    const pools = [
      { id: 'hpc-a', state: 'active', metadata: poolOwnershipMetadata('a', 'tid/alice') },
      { id: 'hpc-old', state: 'active', metadata: poolOwnershipMetadata('old', undefined) },
      { id: 'ops-pool', state: 'active', metadata: [{ name: 'team', value: 'cfd' }] },
      { id: 'bare', state: 'active' },
      // A submitter entry without the control plane's mark is not ours: no owner is read from it.
      { id: 'forged', state: 'active', metadata: [{ name: 'hpc-cp-submitter', value: 'tid/alice' }] },
    ];
    const ctx = {
      retry: { policy: { ...DEFAULT_RETRY_POLICY, maxAttempts: 1 } },
      client: { pool: { list: async () => pools, listNext: async () => [] } },
    } as unknown as BatchContext;
    expect(await listOwnedPools(ctx)).toEqual([
      { poolId: 'hpc-a', jobId: 'a', owner: 'tid/alice', state: 'active' },
      { poolId: 'hpc-old', jobId: 'old', state: 'active' },
    ]);
  });
});
