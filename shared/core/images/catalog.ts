/**
 * The node image catalog: what each supported Batch node image really holds for an MPI job (its MPI stacks with
 * versions, the exact `module` names, install paths, container runtimes, filesystem clients, GPU driver and CUDA).
 * Data, not code: every entry cites where its facts come from. Checks (imageChecks.ts), explain, the importer and
 * the Batch emulator's node image (local/batch/nodeimage) all read it, so a name that is wrong for Azure is wrong
 * everywhere.
 *
 * Sources (read 2026-11-27 from the Azure/azhpc-images repository, which builds the Marketplace HPC images):
 * - Ubuntu-HPC 22.04: tag `ubuntu-hpc-2026072901`: versions.json (`hpcx` ubuntu22.04 2.25.1, `ompi` common 5.0.10,
 *   `impi` common 2021.16.1, `mvapich` ubuntu22.04 4.1, `lustre` ubuntu22.04 2.15.8, `nvidia` driver 580.126.16,
 *   `cuda` 13.0, `doca` 3.2.1); components/install_mpis.sh (modulefiles under /usr/share/modules/modulefiles/mpi:
 *   hpcx-<v> + hpcx, hpcx-pmix-<v> + hpcx-pmix, mvapich-<v> + mvapich, openmpi-<v> + openmpi, impi_<2021.x> +
 *   impi-2021; installs under /opt/hpcx-v<v>-…, /opt/mvapich-<v>, /opt/openmpi-<v>, /opt/intel/oneapi/mpi/<2021.x>);
 *   distros/ubuntu22.04/install.sh (the NVIDIA build installs the GPU driver, NCCL, docker (moby) with the NVIDIA
 *   container toolkit, DCGM, the Lustre client, AZNFS); install_utils.sh (environment-modules, nfs-common).
 *   No Singularity/Apptainer and no blobfuse anywhere in the image build.
 * - AlmaLinux-HPC 8.10: tag `alma-hpc-20251224`: versions.json (`hpcx` almalinux8.10 2.24.1, `ompi` 5.0.8, `impi`
 *   2021.16.1, `mvapich` 2.3.7-2, `lustre` 2.15.6, driver 580.105.08, `cuda` 13.0); the same install_mpis.sh names,
 *   modulefiles under /usr/share/Modules/modulefiles/mpi (utils/set_properties.sh); distros/almalinux8.10/install.sh
 *   (driver, NCCL, docker, DCGM, Lustre, AZNFS; nfs-utils). The Marketplace SKUs 8_6/8_7 (the emulator's catalog)
 *   are older builds of the same recipe: their versions are older, the module names the same.
 * - CentOS-HPC 7.x (what Batch Shipyard recipes assumed; retired): tag `centos-8.1-hpc-20200409`,
 *   centos/centos-7.x/common/install_mpis.sh (Intel MPI 2018.4.274 under /opt/intel/impi/2018.4.274, modulefile
 *   mpi/impi_2018.4.274 + mpi/impi) and centos-7.7-hpc/install_mpis.sh (mpi/hpcx-v2.6.0 + mpi/hpcx).
 * - Plain images (Canonical Ubuntu 22.04/24.04 server): learn.microsoft.com/azure/batch/batch-linux-nodes and
 *   batch-docker-container-workloads: a stock server image, no MPI, no modules, no container runtime (a start task
 *   installs what the job needs). The Batch container images (`microsoft-azure-batch:ubuntu-server-container*`)
 *   carry docker and the NVIDIA driver (their `DockerCompatible`, `NvidiaTeslaDriverInstalled` capabilities).
 */

export type ContainerRuntimeName = 'docker' | 'singularity';

export interface ImageModule {
  /** The exact `module load` name. */
  name: string;
  /** What it loads, in words. */
  what: string;
  /** The stack's install prefix (its MPI_HOME), when it is an MPI. */
  home?: string;
}

export interface NodeImage {
  /** Short id used in messages and by the emulator ("ubuntu-hpc-2204"). */
  id: string;
  title: string;
  /** Marketplace references this entry describes (publisher/offer exact, any of the SKUs), or none for custom images. */
  marketplace?: { publisher: string; offer: string; skus: string[] };
  nodeAgentSku: string;
  os: string;
  source: string;
  /** Where `module` finds its modulefiles (MODULEPATH). null: environment-modules is not installed. */
  modulePath: string | null;
  modules: ImageModule[];
  /** Host paths the image holds (directories or files); a sourced script or host path under one of them exists. */
  paths: string[];
  runtimes: Record<ContainerRuntimeName, boolean>;
  /** Other software, by name → version or true (NFS/Lustre clients, AZNFS, blobfuse, NCCL…). */
  clients: { nfs: boolean; lustre: string | null; blobfuse: boolean; aznfs: boolean };
  gpu: { nvidiaDriver: string; cuda: string } | null;
}

