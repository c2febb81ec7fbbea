/**
 * What the emulated Batch account offers: the VM sizes of its region (Location_ListSupportedVirtualMachineSkus), the
 * images and node agent SKUs it supports (Account_ListSupportedImages) and its default quotas (the account GET). Data,
 * not code: every series names where its numbers come from. The emulator answers the listings from here and refuses
 * a pool whose size, image or agent is not here, as Batch does (handlers/rules.ts checkPoolCatalog).
 *
 * Sources (checked 2026-11 through public documentation; no live subscription was queried):
 * - Sizes: learn.microsoft.com/azure/virtual-machines/sizes/high-performance-compute/* (hbv3-series, hbv4-series,
 *   hbv5-series, hc-series, hx-series), …/sizes/gpu-accelerated/nd-family (ND A100 v4, ND H100 v5), nc-a100-v4-series,
 *   …/sizes/general-purpose/dv5-series, dsv5-series, …/memory-optimized/ev5-series, esv5-series, edsv5-series,
 *   …/compute-optimized/fsv2-series; the quota family names as Azure spells them (`standardHBv3Family`, with the
 *   odd `Standard NDASv4_A100 Family`) from the AKS node size table of microsoft/aspire (AksNodeVmSizes.cs), which is
 *   generated from the Compute resource SKUs API.
 * - Capability names (`vCPUs`, `vCPUsAvailable`, `MemoryGB`, `GPUs`, `RdmaEnabled`, `LowPriorityCapable`,
 *   `HyperVGenerations`, `CpuArchitectureType`): the Compute resource SKUs API, which Batch's virtualMachineSkus
 *   listing passes through (BatchManagement 2023-11-01 SupportedSku/SkuCapability). Memory is GiB as Azure reports it.
 * - Max task slots: min(4 × vCPUs, 256), Batch's documented limit for taskSlotsPerNode (notes/azure-platform.md).
 * - Images: learn.microsoft.com/azure/batch/batch-linux-nodes and the Get-AzBatchSupportedImage output format;
 *   the HPC images from learn.microsoft.com/azure/virtual-machines/configure (Ubuntu-HPC `microsoft-dsvm:ubuntu-hpc`,
 *   AlmaLinux-HPC `almalinux:almalinux-hpc`); the Batch container images `microsoft-azure-batch:ubuntu-server-container*`.
 * - Default quotas: learn.microsoft.com/azure/batch/batch-quota-limit (dedicated cores 0–900 by offer, low-priority
 *   10–100, pools 0–100, active jobs and schedules 100–300): the emulator takes the upper defaults.
 */

export interface CatalogSize {
  name: string;
  /** The quota family, as the account's dedicatedCoreQuotaPerVMFamily names it. */
  family: string;
  /** vCPUs the size is billed and counted against quota for (a constrained-core size counts its parent's). */
  vCPUs: number;
  /** vCPUs the OS sees (differs from vCPUs only for constrained-core sizes such as Standard_HB120-96rs_v3). */
  vCPUsAvailable: number;
  memoryGiB: number;
  gpus: number;
  /** InfiniBand (RDMA) network. */
  rdma: boolean;
  /** Hyper-V generations the size boots. */
  generations: 'V1,V2' | 'V2';
}

/** A series: one family, its sizes as [name, vCPUs, vCPUsAvailable, memory GiB, GPUs]. */
interface Series {
  family: string;
  rdma: boolean;
  generations: CatalogSize['generations'];
  source: string;
  sizes: [name: string, vCPUs: number, vCPUsAvailable: number, memoryGiB: number, gpus: number][];
}

const cpu = (name: string, vcpus: number, memoryGiB: number): Series['sizes'][number] => [name, vcpus, vcpus, memoryGiB, 0];
/** A constrained-core size: counted as its parent (`full` vCPUs), running `active` of them. */
const cut = (name: string, full: number, active: number, memoryGiB: number): Series['sizes'][number] => [name, full, active, memoryGiB, 0];
/** General-purpose sizes with `ratio` GiB per vCPU: Standard_D<n>s_v5 etc. */
const ratio = (pattern: (n: number) => string, counts: number[], gibPerVcpu: number, cap?: number) =>
  counts.map((n) => cpu(pattern(n), n, cap !== undefined && n * gibPerVcpu > cap ? cap : n * gibPerVcpu));

