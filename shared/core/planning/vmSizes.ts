/**
 * What an Azure VM size tells about a node, in one place: its name's parts, GPUs (the N families) and retirement
 * (refused at validation), and the cores and Batch quota family admission counts. RDMA is in shared/core/mpi/rdmaPresets.ts
 * (isRdmaCapable). Azure size names are `[Standard_]<family><vCPUs>[-<constrained>]<features>[_<accelerator>][_v<n>]`.
 */
const SIZE = /^(?:standard_|basic_)?([a-z]+)(\d+)(?:-\d+)?([a-z]*)(?:_(.*))?$/i;

export interface VmSizeParts {
  family: string;
  vcpus: number;
  features: string;
  /** Whatever follows the first "_" after the features: "v3", "A100_v4", "H100_v5". */
  suffix?: string;
}

export function parseVmSize(vmSize: string): VmSizeParts | undefined {
  const m = SIZE.exec(vmSize.trim());
  if (!m) return undefined;
  return { family: m[1].toLowerCase(), vcpus: Number(m[2]), features: m[3].toLowerCase(), suffix: m[4]?.toLowerCase() };
}

/** The GPU families: NC (compute), ND (deep learning, NVLink/IB), NV (visualisation). */
const GPU_FAMILIES = ['nc', 'nd', 'nv'];

/** Whether the size has GPUs (NC, ND and NV families: Standard_NC24ads_A100_v4, Standard_ND96asr_v4, Standard_NV36ads_A10_v5, …). */
export function isGpuSize(vmSize: string): boolean {
  const p = parseVmSize(vmSize);
  return !!p && GPU_FAMILIES.includes(p.family);
}

export interface RetiredSize {
  /** The retired series, as Azure names it. */
  series: string;
  /** The retirement date (ISO), or a phrase when the date is not one this table can vouch for. */
  retired: string;
  successors: string;
}

interface RetirementRule extends RetiredSize {
  matches(p: VmSizeParts): boolean;
}

const only = (p: VmSizeParts, features: string[], suffixes: (string | undefined)[]) => features.includes(p.features) && suffixes.includes(p.suffix);

/**
 * Retired HPC and GPU sizes that a job spec may still name (published recipes use them): Batch cannot allocate them,
 * so they are refused at the door with their successors instead of failing minutes later in a resize error.
 */
const RETIRED: RetirementRule[] = [
  {
    series: 'H-series (H8, H8m, H16, H16m, H16r, H16mr)',
    retired: 'no longer offered',
    successors: 'HBv3/HBv4 (Standard_HB120rs_v3, Standard_HB176rs_v4) or HC-series (Standard_HC44rs); HX for large memory (Standard_HX176rs)',
    matches: (p) => p.family === 'h' && [8, 16].includes(p.vcpus) && only(p, ['', 'm', 'r', 'mr'], [undefined]),
  },
  {
    series: 'A8–A11 (compute-intensive A-series)',
    retired: '2021-03-01',
    successors: 'HBv3 (Standard_HB120rs_v3) or HC-series (Standard_HC44rs) for InfiniBand',
    matches: (p) => p.family === 'a' && p.vcpus >= 8 && p.vcpus <= 11 && only(p, [''], [undefined]),
  },
  {
    series: 'NC-series v1 (K80: NC6, NC12, NC24, NC24r)',
    retired: '2023-09-06',
    successors: 'NC A100 v4 (Standard_NC24ads_A100_v4) or NCasT4_v3 (Standard_NC4as_T4_v3); ND A100 v4 (Standard_ND96asr_v4) with InfiniBand',
    matches: (p) => p.family === 'nc' && [6, 12, 24].includes(p.vcpus) && only(p, ['', 'r'], [undefined]),
  },
  {
    series: 'NCv2-series (P100: NC6s_v2 … NC24rs_v2)',
    retired: '2023-09-06',
    successors: 'NC A100 v4 (Standard_NC24ads_A100_v4); ND A100 v4 (Standard_ND96asr_v4) with InfiniBand',
    matches: (p) => p.family === 'nc' && [6, 12, 24].includes(p.vcpus) && only(p, ['s', 'rs'], ['v2']),
  },
  {
    series: 'NCv3-series without InfiniBand (V100: NC6s_v3, NC12s_v3, NC24s_v3)',
    retired: '2025-09-30',
    successors: 'NC A100 v4 (Standard_NC24ads_A100_v4); ND A100 v4 (Standard_ND96asr_v4) with InfiniBand',
    matches: (p) => p.family === 'nc' && [6, 12, 24].includes(p.vcpus) && only(p, ['s'], ['v3']),
  },
  {
    series: 'ND-series v1 (P40: ND6s, ND12s, ND24s, ND24rs)',
    retired: '2023-09-06',
    successors: 'ND A100 v4 (Standard_ND96asr_v4) or NDm A100 v4 (Standard_ND96amsr_A100_v4)',
    matches: (p) => p.family === 'nd' && [6, 12, 24].includes(p.vcpus) && only(p, ['s', 'rs'], [undefined]),
  },
  {
    series: 'NV-series v1 (M60: NV6, NV12, NV24)',
    retired: '2023-09-06',
    successors: 'NVadsA10 v5 (Standard_NV36ads_A10_v5) or NVv3 (Standard_NV12s_v3)',
    matches: (p) => p.family === 'nv' && [6, 12, 24].includes(p.vcpus) && only(p, [''], [undefined]),
  },
];

