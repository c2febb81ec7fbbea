/**
 * Per-VM-size node health thresholds, as Azure's own HPC node health checks (AzNHC) judge a node: data, not code.
 *
 * Source of every figure: github.com/Azure/azurehpc-health-checks, `conf/<size>.conf` at tag v0.4.5 (commit 2b9dca7,
 * the figures below are unchanged at 0e0a1ac, August 2025 + 51 commits, except that check_ib_link_flapping lost its
 * explicit `6` argument and now takes the script's defaults). The AzNHC check each field mirrors:
 * - `cpus`: `check_hw_cpuinfo <sockets> <cores> <threads>` (the threads figure: what `nproc` counts).
 * - `memKB` / `memTolerancePct`: `check_hw_physmem <min> <max> <fudge%>` (MemTotal of /proc/meminfo in kB, within
 *   the fudge below the figure).
 * - `ib.ports` / `ib.rateGbps`: one `check_hw_ib <rate> <device:port>` per port: the port is Active, LinkUp, at that
 *   rate (Gb/s, as `ibstat` prints it).
 * - `ibWriteGbps`: `check_ib_bw_non_gdr <Gb/s>` (customTests/azure_ib_write_bw_non_gdr.nhc): `ib_write_bw` loopback
 *   per device, 1 MiB messages, `--report_gbits`; the average must reach the figure. GPU sizes run the GPUDirect
 *   variant (`check_ib_bw_gdr`, CUDA-built perftest), which this check does not: none here.
 * - `streamMBps`: `check_cpu_stream <MB/s>` (customTests/azure_cpu_stream.nhc): each of STREAM's Copy, Scale, Add and
 *   Triad must reach the figure.
 * - `gpus`: `check_gpu_count <n>` (`nvidia-smi --list-gpus`).
 * - `linkFlaps`: `check_ib_link_flapping` defaults (customTests/azure_ib_link_flapping.nhc): fewer than 5 "lost
 *   carrier" events of an ib device in the last 24 h of syslog (LINK_FLAP_WINDOW_HOURS; AzNHC's own interval
 *   argument is 6 h in the conf files, and it fails on any event in it; we count over a day, as the issue asks).
 * - `gdr`: GPUDirect RDMA, which AzNHC's `check_ib_bw_gdr` (ND A100 v4 / ND H100 v5 confs, e.g. `check_ib_bw_gdr
 *   185.0 nd96asr_v4`) and `check_nccl_allreduce_ib_loopback` need: the peer-memory client registered, read as
 *   customTests/azure_gdr_detect.nhc reads it (`/sys/kernel/mm/memory_peers`, or `nvidia_peermem` / `nv_peer_mem` in
 *   the module list). Newer AzNHC releases (after v0.4.5) fall back to DMA-BUF when no peer-memory module is
 *   loaded (upstream-kernel images without DOCA/MOFED); such an image's jobs skip it (`preflight.health.skip: [gdr]`).
 */

export interface IbThreshold {
  /** The ports AzNHC names (`device:port`). */
  ports: string[];
  /** Least link rate, Gb/s. */
  rateGbps: number;
}

export interface SizeHealthThresholds {
  /** The AzNHC file the figures come from (under conf/). */
  source: string;
  cpus: number;
  memKB: number;
  memTolerancePct: number;
  ib?: IbThreshold;
  ibWriteGbps?: number;
  streamMBps?: number;
  gpus?: number;
  /** Lost-carrier events of an ib device within LINK_FLAP_WINDOW_HOURS at which the node fails. */
  linkFlaps?: number;
  /** GPUDirect RDMA must be available (the peer-memory module loaded). */
  gdr?: boolean;
}

/** How far back syslog's lost-carrier events count. */
export const LINK_FLAP_WINDOW_HOURS = 24;

/** The AzNHC release the figures are read from. */
export const AZNHC_REPOSITORY = 'github.com/Azure/azurehpc-health-checks';
export const AZNHC_TAG = 'v0.4.5';