const SERIES: Series[] = [
  // --- HPC (InfiniBand) ---
  {
    family: 'standardHBv3Family',
    rdma: true,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/high-performance-compute/hbv3-series',
    sizes: [
      cpu('Standard_HB120rs_v3', 120, 448),
      cut('Standard_HB120-96rs_v3', 120, 96, 448),
      cut('Standard_HB120-64rs_v3', 120, 64, 448),
      cut('Standard_HB120-32rs_v3', 120, 32, 448),
      cut('Standard_HB120-16rs_v3', 120, 16, 448),
    ],
  },
  {
    family: 'standardHBv4Family',
    rdma: true,
    generations: 'V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/high-performance-compute/hbv4-series',
    sizes: [
      cpu('Standard_HB176rs_v4', 176, 768),
      cut('Standard_HB176-144rs_v4', 176, 144, 768),
      cut('Standard_HB176-96rs_v4', 176, 96, 768),
      cut('Standard_HB176-48rs_v4', 176, 48, 768),
      cut('Standard_HB176-24rs_v4', 176, 24, 768),
    ],
  },
  {
    // HBv5 (HBM3 memory): documented since 2025; the memory is what the Compute SKU table reports.
    family: 'standardHBv5Family',
    rdma: true,
    generations: 'V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/high-performance-compute/hbv5-series; aspire AksNodeVmSizes.cs',
    sizes: [
      cpu('Standard_HB368rs_v5', 368, 448),
      cut('Standard_HB368-336rs_v5', 368, 336, 448),
      cut('Standard_HB368-288rs_v5', 368, 288, 448),
      cut('Standard_HB368-240rs_v5', 368, 240, 448),
      cut('Standard_HB368-192rs_v5', 368, 192, 448),
      cut('Standard_HB368-144rs_v5', 368, 144, 448),
      cut('Standard_HB368-96rs_v5', 368, 96, 448),
      cut('Standard_HB368-48rs_v5', 368, 48, 448),
    ],
  },
  {
    family: 'standardHCSFamily',
    rdma: true,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/high-performance-compute/hc-series',
    sizes: [cpu('Standard_HC44rs', 44, 352), cut('Standard_HC44-32rs', 44, 32, 352), cut('Standard_HC44-16rs', 44, 16, 352)],
  },
  {
    family: 'standardHXFamily',
    rdma: true,
    generations: 'V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/high-performance-compute/hx-series',
    sizes: [
      cpu('Standard_HX176rs', 176, 1408),
      cut('Standard_HX176-144rs', 176, 144, 1408),
      cut('Standard_HX176-96rs', 176, 96, 1408),
      cut('Standard_HX176-48rs', 176, 48, 1408),
      cut('Standard_HX176-24rs', 176, 24, 1408),
    ],
  },
  // --- GPU ---
  {
    family: 'Standard NDASv4_A100 Family',
    rdma: true,
    generations: 'V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nda100v4-series (8 × A100 40 GB, 8 × 200 Gb/s HDR InfiniBand)',
    sizes: [['Standard_ND96asr_v4', 96, 96, 900, 8]],
  },
  {
    family: 'standardNDSH100v5Family',
    rdma: true,
    generations: 'V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/ndh100v5-series (8 × H100 80 GB, 8 × 400 Gb/s NDR InfiniBand)',
    sizes: [['Standard_ND96isr_H100_v5', 96, 96, 1900, 8]],
  },
  {
    family: 'StandardNCADSA100v4Family',
    rdma: false,
    generations: 'V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/gpu-accelerated/nca100v4-series',
    sizes: [
      ['Standard_NC24ads_A100_v4', 24, 24, 220, 1],
      ['Standard_NC48ads_A100_v4', 48, 48, 440, 2],
      ['Standard_NC96ads_A100_v4', 96, 96, 880, 4],
    ],
  },
  // --- General purpose, memory and compute optimised ---
  {
    family: 'standardDSv5Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dsv5-series (4 GiB per vCPU)',
    sizes: ratio((n) => `Standard_D${n}s_v5`, [2, 4, 8, 16, 32, 48, 64, 96], 4),
  },
  {
    family: 'standardDv5Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dv5-series (4 GiB per vCPU)',
    sizes: ratio((n) => `Standard_D${n}_v5`, [2, 4, 8, 16, 32, 48, 64, 96], 4),
  },
  {
    family: 'standardDASv5Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dasv5-series (4 GiB per vCPU)',
    sizes: ratio((n) => `Standard_D${n}as_v5`, [2, 4, 8, 16, 32, 48, 64, 96], 4),
  },
  {
    // Still offered (not retired); kept because published recipes and the project's tests use it.
    family: 'standardDSv3Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dsv3-series (4 GiB per vCPU)',
    sizes: ratio((n) => `Standard_D${n}s_v3`, [2, 4, 8, 16, 32, 48, 64], 4),
  },
  {
    // Previous generation, still offered (Microsoft's retirement notice dates the Dv2/DSv2 sizes' end to 2028; only
    // their reserved instances stopped selling, 2026-07-01): the Batch Shipyard recipes run on STANDARD_D1_V2/D2_V2.
    family: 'standardDv2Family',
    rdma: false,
    generations: 'V1,V2',
    source:
      'learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dv2-series (3.5 GiB per vCPU; retirement notice: learn.microsoft.com/azure/virtual-machines/retirement-notices)',
    sizes: [
      cpu('Standard_D1_v2', 1, 3.5),
      cpu('Standard_D2_v2', 2, 7),
      cpu('Standard_D3_v2', 4, 14),
      cpu('Standard_D4_v2', 8, 28),
      cpu('Standard_D5_v2', 16, 56),
    ],
  },
  {
    family: 'standardDv3Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dv3-series (4 GiB per vCPU)',
    sizes: ratio((n) => `Standard_D${n}_v3`, [2, 4, 8, 16, 32, 48, 64], 4),
  },
  {
    family: 'standardESv5Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/memory-optimized/esv5-series (8 GiB per vCPU, 672 GiB at 96/104)',
    sizes: ratio((n) => `Standard_E${n}s_v5`, [2, 4, 8, 16, 20, 32, 48, 64, 96, 104], 8, 672),
  },
  {
    family: 'standardEv5Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/memory-optimized/ev5-series (8 GiB per vCPU, 672 GiB at 96/104)',
    sizes: ratio((n) => `Standard_E${n}_v5`, [2, 4, 8, 16, 20, 32, 48, 64, 96, 104], 8, 672),
  },
  {
    family: 'standardEDSv5Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/memory-optimized/edsv5-series (8 GiB per vCPU, 672 GiB at 96/104)',
    sizes: ratio((n) => `Standard_E${n}ds_v5`, [2, 4, 8, 16, 20, 32, 48, 64, 96, 104], 8, 672),
  },
  {
    family: 'standardFSv2Family',
    rdma: false,
    generations: 'V1,V2',
    source: 'learn.microsoft.com/azure/virtual-machines/sizes/compute-optimized/fsv2-series (2 GiB per vCPU)',
    sizes: ratio((n) => `Standard_F${n}s_v2`, [2, 4, 8, 16, 32, 48, 64, 72], 2),
  },
];