/** The retirement of this size, or undefined when Azure still offers it (as far as this table knows). */
export function retiredVmSize(vmSize: string): RetiredSize | undefined {
  const p = parseVmSize(vmSize);
  const rule = p && RETIRED.find((r) => r.matches(p));
  return rule && { series: rule.series, retired: rule.retired, successors: rule.successors };
}

/** Every retirement rule, for the docs. */
export function retiredSeries(): RetiredSize[] {
  return RETIRED.map(({ series, retired, successors }) => ({ series, retired, successors }));
}

/**
 * Cores and Batch quota family per VM size: what admission counts against the Batch account's dedicated core quota
 * (per VM family and in total). One table, used by admission and by the local Batch emulator's quota model.
 *
 * The family names are the ones the Batch account's `dedicatedCoreQuotaPerVMFamily` (management plane) reports, e.g.
 * `standardHBv3Family`. The entries were collected from public quota listings and SKU tables; they were not checked
 * against a live subscription here (no Azure access). Constrained-core sizes (Standard_HB120-96rs_v3) count the cores
 * of the size they are cut from, as they are billed and allocated as that size.
 *
 * A size not in the table counts the vCPUs its name carries (Azure names put the vCPU count after the series letters:
 * Standard_D8s_v5 has 8) in the family {@link UNLISTED_FAMILY}, which only the account's total core quota limits
 * unless the quota setting names it. A name without a number counts 1 core per node.
 */
export interface VmSizeInfo {
  /** vCPUs per node, as the quota counts them. */
  cores: number;
  /** Batch quota family, e.g. "standardHBv3Family". */
  family: string;
  /** Whether the size is in the table (false: counted by the naming rule). */
  listed: boolean;
}

export const UNLISTED_FAMILY = 'unlistedFamily';

type Entry = readonly [cores: number, family: string];

const series = (family: string, sizes: Record<string, number>): [string, Entry][] =>
  Object.entries(sizes).map(([size, cores]) => [size, [cores, family] as const]);

