import { CONSERVATIVE_ACCOUNT_LIMITS, LARGE_REGION_ACCOUNT_LIMITS, modelStagingTime } from '../../shared/core/planning/stagingModel';

const TB = 1e12;

describe('modelStagingTime', () => {
  it('1 TB over 10 accounts, conservative targets: the single source account limits the copy', () => {
    const m = modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40 });
    expect(m.input.limits).toEqual(CONSERVATIVE_ACCOUNT_LIMITS);
    // 8,000 Gb at min(1 x 50 Gbps source egress, 10 x 25 Gbps staging ingress) = 50 Gbps.
    expect(m.copy).toMatchObject({ gbps: 50, bottleneck: 'source egress' });
    expect(m.copy.seconds).toBeCloseTo(160, 6);
    // Fan-out at min(10 x 50 Gbps egress, 40 x 25 Gbps NICs) = 500 Gbps.
    expect(m.fanOut).toMatchObject({ gbps: 500, bottleneck: 'staging egress' });
    expect(m.fanOut.seconds).toBeCloseTo(16, 6);
    expect(m.sequentialSeconds).toBeCloseTo(176, 6);
    expect(m.claimRequiredGbps).toBeCloseTo(400, 6);
    expect(m.claimMet).toBe(false);
  });

  it('large-region targets: still 40 s just to read 1 TB out of one source account', () => {
    const m = modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40, limits: LARGE_REGION_ACCOUNT_LIMITS });
    expect(m.copy.seconds).toBeCloseTo(40, 6);
    expect(m.fanOut.bottleneck).toBe('node network');
    expect(m.fanOut.seconds).toBeCloseTo(8, 6);
    expect(m.claimMet).toBe(false);
  });

  it('already staged data can fan out in under 20 s when egress and NICs allow', () => {
    const m = modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 40, alreadyStaged: true });
    expect(m.copy.seconds).toBe(0);
    expect(m.pipelinedSeconds).toBeCloseTo(16, 6);
    expect(m.claimMet).toBe(true);
  });

  it('few nodes make the node network the bottleneck; small reads make the request rate one', () => {
    expect(modelStagingTime({ totalBytes: TB, stagingAccounts: 10, nodes: 2 }).fanOut.bottleneck).toBe('node network');
    const tiny = modelStagingTime({ totalBytes: TB, stagingAccounts: 1, nodes: 100, readRequestBytes: 64 * 1024 });
    expect(tiny.fanOut.bottleneck).toBe('request rate');
  });

  it('rejects nonsense', () => {
    expect(() => modelStagingTime({ totalBytes: -1, stagingAccounts: 1, nodes: 1 })).toThrow(/totalBytes/);
    expect(() => modelStagingTime({ totalBytes: 1, stagingAccounts: 0, nodes: 1 })).toThrow(/at least 1/);
  });
});