export const CATALOG_SIZES: readonly CatalogSize[] = SERIES.flatMap((s) =>
  s.sizes.map(([name, vCPUs, vCPUsAvailable, memoryGiB, gpus]) => ({
    name,
    family: s.family,
    vCPUs,
    vCPUsAvailable,
    memoryGiB,
    gpus,
    rdma: s.rdma,
    generations: s.generations,
  })),
);

const BY_NAME = new Map(CATALOG_SIZES.map((s) => [s.name.toLowerCase(), s]));

/** The size of this name (Batch compares VM size names case-insensitively), or undefined. */
export function catalogSize(vmSize: string): CatalogSize | undefined {
  return BY_NAME.get(vmSize.trim().toLowerCase());
}

/** Batch's limit on taskSlotsPerNode: 4 × vCPUs, at most 256. */
export function maxTaskSlots(size: CatalogSize): number {
  return Math.min(4 * size.vCPUsAvailable, 256);
}

/** The capabilities list as the management plane's virtualMachineSkus returns it (all values are strings). */
export function skuCapabilities(size: CatalogSize): { name: string; value: string }[] {
  return [
    { name: 'vCPUs', value: String(size.vCPUs) },
    { name: 'vCPUsAvailable', value: String(size.vCPUsAvailable) },
    { name: 'MemoryGB', value: String(size.memoryGiB) },
    { name: 'GPUs', value: String(size.gpus) },
    { name: 'RdmaEnabled', value: size.rdma ? 'True' : 'False' },
    { name: 'LowPriorityCapable', value: 'True' },
    { name: 'HyperVGenerations', value: size.generations },
    { name: 'CpuArchitectureType', value: 'x64' },
  ];
}

export interface CatalogImage {
  imageReference: { publisher: string; offer: string; sku: string; version: 'latest' };
  nodeAgentSKUId: string;
  osType: 'linux' | 'windows';
  capabilities?: string[];
  verificationType: 'verified' | 'unverified';
  batchSupportEndOfLife?: string;
}

const image = (urn: string, nodeAgentSKUId: string, extra: Partial<CatalogImage> = {}): CatalogImage => {
  const [publisher, offer, sku] = urn.split(':');
  return { imageReference: { publisher, offer, sku, version: 'latest' }, nodeAgentSKUId, osType: 'linux', verificationType: 'verified', ...extra };
};

