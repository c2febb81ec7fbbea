/**
 * Intel MPI as Shipyard ran it, by the recipe's VM size, and what the imported spec does on its target size.
 * Shipyard (convoy/batch.py, shared/notes/batch-shipyard.md §2.1 "MPI command", IB extras), for runtime `intelmpi`
 * and `intelmpi-ofa`, always `I_MPI_FALLBACK=0`, and:
 * - NetworkDirect sizes (A8/A9, H16r/H16mr, NC24r…: retired): `I_MPI_FABRICS=shm:dapl I_MPI_DAPL_PROVIDER=ofa-v2-ib0
 *   I_MPI_DYNAMIC_CONNECTION=0 I_MPI_DAPL_TRANSLATION_CACHE=0`, with the host's CentOS-HPC Intel MPI bound into the
 *   container (-v /opt/intel:/opt/intel:ro) and /etc/dat.conf: the recipes' images hold no MPI runtime of their own;
 * - SR-IOV sizes (HB, HC, the _v2+ r sizes): `intelmpi-ofa` → `I_MPI_FABRICS=shm:ofa`; `intelmpi` →
 *   `I_MPI_FABRICS=shm:ofi FI_PROVIDER=mlx`;
 * - sizes without RDMA: no fabric setting (Intel MPI chose one itself).
 * Our presets (shared/core/mpi/rdmaPresets.ts): 2018 → shm:ofa / shm:tcp; 2019+ → shm:ofi with FI_PROVIDER mlx / tcp.
 * Pure.
 */
import { isRdmaCapable } from '../../../shared/core/mpi/rdmaPresets';

export type SizeClass = 'networkDirect' | 'sriov' | 'none';

/** NetworkDirect: the RDMA sizes before SR-IOV (A8/A9, H16r/H16mr, NC24r, NC24rs v1…), all retired. */
export function sizeClass(vmSize: string): SizeClass {
  if (!isRdmaCapable(vmSize)) return 'none';
  return /_v[2-9]$|^standard_h[bc]|^standard_nd\d+a|^standard_nd\d+is/i.test(vmSize) ? 'sriov' : 'networkDirect';
}

export interface IntelMpiMapping {
  /** reproduced: the same fabric settings Shipyard set; changed: runs, with the listed change; cannot: no working path. */
  verdict: 'reproduced' | 'changed' | 'cannot';
  /** What Shipyard set on the recipe's size. */
  shipyard: string;
  /** What the imported spec sets on its size. */
  ours: string;
  /** The whole report note. */
  note: string;
}

const SHIPYARD_SET: Record<SizeClass, (ofa: boolean) => string> = {
  networkDirect: () =>
    "I_MPI_FABRICS=shm:dapl, I_MPI_DAPL_PROVIDER=ofa-v2-ib0, I_MPI_DYNAMIC_CONNECTION=0, I_MPI_DAPL_TRANSLATION_CACHE=0, with the host's Intel MPI bound in at /opt/intel",
  sriov: (ofa) => (ofa ? 'I_MPI_FABRICS=shm:ofa' : 'I_MPI_FABRICS=shm:ofi, FI_PROVIDER=mlx'),
  none: () => 'no fabric setting (Intel MPI chose one itself)',
};

/**
 * The mapping of one recipe: its Shipyard runtime (`intelmpi`, `intelmpi-ofa`), its own size and the size the spec
 * uses (a retired size's successor, or the same). `version` is what the spec declares (the 2018 preset for
 * intelmpi-ofa), undefined for the 2019+ preset.
 */
export function intelMpiMapping(input: { ofa: boolean; originalSize: string; targetSize: string; version?: string }): IntelMpiMapping {
  const from = sizeClass(input.originalSize);
  const to = sizeClass(input.targetSize);
  const shipyard = `Shipyard set ${SHIPYARD_SET[from](input.ofa)} on ${input.originalSize}`;
  const gen2018 = input.version !== undefined && Number(/^\d+/.exec(input.version)?.[0]) < 2019;
  const ours =
    to === 'none'
      ? gen2018
        ? 'I_MPI_FABRICS=shm:tcp'
        : 'I_MPI_FABRICS=shm:ofi, FI_PROVIDER=tcp'
      : gen2018
        ? 'I_MPI_FABRICS=shm:ofa'
        : 'I_MPI_FABRICS=shm:ofi, FI_PROVIDER=mlx';
  const oursOn = `the spec sets ${ours} on ${input.targetSize}`;
  if (from === 'networkDirect') {
    return {
      verdict: 'cannot',
      shipyard,
      ours,
      note: `Intel MPI over DAPL/NetworkDirect has no path on ${input.targetSize} (SR-IOV InfiniBand; ${input.originalSize} is retired). ${shipyard}; the recipe's image carries no Intel MPI of its own (it ran the CentOS-HPC host's DAPL-era Intel MPI through the /opt/intel bind), and the current HPC image's /opt/intel holds Intel MPI 2021 (oneAPI), which a 2017-era program cannot be assumed to run with. Nearest working choice: rebuild the image with Intel MPI 2019 or later inside (mpi.version "2021": I_MPI_FABRICS=shm:ofi, FI_PROVIDER=mlx), or with Intel MPI 2018 (mpi.version "2018": I_MPI_FABRICS=shm:ofa); ${oursOn} for the first`,
    };
  }
  if (from === 'sriov' && to === 'sriov') {
    const same = (input.ofa && gen2018) || (!input.ofa && !gen2018);
    return same
      ? { verdict: 'reproduced', shipyard, ours, note: `${shipyard}; ${oursOn}: the same fabric` }
      : {
          verdict: 'changed',
          shipyard,
          ours,
          note: `${shipyard}; ${oursOn} (mpi.version ${input.version ?? 'unset'} differs from Shipyard's ${input.ofa ? 'intelmpi-ofa (Intel MPI 2018)' : 'intelmpi (2019+)'})`,
        };
  }
  if (from === 'none' && to === 'none') {
    return {
      verdict: 'changed',
      shipyard,
      ours,
      note: `${shipyard}; ${oursOn}, naming TCP explicitly. ${gen2018 ? 'Intel MPI 2017/2018 selects TCP the same way' : 'That is right for Intel MPI 2019 and later; an image with Intel MPI 2017/2018 does not know FI_PROVIDER=tcp: set mpi.version to its generation (I_MPI_FABRICS=shm:tcp), or let the dry run read it from the image (mpiTask.preset.reason names the evidence)'}`,
    };
  }
  return { verdict: 'changed', shipyard, ours, note: `${shipyard}; ${oursOn}: the size's fabric differs from the recipe's` };
}