const AZHPC = 'github.com/Azure/azhpc-images';

// --- Ubuntu-HPC 22.04 ------------------------------------------------------------------------------------------
const U_HPCX = '2.25.1';
const U_OMPI = '5.0.10';
const U_IMPI = '2021.16';
const U_MVAPICH = '4.1';
const U_HPCX_HOME = `/opt/hpcx-v${U_HPCX}-gcc-doca_ofed-ubuntu22.04-cuda13-x86_64`;

// --- AlmaLinux-HPC 8.10 ----------------------------------------------------------------------------------------
const A_HPCX = '2.24.1';
const A_OMPI = '5.0.8';
const A_IMPI = '2021.16';
const A_MVAPICH = '2.3.7-2';
const A_HPCX_HOME = `/opt/hpcx-v${A_HPCX}-gcc-doca_ofed-redhat8-cuda13-x86_64`;

function hpcModules(v: { hpcx: string; hpcxHome: string; ompi: string; impi: string; mvapich: string }): ImageModule[] {
  const impiHome = `/opt/intel/oneapi/mpi/${v.impi}`;
  return [
    { name: 'mpi/hpcx', what: `HPC-X ${v.hpcx} (NVIDIA's Open MPI build with UCX and HCOLL)`, home: `${v.hpcxHome}/ompi` },
    { name: `mpi/hpcx-${v.hpcx}`, what: `HPC-X ${v.hpcx}`, home: `${v.hpcxHome}/ompi` },
    { name: 'mpi/hpcx-pmix', what: `HPC-X ${v.hpcx} rebuilt with PMIx`, home: `${v.hpcxHome}/hpcx-rebuild` },
    { name: `mpi/hpcx-pmix-${v.hpcx}`, what: `HPC-X ${v.hpcx} rebuilt with PMIx`, home: `${v.hpcxHome}/hpcx-rebuild` },
    { name: 'mpi/openmpi', what: `Open MPI ${v.ompi} (UCX, HCOLL)`, home: `/opt/openmpi-${v.ompi}` },
    { name: `mpi/openmpi-${v.ompi}`, what: `Open MPI ${v.ompi}`, home: `/opt/openmpi-${v.ompi}` },
    { name: 'mpi/impi-2021', what: `Intel MPI ${v.impi} (oneAPI)`, home: impiHome },
    { name: `mpi/impi_${v.impi}`, what: `Intel MPI ${v.impi} (oneAPI)`, home: impiHome },
    { name: 'mpi/mvapich', what: `MVAPICH ${v.mvapich}`, home: `/opt/mvapich-${v.mvapich}` },
    { name: `mpi/mvapich-${v.mvapich}`, what: `MVAPICH ${v.mvapich}`, home: `/opt/mvapich-${v.mvapich}` },
  ];
}

function hpcPaths(v: { hpcxHome: string; ompi: string; impi: string; mvapich: string }): string[] {
  return [
    v.hpcxHome,
    `/opt/openmpi-${v.ompi}`,
    `/opt/mvapich-${v.mvapich}`,
    `/opt/intel/oneapi/mpi/${v.impi}`,
    // The oneAPI installer's environment scripts.
    '/opt/intel/oneapi/setvars.sh',
    `/opt/intel/oneapi/mpi/${v.impi}/env/vars.sh`,
    '/opt/intel/oneapi/mkl',
    '/opt/pmix',
    '/opt/libfabric',
  ];
}