const ENTRIES: readonly [string, Entry][] = [
  ...series('standardHBv3Family', {
    Standard_HB120rs_v3: 120,
    'Standard_HB120-96rs_v3': 120,
    'Standard_HB120-64rs_v3': 120,
    'Standard_HB120-32rs_v3': 120,
    'Standard_HB120-16rs_v3': 120,
  }),
  ...series('standardHBv4Family', {
    Standard_HB176rs_v4: 176,
    'Standard_HB176-144rs_v4': 176,
    'Standard_HB176-96rs_v4': 176,
    'Standard_HB176-48rs_v4': 176,
    'Standard_HB176-24rs_v4': 176,
  }),
  ...series('standardHBrsv2Family', {
    Standard_HB120rs_v2: 120,
    'Standard_HB120-96rs_v2': 120,
    'Standard_HB120-64rs_v2': 120,
    'Standard_HB120-32rs_v2': 120,
    'Standard_HB120-16rs_v2': 120,
  }),
  ...series('standardHBSFamily', { Standard_HB60rs: 60 }),
  ...series('standardHCSFamily', { Standard_HC44rs: 44, 'Standard_HC44-32rs': 44, 'Standard_HC44-16rs': 44 }),
  ...series('standardHXFamily', {
    Standard_HX176rs: 176,
    'Standard_HX176-144rs': 176,
    'Standard_HX176-96rs': 176,
    'Standard_HX176-48rs': 176,
    'Standard_HX176-24rs': 176,
  }),
  ...series('standardHFamily', { Standard_H8: 8, Standard_H16: 16, Standard_H8m: 8, Standard_H16m: 16, Standard_H16r: 16, Standard_H16mr: 16 }),
  ...series('standardDv2Family', { Standard_D1_v2: 1, Standard_D2_v2: 2, Standard_D3_v2: 4, Standard_D4_v2: 8, Standard_D5_v2: 16 }),
  ...series('standardDv3Family', { Standard_D2_v3: 2, Standard_D4_v3: 4, Standard_D8_v3: 8, Standard_D16_v3: 16, Standard_D32_v3: 32, Standard_D64_v3: 64 }),
  ...series('standardDSv3Family', {
    Standard_D2s_v3: 2,
    Standard_D4s_v3: 4,
    Standard_D8s_v3: 8,
    Standard_D16s_v3: 16,
    Standard_D32s_v3: 32,
    Standard_D64s_v3: 64,
  }),
  ...series('standardDSv5Family', {
    Standard_D2s_v5: 2,
    Standard_D4s_v5: 4,
    Standard_D8s_v5: 8,
    Standard_D16s_v5: 16,
    Standard_D32s_v5: 32,
    Standard_D64s_v5: 64,
    Standard_D96s_v5: 96,
  }),
  ...series('standardDASv5Family', {
    Standard_D2as_v5: 2,
    Standard_D4as_v5: 4,
    Standard_D8as_v5: 8,
    Standard_D16as_v5: 16,
    Standard_D32as_v5: 32,
    Standard_D64as_v5: 64,
    Standard_D96as_v5: 96,
  }),
  ...series('standardEDSv5Family', {
    Standard_E2ds_v5: 2,
    Standard_E4ds_v5: 4,
    Standard_E8ds_v5: 8,
    Standard_E16ds_v5: 16,
    Standard_E32ds_v5: 32,
    Standard_E64ds_v5: 64,
    Standard_E96ds_v5: 96,
  }),
  ...series('standardFSv2Family', {
    Standard_F2s_v2: 2,
    Standard_F4s_v2: 4,
    Standard_F8s_v2: 8,
    Standard_F16s_v2: 16,
    Standard_F32s_v2: 32,
    Standard_F48s_v2: 48,
    Standard_F64s_v2: 64,
    Standard_F72s_v2: 72,
  }),
  ...series('standardNCSv3Family', { Standard_NC6s_v3: 6, Standard_NC12s_v3: 12, Standard_NC24s_v3: 24, Standard_NC24rs_v3: 24 }),
  ...series('standardNDSv2Family', { Standard_ND40rs_v2: 40 }),
  ...series('Standard NDASv4_A100 Family', { Standard_ND96asr_v4: 96 }),
];

const TABLE: ReadonlyMap<string, Entry> = new Map(ENTRIES.map(([size, entry]) => [size.toLowerCase(), entry] as const));

/**
 * Every size of the built-in table: the control plane's offline fallback when it cannot read the account's sizes
 * (shared/core/planning/azureFacts.ts offlineFacts). Not what a region offers: nothing is refused on its word.
 */
export function listedVmSizes(): { name: string; cores: number; family: string }[] {
  return ENTRIES.map(([name, [cores, family]]) => ({ name, cores, family }));
}

export function vmSizeInfo(vmSize: string): VmSizeInfo {
  const entry = TABLE.get(vmSize.trim().toLowerCase());
  if (entry) return { cores: entry[0], family: entry[1], listed: true };
  // The vCPU count a size name carries after the series letters (Standard_D8s_v5 → 8).
  const cores = parseVmSize(vmSize)?.vcpus ?? 1;
  return { cores: Number.isSafeInteger(cores) && cores > 0 ? cores : 1, family: UNLISTED_FAMILY, listed: false };
}
