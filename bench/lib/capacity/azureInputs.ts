/**
 * Azure-documented inputs of the capacity model, each with where it comes from (docs/capacity.md cites them in full).
 * Figures marked ASSUMPTION have no published number; they are planning values, changed in one place here.
 */
import { CONSERVATIVE_ACCOUNT_LIMITS } from '../../../shared/core/planning/stagingModel';
import { DEFAULT_PULL_BACKOFF, delayMs } from '../../../shared/core/planning/backoff';
import type { JobInputs } from './jobModel';
import type { DayInputs } from './dayModel';

const GB = 1e9;
const MB = 1e6;

/** HB120rs_v3: 120 cores. Front-end network of the HBv3 sizes (hbv3-series page); ASSUMPTION that a node sustains 40 Gbps. */
export const HB_NODE = { vmSize: 'Standard_HB120rs_v3', family: 'standardHBv3Family', cores: 120, nicGbps: 40 };

export const AZURE_JOB: Omit<JobInputs, 'nodes' | 'inputBytes' | 'imageBytes'> = {
  inputFileBytes: 1 * GB,
  // HTTP intake + queue trigger + Durable start + admission pass: seconds (ASSUMPTION; the local figure is 0.2 s).
  intakeS: 5,
  // Batch publishes no allocation time (notes: "plan for minutes, 5–15 min is common"): nodes idle evenly from 5 to 10 min.
  allocationFirstS: 300,
  allocationLastS: 600,
  // The deployment's defaults: POLL_INITIAL_MS 5 s, doubling, POLL_MAX_MS 60 s (shared/adapters/config).
  poll: { baseMs: 5_000, maxMs: 60_000, factor: 2 },
  // ACR Premium "download bandwidth" 100 MBps per the published tier table (older page); ASSUMPTION that the registry
  // serves 10 such pulls at once (1 GB/s aggregate) — the page gives no aggregate figure.
  registryBps: 1 * GB,
  perPullBps: 100 * MB,
  pullOverheadS: 10,
  // Node-to-node copies: docker save | ssh | docker load bound by disk and CPU, not the 40 Gbps NIC: ASSUMPTION 500 MB/s.
  peerBps: 500 * MB,
  peerOverheadS: 5,
  copyOverheadS: 5,
  stagingAccounts: 10,
  accountLimits: CONSERVATIVE_ACCOUNT_LIMITS,
  nodeBps: (HB_NODE.nicGbps * GB) / 8,
  downloadOverheadS: 3,
  // Preflight on 100 HB nodes (probes, compile, ring over IB): ASSUMPTION one minute.
  preflightS: 60,
  mpiStartS: 5,
  pullConcurrency: 10,
};

export const IMAGE_BYTES = 10 * GB;
export const ONE_TB = 1e12;

/** A day of 1,000 jobs on HB120rs_v3 nodes. */
export const AZURE_DAY: DayInputs = {
  jobs: 1000,
  classes: [
    { name: 'small', share: 60, nodes: 4, inputBytes: 10 * GB, imageBytes: 2 * GB, runMinutes: 20 },
    { name: 'medium', share: 25, nodes: 8, inputBytes: 100 * GB, imageBytes: 5 * GB, runMinutes: 30 },
    { name: 'large', share: 12, nodes: 32, inputBytes: 300 * GB, imageBytes: 10 * GB, runMinutes: 60 },
    { name: 'xl', share: 3, nodes: 100, inputBytes: 1e12, imageBytes: 10 * GB, runMinutes: 120 },
  ],
  coresPerNode: HB_NODE.cores,
  family: HB_NODE.family,
  // Batch default quotas are 0–900 dedicated cores by offer and 0–100 pools (batch-quota-limit); HPC deployments raise
  // them: ASSUMPTION 60,000 HBv3 cores (500 nodes) and 100 pools.
  limits: { queues: [{ name: 'default', priority: 0 }], coreQuota: { total: 60_000, families: { [HB_NODE.family]: 60_000 } }, maxPools: 100, backfillLimit: 5 },
  burstShare: 0.1,
  seed: 30,
  registryOpsPerPull: 12,
  taskHubPartitions: 4,
  serviceLimits: {
    storageAccount: {
      service: 'storage account requests (control-plane account)',
      perSecond: 20_000,
      then: '503 ServerBusy; the storage SDKs retry with exponential backoff, Durable episodes slow down',
      source: 'Storage scalability targets, standard GPv2: 20,000 req/s (40,000 in large regions)',
    },
    tablePartition: {
      service: 'Table partition (Admission partition)',
      perSecond: 2_000,
      then: 'admission passes retry their guarded transaction; grants wait for the next pass (ADMISSION_POLL_SECONDS)',
      source: 'Table scalability targets: 2,000 entities/s per partition, 20,000 tx/s per account',
    },
    controlQueue: {
      service: 'Durable control queue (one of 4 partitions)',
      perSecond: 2_000,
      then: 'orchestrator messages queue up: episodes start late (more latency, no loss); partitionCount can go to 16',
      source: 'Queue targets: 2,000 messages/s per queue; Durable AzureStorageOptions.PartitionCount default 4, max 16',
    },
    registryOps: {
      service: 'ACR Premium read operations',
      perSecond: 10_000 / 60,
      then: `429 TOOMANYREQUESTS; pulls back off (DEFAULT_PULL_BACKOFF: ${DEFAULT_PULL_BACKOFF.baseMs / 1000} s doubling to ${DEFAULT_PULL_BACKOFF.maxMs / 1000} s, jittered; 3rd retry waits ≤ ${delayMs(3, DEFAULT_PULL_BACKOFF, 0.999) / 1000} s) within the window`,
      source: 'ACR service tiers (published table, older page): ReadOps/minute 1,000 / 3,000 / 10,000 (Basic/Standard/Premium)',
    },
    registryBandwidth: {
      service: 'registry egress (bytes/s)',
      perSecond: 1 * GB,
      then: 'pulls slow down (bandwidth shared); no errors',
      source: 'ASSUMPTION: 10 concurrent pulls × 100 MBps (ACR Premium per-pull download bandwidth)',
    },
    batchApi: {
      service: 'Batch data-plane requests',
      perSecond: Infinity,
      then: 'no published limit; an overloaded account answers 503 ServerBusy / 500 OperationTimedOut, retried with backoff',
      source: 'batch-quota-limit: no per-account request rate is published',
    },
  },
};
