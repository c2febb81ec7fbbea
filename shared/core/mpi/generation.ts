/**
 * The MPI generation a job's fabric settings follow, and why, in words for explain and the dry run; and the
 * combinations no current VM size can run, refused with the nearest working choice.
 *
 * Facts used (shared/notes/batch-shipyard.md, "MPI runtimes"; learn.microsoft.com/azure/virtual-machines/setup-mpi):
 * - Intel MPI 2017–2018 selects fabrics through DAPL (NetworkDirect sizes: A8/A9, H16r, NC24r, all retired) or
 *   OFA (`I_MPI_FABRICS=shm:ofa`, Intel MPI 2018 on SR-IOV InfiniBand, which every current RDMA size is). Intel MPI
 *   2017 predates the SR-IOV images' OFA support Azure documents (2018 and 2019+ only): it has no working
 *   InfiniBand path on a current size, only TCP.
 * - Intel MPI 2019 and later (oneAPI 2021.x) select fabrics through libfabric: `mlx` on InfiniBand, `tcp` elsewhere.
 * - CUDA: a program built with CUDA older than the GPU's compute capability has no kernels for it (A100 is sm_80,
 *   first supported by CUDA 11.0; H100 is sm_90, CUDA 11.8; V100 sm_70, CUDA 9.0; T4 sm_75, CUDA 10.0; A10 sm_86,
 *   CUDA 11.1), from NVIDIA's CUDA toolkit release notes.
 */
import { isRdmaCapable, presetFamilyFor, resolveFabric, type Fabric, type MpiRuntime, type PresetFamily, type ResolvedFabric } from './rdmaPresets';

const FAMILY_WORDS: Record<PresetFamily, string> = {
  'intelmpi-2018': 'Intel MPI 2017–2018 (DAPL/OFA era): I_MPI_FABRICS=shm:ofa on InfiniBand, shm:tcp elsewhere',
  'intelmpi-2019': 'Intel MPI 2019+ (libfabric): FI_PROVIDER=mlx on InfiniBand, tcp elsewhere',
  'openmpi-4': 'Open MPI 4.x / HPC-X: UCX on InfiniBand (pml ucx, openib/vader off), TCP on eth0 elsewhere',
  'openmpi-5': 'Open MPI 5.x: UCX on InfiniBand (pml/osc ucx), TCP on eth0 elsewhere',
  'mpich-3': 'MPICH 3.x (ch3): IPoIB (ib0) on InfiniBand, eth0 elsewhere',
  'mpich-4': 'MPICH 4.x (ch4): UCX on InfiniBand, eth0 elsewhere',
  mvapich2: 'MVAPICH2: verbs on mlx5_0, eth0 elsewhere',
};

export interface PresetChoice {
  family: PresetFamily;
  fabric: ResolvedFabric;
  reason: string;
}

/** The preset family and fabric a job gets, with the reason in words. Throws on a version presetFamilyFor refuses. */
export function presetChoice(
  runtime: MpiRuntime,
  version: string | undefined,
  fabric: Fabric,
  vmSize: string,
  image?: { runtime: MpiRuntime; version: string; evidence: string },
): PresetChoice {
  // A declared mpi.version wins; else the image's own evidence (shared/core/images/mpiEvidence.ts) of the same runtime.
  const fromImage = version === undefined && image && image.runtime === runtime ? image : undefined;
  const effective = version ?? fromImage?.version;
  const r = presetFamilyFor(runtime, effective);
  if ('error' in r) throw new Error(r.error);
  const resolved = resolveFabric(fabric, vmSize);
  const from =
    version !== undefined
      ? `mpi.version "${version}"`
      : fromImage
        ? `no mpi.version; the image's ${fromImage.evidence} says ${runtime} ${fromImage.version}`
        : `no mpi.version: the current generation of ${runtime}`;
  const why = fabric === 'auto' ? `mpi.fabric auto: ${vmSize} ${isRdmaCapable(vmSize) ? 'has InfiniBand' : 'has no InfiniBand'}` : `mpi.fabric ${fabric}`;
  return { family: r.family, fabric: resolved, reason: `${from} → ${FAMILY_WORDS[r.family]}; ${why} → ${resolved === 'rdma' ? 'InfiniBand' : 'TCP'}` };
}

const major = (v: string) => Number(/^(\d+)/.exec(v)?.[1] ?? NaN);
const minor = (v: string) => Number(/^\d+\.(\d+)/.exec(v)?.[1] ?? 0);

/** The GPU of a VM size and the oldest CUDA that has kernels for it, from the size name (undefined: no known GPU). */
export function gpuGeneration(vmSize: string): { gpu: string; minCuda: [number, number] } | undefined {
  const s = vmSize.toLowerCase();
  if (/h100|_v5$/.test(s) && /^standard_nd/.test(s)) return { gpu: 'H100 (sm_90)', minCuda: [11, 8] };
  if (/a100|^standard_nd96a/.test(s)) return { gpu: 'A100 (sm_80)', minCuda: [11, 0] };
  if (/a10_v5/.test(s)) return { gpu: 'A10 (sm_86)', minCuda: [11, 1] };
  if (/t4_v3/.test(s)) return { gpu: 'T4 (sm_75)', minCuda: [10, 0] };
  if (/^standard_nc\d+r?s_v3$|^standard_nd40rs_v2$/.test(s)) return { gpu: 'V100 (sm_70)', minCuda: [9, 0] };
  return undefined;
}

export interface GenerationIssue {
  path: string;
  message: string;
}

/** Combinations that cannot work on the chosen size, with the nearest working choice. */
export function generationIssues(spec: {
  pool: { vmSize?: string };
  container: { runtime: string; cuda?: string };
  mpi: { runtime: MpiRuntime; version?: string; fabric: Fabric };
}): GenerationIssue[] {
  const out: GenerationIssue[] = [];
  const vmSize = spec.pool.vmSize;
  if (!vmSize) return out;
  const v = spec.mpi.version;
  if (spec.mpi.runtime === 'intelmpi' && v !== undefined && major(v) === 2017 && resolveFabric(spec.mpi.fabric, vmSize) === 'rdma') {
    out.push({
      path: spec.mpi.fabric === 'auto' ? 'mpi.version' : 'mpi.fabric',
      message: `Intel MPI 2017 has no InfiniBand path on ${vmSize}: current RDMA sizes are SR-IOV, where Intel MPI reaches InfiniBand through OFA (2018) or libfabric mlx (2019 and later); the DAPL/NetworkDirect sizes Intel MPI 2017 used are retired. Nearest working choices: mpi.fabric "tcp" (Intel MPI 2017 over TCP, much slower), or an image with Intel MPI 2018 (mpi.version "2018", I_MPI_FABRICS=shm:ofa) or 2019+ (mpi.version "2021", FI_PROVIDER=mlx)`,
    });
  }
  const cuda = spec.container.cuda;
  const gpu = gpuGeneration(vmSize);
  if (cuda !== undefined && gpu) {
    const [M, m] = gpu.minCuda;
    if (major(cuda) < M || (major(cuda) === M && minor(cuda) < m)) {
      out.push({
        path: 'container.cuda',
        message: `a program built with CUDA ${cuda} has no kernels for ${vmSize}'s ${gpu.gpu}: it needs CUDA ${M}.${m} or later. Nearest working choice: rebuild the image with CUDA ${M}.${m}+ (the Azure HPC images' driver supports CUDA up to 13.0)`,
      });
    }
  }
  return out;
}