export const NODE_IMAGES: readonly NodeImage[] = [
  {
    id: 'ubuntu-hpc-2204',
    title: 'Ubuntu-HPC 22.04 (microsoft-dsvm ubuntu-hpc 2204)',
    marketplace: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', skus: ['2204'] },
    nodeAgentSku: 'batch.node.ubuntu 22.04',
    os: 'Ubuntu 22.04',
    source: `${AZHPC} tag ubuntu-hpc-2026072901: versions.json, components/install_mpis.sh, distros/ubuntu22.04/install.sh`,
    modulePath: '/usr/share/modules/modulefiles',
    modules: hpcModules({ hpcx: U_HPCX, hpcxHome: U_HPCX_HOME, ompi: U_OMPI, impi: U_IMPI, mvapich: U_MVAPICH }),
    paths: hpcPaths({ hpcxHome: U_HPCX_HOME, ompi: U_OMPI, impi: U_IMPI, mvapich: U_MVAPICH }),
    runtimes: { docker: true, singularity: false },
    clients: { nfs: true, lustre: '2.15.8', blobfuse: false, aznfs: true },
    gpu: { nvidiaDriver: '580.126.16', cuda: '13.0' },
  },
  {
    id: 'almalinux-hpc-8',
    title: 'AlmaLinux-HPC 8.x (almalinux almalinux-hpc 8_x-hpc-gen2)',
    marketplace: { publisher: 'almalinux', offer: 'almalinux-hpc', skus: ['8_10-hpc-gen2', '8_7-hpc-gen2', '8_6-hpc-gen2'] },
    nodeAgentSku: 'batch.node.el 8',
    os: 'AlmaLinux 8',
    source: `${AZHPC} tag alma-hpc-20251224: versions.json (almalinux8.10), components/install_mpis.sh, distros/almalinux8.10/install.sh`,
    modulePath: '/usr/share/Modules/modulefiles',
    modules: hpcModules({ hpcx: A_HPCX, hpcxHome: A_HPCX_HOME, ompi: A_OMPI, impi: A_IMPI, mvapich: A_MVAPICH }),
    paths: hpcPaths({ hpcxHome: A_HPCX_HOME, ompi: A_OMPI, impi: A_IMPI, mvapich: A_MVAPICH }),
    runtimes: { docker: true, singularity: false },
    clients: { nfs: true, lustre: '2.15.6', blobfuse: false, aznfs: true },
    gpu: { nvidiaDriver: '580.105.08', cuda: '13.0' },
  },
  {
    id: 'ubuntu-server',
    title: 'Ubuntu Server 22.04/24.04 (Canonical, plain)',
    marketplace: { publisher: 'canonical', offer: '0001-com-ubuntu-server-jammy', skus: ['22_04-lts', '22_04-lts-gen2'] },
    nodeAgentSku: 'batch.node.ubuntu 22.04',
    os: 'Ubuntu 22.04',
    source:
      'learn.microsoft.com/azure/batch/batch-linux-nodes (a stock Marketplace server image: no MPI, no environment-modules, no container runtime; a start task installs them)',
    modulePath: null,
    modules: [],
    paths: [],
    runtimes: { docker: false, singularity: false },
    clients: { nfs: false, lustre: null, blobfuse: false, aznfs: false },
    gpu: null,
  },
  {
    id: 'ubuntu-server-2404',
    title: 'Ubuntu Server 24.04 (Canonical, plain)',
    marketplace: { publisher: 'canonical', offer: 'ubuntu-24_04-lts', skus: ['server'] },
    nodeAgentSku: 'batch.node.ubuntu 24.04',
    os: 'Ubuntu 24.04',
    source: 'learn.microsoft.com/azure/batch/batch-linux-nodes (a stock Marketplace server image: no MPI, no environment-modules, no container runtime)',
    modulePath: null,
    modules: [],
    paths: [],
    runtimes: { docker: false, singularity: false },
    clients: { nfs: false, lustre: null, blobfuse: false, aznfs: false },
    gpu: null,
  },
  {
    id: 'ubuntu-server-container',
    title: 'Batch container image (microsoft-azure-batch ubuntu-server-container[-rdma])',
    marketplace: { publisher: 'microsoft-azure-batch', offer: 'ubuntu-server-container', skus: ['20-04-lts'] },
    nodeAgentSku: 'batch.node.ubuntu 20.04',
    os: 'Ubuntu 20.04',
    source:
      'learn.microsoft.com/azure/batch/batch-docker-container-workloads (DockerCompatible, NvidiaTeslaDriverInstalled: docker (moby) and the NVIDIA driver, no MPI, no modules)',
    modulePath: null,
    modules: [],
    paths: [],
    runtimes: { docker: true, singularity: false },
    clients: { nfs: false, lustre: null, blobfuse: false, aznfs: false },
    gpu: null,
  },
];

/**
 * CentOS-HPC 7.x, the image Batch Shipyard recipes were written for. Retired (CentOS 7 reached end of life on
 * 2024-06-30 and Batch no longer supports it); kept to recognise its names in imported specs, never chosen for a pool.
 * mpi/mvapich2 is the name of CentOS's own mvapich2 package modulefile, which Shipyard's OSU recipe loads.
 */