/**
 * The supported images (publisher:offer:sku → node agent SKU). Ubuntu 20.04 images carry Batch's end of life for
 * that release (2025-04-30, announced in the Batch images retirement notices); the emulator lists them as Batch did
 * until then, with the date, and still accepts them (the date is in the emulated past, but refusing them would hide
 * the notice the listing gives).
 */
export const CATALOG_IMAGES: readonly CatalogImage[] = [
  image('microsoft-dsvm:ubuntu-hpc:2204', 'batch.node.ubuntu 22.04'),
  image('microsoft-dsvm:ubuntu-hpc:2004', 'batch.node.ubuntu 20.04', { batchSupportEndOfLife: '2025-04-30T00:00:00Z' }),
  image('almalinux:almalinux-hpc:8_7-hpc-gen2', 'batch.node.el 8'),
  image('almalinux:almalinux-hpc:8_6-hpc-gen2', 'batch.node.el 8'),
  image('canonical:0001-com-ubuntu-server-jammy:22_04-lts', 'batch.node.ubuntu 22.04'),
  image('canonical:0001-com-ubuntu-server-jammy:22_04-lts-gen2', 'batch.node.ubuntu 22.04'),
  image('canonical:ubuntu-24_04-lts:server', 'batch.node.ubuntu 24.04'),
  image('canonical:0001-com-ubuntu-server-focal:20_04-lts', 'batch.node.ubuntu 20.04', { batchSupportEndOfLife: '2025-04-30T00:00:00Z' }),
  image('microsoft-azure-batch:ubuntu-server-container:20-04-lts', 'batch.node.ubuntu 20.04', {
    capabilities: ['DockerCompatible', 'NvidiaTeslaDriverInstalled'],
    batchSupportEndOfLife: '2025-04-30T00:00:00Z',
  }),
  image('microsoft-azure-batch:ubuntu-server-container-rdma:20-04-lts', 'batch.node.ubuntu 20.04', {
    capabilities: ['DockerCompatible', 'NvidiaTeslaDriverInstalled', 'SupportsRDMAOnlyInHpcSkus'],
    batchSupportEndOfLife: '2025-04-30T00:00:00Z',
  }),
  image('microsoftwindowsserver:windowsserver:2022-datacenter', 'batch.node.windows amd64', { osType: 'windows' }),
  image('microsoftwindowsserver:windowsserver:2019-datacenter', 'batch.node.windows amd64', { osType: 'windows' }),
];

/** The node agent SKU ids the account knows (any image's). */
export const NODE_AGENT_SKUS: readonly string[] = [...new Set(CATALOG_IMAGES.map((i) => i.nodeAgentSKUId))];

const lc = (s: unknown) => (typeof s === 'string' ? s.trim().toLowerCase() : '');

/** The supported images matching a marketplace reference (case-insensitive, as Batch matches them). */
export function catalogImages(ref: { publisher?: unknown; offer?: unknown; sku?: unknown }): CatalogImage[] {
  return CATALOG_IMAGES.filter(
    (i) => lc(ref.publisher) === i.imageReference.publisher && lc(ref.offer) === i.imageReference.offer && lc(ref.sku) === i.imageReference.sku,
  );
}

/** The account's quotas (Batch service allocation mode), as the management plane's account GET reports them. */
export interface AccountQuotas {
  dedicatedCoreQuota: number;
  lowPriorityCoreQuota: number;
  /** Dedicated cores per VM family (families not named have the default below). */
  dedicatedCoreQuotaPerVMFamily: Record<string, number>;
  dedicatedCoreQuotaPerVMFamilyEnforced: boolean;
  poolQuota: number;
  activeJobAndJobScheduleQuota: number;
}

/** What a new account gets (batch-quota-limit: the upper defaults), per family as much as the account total. */
export const DEFAULT_QUOTAS: AccountQuotas = {
  dedicatedCoreQuota: 900,
  lowPriorityCoreQuota: 100,
  dedicatedCoreQuotaPerVMFamily: {},
  dedicatedCoreQuotaPerVMFamilyEnforced: true,
  poolQuota: 100,
  activeJobAndJobScheduleQuota: 300,
};

/** Every catalog family with its quota: the configured one, else the account total (what a fresh account shows). */
export function familyQuotas(q: AccountQuotas): { name: string; coreQuota: number }[] {
  const families = [...new Set([...CATALOG_SIZES.map((s) => s.family), ...Object.keys(q.dedicatedCoreQuotaPerVMFamily)])];
  return families.map((name) => ({ name, coreQuota: q.dedicatedCoreQuotaPerVMFamily[name] ?? q.dedicatedCoreQuota }));
}