const LINK_FLAPS = 5;
const ports = (n: number) => Array.from({ length: n }, (_, i) => `mlx5_ib${i}:1`);
const hbv3 = (cpus: number, conf: string): SizeHealthThresholds => ({
  source: `conf/${conf}.conf`,
  cpus,
  memKB: 470_543_164,
  memTolerancePct: 3,
  ib: { ports: ports(1), rateGbps: 200 },
  ibWriteGbps: 190,
  streamMBps: 320_000,
  linkFlaps: LINK_FLAPS,
});
const hbv4 = (cpus: number, conf: string): SizeHealthThresholds => ({
  source: `conf/${conf}.conf`,
  cpus,
  memKB: 792_561_408,
  memTolerancePct: 3,
  ib: { ports: ports(1), rateGbps: 400 },
  ibWriteGbps: 390,
  streamMBps: 665_500,
  linkFlaps: LINK_FLAPS,
});

/** Keyed by the size's name in lower case. */
const TABLE: Record<string, SizeHealthThresholds> = {
  standard_hb120rs_v2: {
    source: 'conf/hb120rs_v2.conf',
    cpus: 120,
    memKB: 470_543_164,
    memTolerancePct: 3,
    ib: { ports: ports(1), rateGbps: 200 },
    ibWriteGbps: 190,
    streamMBps: 285_000,
    linkFlaps: LINK_FLAPS,
  },
  standard_hb120rs_v3: hbv3(120, 'hb120rs_v3'),
  'standard_hb120-96rs_v3': hbv3(96, 'hb120-96rs_v3'),
  'standard_hb120-64rs_v3': hbv3(64, 'hb120-64rs_v3'),
  'standard_hb120-32rs_v3': hbv3(32, 'hb120-32rs_v3'),
  'standard_hb120-16rs_v3': hbv3(16, 'hb120-16rs_v3'),
  standard_hb176rs_v4: hbv4(176, 'hb176rs_v4'),
  'standard_hb176-144rs_v4': hbv4(144, 'hb176-144rs_v4'),
  'standard_hb176-96rs_v4': hbv4(96, 'hb176-96rs_v4'),
  'standard_hb176-48rs_v4': hbv4(48, 'hb176-48rs_v4'),
  'standard_hb176-24rs_v4': hbv4(24, 'hb176-24rs_v4'),
  standard_hx176rs: {
    source: 'conf/hx176rs.conf',
    cpus: 176,
    memKB: 1_444_918_756,
    memTolerancePct: 3,
    ib: { ports: ports(1), rateGbps: 400 },
    ibWriteGbps: 390,
    streamMBps: 665_500,
    linkFlaps: LINK_FLAPS,
  },
  // 354691MB in the file (NHC's MB are 1024 kB).
  standard_hc44rs: {
    source: 'conf/hc44rs.conf',
    cpus: 44,
    memKB: 354_691 * 1024,
    memTolerancePct: 4,
    ib: { ports: ports(1), rateGbps: 100 },
    ibWriteGbps: 95,
    linkFlaps: LINK_FLAPS,
  },
  standard_nd96asr_v4: {
    source: 'conf/nd96asr_v4.conf',
    cpus: 96,
    memKB: 928_858_388,
    memTolerancePct: 3,
    ib: { ports: ports(8), rateGbps: 200 },
    gpus: 8,
    linkFlaps: LINK_FLAPS,
    gdr: true,
  },
  standard_nd96amsr_a100_v4: {
    source: 'conf/nd96amsr_a100_v4.conf',
    cpus: 96,
    memKB: 1_857_830_712,
    memTolerancePct: 3,
    ib: { ports: ports(8), rateGbps: 200 },
    gpus: 8,
    linkFlaps: LINK_FLAPS,
    gdr: true,
  },
  // 1915071MB in the file.
  standard_nd96isr_h100_v5: {
    source: 'conf/nd96isr_h100_v5.conf',
    cpus: 96,
    memKB: 1_915_071 * 1024,
    memTolerancePct: 5,
    ib: { ports: ports(8), rateGbps: 400 },
    gpus: 8,
    linkFlaps: LINK_FLAPS,
    gdr: true,
  },
};

/** The thresholds of a VM size, or undefined for a size AzNHC (and so this table) has none for. */
export function healthThresholdsFor(vmSize: string): SizeHealthThresholds | undefined {
  return TABLE[vmSize.toLowerCase()];
}

/** Every size with thresholds (for docs and tests). */
export function sizesWithHealthThresholds(): string[] {
  return Object.keys(TABLE);
}