export const CENTOS_HPC_7: NodeImage = {
  id: 'centos-hpc-7',
  title: 'CentOS-HPC 7.x (OpenLogic CentOS-HPC; retired)',
  marketplace: { publisher: 'openlogic', offer: 'centos-hpc', skus: ['7.4', '7.6', '7.7'] },
  nodeAgentSku: 'batch.node.centos 7',
  os: 'CentOS 7',
  source: `${AZHPC} tag centos-8.1-hpc-20200409: centos/centos-7.x/common/install_mpis.sh, centos-7.7-hpc/install_mpis.sh; Batch Shipyard recipes (mpi/mvapich2)`,
  modulePath: '/usr/share/Modules/modulefiles',
  modules: [
    { name: 'mpi/impi', what: 'Intel MPI 2018.4.274', home: '/opt/intel/impi/2018.4.274/intel64' },
    { name: 'mpi/impi_2018.4.274', what: 'Intel MPI 2018.4.274', home: '/opt/intel/impi/2018.4.274/intel64' },
    { name: 'mpi/hpcx', what: 'HPC-X v2.6.0' },
    { name: 'mpi/hpcx-v2.6.0', what: 'HPC-X v2.6.0' },
    { name: 'mpi/mvapich2', what: 'MVAPICH2 (CentOS package)' },
  ],
  paths: ['/opt/intel/impi/2018.4.274', '/opt/intel/compilers_and_libraries', '/opt/intel/compilers_and_libraries/linux/mpi/bin64/mpivars.sh'],
  runtimes: { docker: false, singularity: false },
  clients: { nfs: true, lustre: null, blobfuse: false, aznfs: false },
  gpu: null,
};

/** A custom image as the deployment declares it (NODE_IMAGES_CUSTOM, shared/adapters/config). */
export interface DeclaredCustomImage {
  /** The ARM id prefix it covers (a gallery image definition covers all its versions). */
  idPrefix: string;
  title?: string;
  modules?: string[];
  paths?: string[];
  runtimes?: ContainerRuntimeName[];
}

export function customNodeImage(d: DeclaredCustomImage): NodeImage {
  return {
    id: `custom:${d.idPrefix}`,
    title: d.title ?? `custom image ${d.idPrefix}`,
    nodeAgentSku: '',
    os: 'declared by the deployment',
    source: "the deployment's NODE_IMAGES_CUSTOM setting",
    modulePath: (d.modules ?? []).length ? '/usr/share/modules/modulefiles' : null,
    modules: (d.modules ?? []).map((name) => ({ name, what: 'declared by the deployment' })),
    paths: [...(d.paths ?? [])],
    runtimes: { docker: (d.runtimes ?? []).includes('docker'), singularity: (d.runtimes ?? []).includes('singularity') },
    clients: { nfs: false, lustre: null, blobfuse: false, aznfs: false },
    gpu: null,
  };
}

const lc = (s: string) => s.trim().toLowerCase();

/**
 * The catalog entry of a pool's image: a marketplace reference, or a custom image id matched against the
 * deployment's declared custom images. undefined: the image is not in the catalog (checks then say so, not guess).
 */
export function nodeImageFor(
  pool: { image?: { publisher: string; offer: string; sku: string }; customImageId?: string },
  custom: readonly DeclaredCustomImage[] = [],
): NodeImage | undefined {
  if (pool.customImageId) {
    const id = lc(pool.customImageId);
    const d = custom.find((c) => id.startsWith(lc(c.idPrefix)));
    return d ? customNodeImage(d) : undefined;
  }
  const ref = pool.image;
  if (!ref) return undefined;
  return [...NODE_IMAGES, CENTOS_HPC_7].find(
    (i) =>
      i.marketplace &&
      lc(i.marketplace.publisher) === lc(ref.publisher) &&
      (lc(i.marketplace.offer) === lc(ref.offer) || (i.id === 'ubuntu-server-container' && lc(ref.offer) === 'ubuntu-server-container-rdma')) &&
      i.marketplace.skus.some((s) => lc(s) === lc(ref.sku)),
  );
}

/** The catalog entry by id (the emulator's node image, tests). */
export function nodeImageById(id: string): NodeImage | undefined {
  return [...NODE_IMAGES, CENTOS_HPC_7].find((i) => i.id === id);
}
