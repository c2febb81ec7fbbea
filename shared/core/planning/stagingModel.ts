/**
 * A throughput model for "stage then fan out": copy the input into N staging accounts, then every node downloads its
 * shards. It exists to check claims such as "1 TB in under 20 seconds" against Azure Storage's published scalability
 * targets for a standard general-purpose v2 account (25–60 Gbps ingress, 50–200 Gbps egress, 20,000–40,000 requests/s
 * depending on the region; the two sets of limits below), not to predict a run: it ignores latency, TCP ramp-up,
 * retries and job start-up.
 */

export interface StorageAccountLimits {
  ingressGbps: number;
  egressGbps: number;
  requestsPerSec: number;
}

/** Standard GPv2 targets outside the large regions (and the older everywhere-figures): the safe planning numbers. */
export const CONSERVATIVE_ACCOUNT_LIMITS: StorageAccountLimits = { ingressGbps: 25, egressGbps: 50, requestsPerSec: 20_000 };
/** Standard GPv2 targets in the listed large regions (East US, West Europe, ...). */
export const LARGE_REGION_ACCOUNT_LIMITS: StorageAccountLimits = { ingressGbps: 60, egressGbps: 200, requestsPerSec: 40_000 };

export interface StagingModelInput {
  totalBytes: number;
  stagingAccounts: number;
  nodes: number;
  /** Accounts the input is read from. Default 1. */
  sourceAccounts?: number;
  limits?: StorageAccountLimits;
  /** Front-end network bandwidth of one compute node, Gbps. Default 25 (an assumption: pass your VM size's figure). */
  nodeNetworkGbps?: number;
  /** Bytes per ranged GET when a node downloads a shard. Default 8 MiB. */
  readRequestBytes?: number;
  /** Bytes per Put Block From URL during the server-side copy. Default 100 MiB (one shard per call; a conservative block size). */
  copyBlockBytes?: number;
  /** Skip the copy stage (the data already sits in the staging accounts). */
  alreadyStaged?: boolean;
  /** The claim to test, seconds. Default 20. */
  claimSeconds?: number;
}

export type Bottleneck = 'source egress' | 'staging ingress' | 'staging egress' | 'node network' | 'request rate' | 'none';

export interface StageEstimate {
  seconds: number;
  gbps: number;
  bottleneck: Bottleneck;
  requests: number;
}

export interface StagingModel {
  input: Required<Omit<StagingModelInput, 'limits'>> & { limits: StorageAccountLimits };
  copy: StageEstimate;
  fanOut: StageEstimate;
  /** Copy, then fan-out. */
  sequentialSeconds: number;
  /** Fan-out of a shard starts as soon as that shard is copied: bounded by the slower stage. */
  pipelinedSeconds: number;
  /** End-to-end rate the claim needs, Gbps. */
  claimRequiredGbps: number;
  claimMet: boolean;
}

function bound(candidates: [Bottleneck, number][]): [Bottleneck, number] {
  return candidates.reduce((best, c) => (c[1] < best[1] ? c : best));
}

function stage(bits: number, requests: number, limits: [Bottleneck, number][]): StageEstimate {
  if (bits === 0) return { seconds: 0, gbps: 0, bottleneck: 'none', requests: 0 };
  const [bottleneck, gbps] = bound(limits);
  return { seconds: bits / (gbps * 1e9), gbps, bottleneck, requests };
}

export function modelStagingTime(input: StagingModelInput): StagingModel {
  const resolved = {
    totalBytes: input.totalBytes,
    stagingAccounts: input.stagingAccounts,
    nodes: input.nodes,
    sourceAccounts: input.sourceAccounts ?? 1,
    limits: input.limits ?? CONSERVATIVE_ACCOUNT_LIMITS,
    nodeNetworkGbps: input.nodeNetworkGbps ?? 25,
    readRequestBytes: input.readRequestBytes ?? 8 * 1024 * 1024,
    copyBlockBytes: input.copyBlockBytes ?? 100 * 1024 * 1024,
    alreadyStaged: input.alreadyStaged ?? false,
    claimSeconds: input.claimSeconds ?? 20,
  };
  for (const [k, v] of Object.entries(resolved)) {
    if (typeof v === 'number' && !(v >= 0 && Number.isFinite(v))) throw new RangeError(`${k} must be a finite number >= 0, got ${v}`);
  }
  if (resolved.stagingAccounts < 1 || resolved.nodes < 1 || resolved.sourceAccounts < 1) {
    throw new RangeError('stagingAccounts, nodes and sourceAccounts must be at least 1');
  }
  const { limits } = resolved;
  const bits = resolved.totalBytes * 8;

  const copyRequests = Math.ceil(resolved.totalBytes / resolved.copyBlockBytes);
  // Request-rate bound expressed as Gbps: requests/s the staging accounts accept times bits per request.
  const copyRequestGbps = (resolved.stagingAccounts * limits.requestsPerSec * resolved.copyBlockBytes * 8) / 1e9;
  const copy = resolved.alreadyStaged
    ? stage(0, 0, [])
    : stage(bits, copyRequests, [
        ['source egress', resolved.sourceAccounts * limits.egressGbps],
        ['staging ingress', resolved.stagingAccounts * limits.ingressGbps],
        ['request rate', copyRequestGbps],
      ]);

  const readRequests = Math.ceil(resolved.totalBytes / resolved.readRequestBytes);
  const readRequestGbps = (resolved.stagingAccounts * limits.requestsPerSec * resolved.readRequestBytes * 8) / 1e9;
  const fanOut = stage(bits, readRequests, [
    ['staging egress', resolved.stagingAccounts * limits.egressGbps],
    ['node network', resolved.nodes * resolved.nodeNetworkGbps],
    ['request rate', readRequestGbps],
  ]);

  const sequentialSeconds = copy.seconds + fanOut.seconds;
  const pipelinedSeconds = Math.max(copy.seconds, fanOut.seconds);
  return {
    input: resolved,
    copy,
    fanOut,
    sequentialSeconds,
    pipelinedSeconds,
    claimRequiredGbps: resolved.claimSeconds > 0 ? bits / resolved.claimSeconds / 1e9 : Infinity,
    claimMet: pipelinedSeconds <= resolved.claimSeconds,
  };
}
