/**
 * What an Azure VM size name tells about the node: GPUs (the N families) and retirement. RDMA is in rdmaPresets.ts
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
