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

const TABLE: ReadonlyMap<string, Entry> = new Map(
  [
    ...series('standardHBv3Family', {
      Standard_HB120rs_v3: 120, 'Standard_HB120-96rs_v3': 120, 'Standard_HB120-64rs_v3': 120, 'Standard_HB120-32rs_v3': 120, 'Standard_HB120-16rs_v3': 120,
    }),
    ...series('standardHBv4Family', {
      Standard_HB176rs_v4: 176, 'Standard_HB176-144rs_v4': 176, 'Standard_HB176-96rs_v4': 176, 'Standard_HB176-48rs_v4': 176, 'Standard_HB176-24rs_v4': 176,
    }),
    ...series('standardHBrsv2Family', { Standard_HB120rs_v2: 120, 'Standard_HB120-96rs_v2': 120, 'Standard_HB120-64rs_v2': 120, 'Standard_HB120-32rs_v2': 120, 'Standard_HB120-16rs_v2': 120 }),
    ...series('standardHBSFamily', { Standard_HB60rs: 60 }),
    ...series('standardHCSFamily', { Standard_HC44rs: 44, 'Standard_HC44-32rs': 44, 'Standard_HC44-16rs': 44 }),
    ...series('standardHXFamily', { Standard_HX176rs: 176, 'Standard_HX176-144rs': 176, 'Standard_HX176-96rs': 176, 'Standard_HX176-48rs': 176, 'Standard_HX176-24rs': 176 }),
    ...series('standardHFamily', { Standard_H8: 8, Standard_H16: 16, Standard_H8m: 8, Standard_H16m: 16, Standard_H16r: 16, Standard_H16mr: 16 }),
    ...series('standardDv3Family', { Standard_D2_v3: 2, Standard_D4_v3: 4, Standard_D8_v3: 8, Standard_D16_v3: 16, Standard_D32_v3: 32, Standard_D64_v3: 64 }),
    ...series('standardDSv3Family', { Standard_D2s_v3: 2, Standard_D4s_v3: 4, Standard_D8s_v3: 8, Standard_D16s_v3: 16, Standard_D32s_v3: 32, Standard_D64s_v3: 64 }),
    ...series('standardDSv5Family', { Standard_D2s_v5: 2, Standard_D4s_v5: 4, Standard_D8s_v5: 8, Standard_D16s_v5: 16, Standard_D32s_v5: 32, Standard_D64s_v5: 64, Standard_D96s_v5: 96 }),
    ...series('standardDASv5Family', { Standard_D2as_v5: 2, Standard_D4as_v5: 4, Standard_D8as_v5: 8, Standard_D16as_v5: 16, Standard_D32as_v5: 32, Standard_D64as_v5: 64, Standard_D96as_v5: 96 }),
    ...series('standardEDSv5Family', { Standard_E2ds_v5: 2, Standard_E4ds_v5: 4, Standard_E8ds_v5: 8, Standard_E16ds_v5: 16, Standard_E32ds_v5: 32, Standard_E64ds_v5: 64, Standard_E96ds_v5: 96 }),
    ...series('standardFSv2Family', { Standard_F2s_v2: 2, Standard_F4s_v2: 4, Standard_F8s_v2: 8, Standard_F16s_v2: 16, Standard_F32s_v2: 32, Standard_F48s_v2: 48, Standard_F64s_v2: 64, Standard_F72s_v2: 72 }),
    ...series('standardNCSv3Family', { Standard_NC6s_v3: 6, Standard_NC12s_v3: 12, Standard_NC24s_v3: 24, Standard_NC24rs_v3: 24 }),
    ...series('standardNDSv2Family', { Standard_ND40rs_v2: 40 }),
    ...series('Standard NDASv4_A100 Family', { Standard_ND96asr_v4: 96 }),
  ].map(([size, entry]) => [size.toLowerCase(), entry] as const),
);

/** The vCPU count in an Azure size name: the number after the series letters (Standard_D8s_v5 → 8). */
const NAME_CORES = /^(?:standard_|basic_)?[a-z]+(\d+)/i;

export function vmSizeInfo(vmSize: string): VmSizeInfo {
  const entry = TABLE.get(vmSize.trim().toLowerCase());
  if (entry) return { cores: entry[0], family: entry[1], listed: true };
  const m = NAME_CORES.exec(vmSize.trim());
  const cores = m ? Number(m[1]) : 1;
  return { cores: Number.isSafeInteger(cores) && cores > 0 ? cores : 1, family: UNLISTED_FAMILY, listed: false };
}
