/**
 * Fabric presets per MPI runtime: the environment and launcher flags that select InfiniBand (or plain TCP).
 * Follows the settings Batch Shipyard applied on SR-IOV (HB/HC/ND-class) nodes: Open MPI over UCX
 * (`--mca pml ucx`, `UCX_NET_DEVICES=mlx5_0:1`, the node's `UCX_IB_PKEY`), Intel MPI 2019+ over OFI
 * (`I_MPI_FABRICS=shm:ofi`, `FI_PROVIDER=mlx`), MPICH/MVAPICH with the partition key in their environment.
 *
 * A preset never fights the user: a launcher flag group is dropped when the user's own options (or an
 * `OMPI_MCA_<param>` environment variable) set the same thing, and a preset variable is dropped when the user's
 * env names it.
 */

export type MpiRuntime = 'intelmpi' | 'openmpi' | 'mpich' | 'mvapich';
export type Fabric = 'auto' | 'rdma' | 'tcp';
export type ResolvedFabric = 'rdma' | 'tcp';

export const MPI_RUNTIMES: readonly MpiRuntime[] = ['intelmpi', 'openmpi', 'mpich', 'mvapich'];

export interface EnvVar {
  name: string;
  value: string;
}

/** Launcher words that belong together, with the key a user option overrides them by. */
export interface LauncherArgGroup {
  /** An Open MPI MCA parameter name (`mca:<param>`) or a launcher flag (`flag:-iface`). */
  key: string;
  args: string[];
}

export interface FabricPreset {
  mpiRuntime: MpiRuntime;
  fabric: ResolvedFabric;
  family: PresetFamily;
  env: EnvVar[];
  launcherArgs: LauncherArgGroup[];
  /** Read the partition key from UCX_IB_PKEY_FILE at run time and forward it to every rank (SR-IOV IB). */
  forwardUcxPkey: boolean;
  /** Expose /dev/infiniband/* and lift the memlock limit in containers. */
  containerRdmaDevices: boolean;
}

/** Written by the Azure HPC node preparation on SR-IOV IB nodes; holds `UCX_IB_PKEY=0x....` or just the key. */
export const UCX_IB_PKEY_FILE = '$AZ_BATCH_NODE_STARTUP_DIR/wd/UCX_IB_PKEY';

const SIZE_PATTERN = /^(?:standard_|basic_)?([a-z]+)(\d+)(?:-\d+)?([a-z]*)(?:_(.*))?$/i;

/**
 * Whether an Azure VM size has an InfiniBand (RDMA) interface. Azure size names put additive features after the vCPU
 * count; `r` means RDMA-capable (Standard_H16r, Standard_HB120rs_v3, Standard_HB120-96rs_v3, Standard_HC44rs,
 * Standard_ND96asr_v4, Standard_ND40rs_v2, Standard_NC24rs_v3, ...). The legacy A8/A9 sizes are RDMA-capable without
 * the letter.
 */
export function isRdmaCapable(vmSize: string): boolean {
  const m = SIZE_PATTERN.exec(vmSize.trim());
  if (!m) return false;
  const family = m[1].toLowerCase();
  const vcpus = Number(m[2]);
  const features = m[3].toLowerCase();
  const suffix = m[4];
  if (features.includes('r')) return true;
  return family === 'a' && (vcpus === 8 || vcpus === 9) && features === '' && suffix === undefined;
}

export function resolveFabric(fabric: Fabric, vmSize: string): ResolvedFabric {
  if (fabric === 'rdma' || fabric === 'tcp') return fabric;
  return isRdmaCapable(vmSize) ? 'rdma' : 'tcp';
}

const mca = (param: string, value: string): LauncherArgGroup => ({ key: `mca:${param}`, args: ['--mca', param, value] });
const flag = (name: string, ...values: string[]): LauncherArgGroup => ({ key: `flag:${name}`, args: [name, ...values] });

const UCX_IB_ENV: EnvVar[] = [
  { name: 'UCX_TLS', value: 'rc,sm,self' },
  // Older Azure HPC images name the IB port mlx5_0; newer ones with accelerated networking use mlx5_ib0: override
  // UCX_NET_DEVICES in the job's env for those.
  { name: 'UCX_NET_DEVICES', value: 'mlx5_0:1' },
];

/**
 * The preset families: one per MPI generation whose fabric selection differs. Intel MPI 2018 and older select
 * fabrics through DAPL/OFA (`I_MPI_FABRICS=shm:ofa` on SR-IOV InfiniBand; the DAPL providers served the retired
 * NetworkDirect sizes), 2019 and later through libfabric (OFI). Open MPI 4 (and HPC-X, which is Open MPI 4.1 with
 * UCX) still has the openib/vader BTLs to switch off; Open MPI 5 removed openib and renamed vader to sm, so it only
 * selects UCX. MPICH 3 (ch3:nemesis) has no InfiniBand transport of its own and reaches IB through IPoIB; MPICH 4
 * (ch4) runs over UCX. MVAPICH2 speaks verbs directly.
 */
export type PresetFamily = 'intelmpi-2018' | 'intelmpi-2019' | 'openmpi-4' | 'openmpi-5' | 'mpich-3' | 'mpich-4' | 'mvapich2';

export const PRESET_FAMILIES: readonly PresetFamily[] = ['intelmpi-2018', 'intelmpi-2019', 'openmpi-4', 'openmpi-5', 'mpich-3', 'mpich-4', 'mvapich2'];

/** The family used when the spec gives no version: the current generation of each runtime. */
export const DEFAULT_FAMILY: Record<MpiRuntime, PresetFamily> = {
  intelmpi: 'intelmpi-2019',
  openmpi: 'openmpi-4',
  mpich: 'mpich-4',
  mvapich: 'mvapich2',
};

/** Which versions each runtime accepts, in words (for errors and the docs). */
export const SUPPORTED_VERSIONS: Record<MpiRuntime, string> = {
  intelmpi: '2017–2018 (DAPL/OFA era) or 2019 and later (OFI), e.g. "2018", "2021.13"',
  openmpi: '4.x (also HPC-X, which bundles Open MPI 4.1) or 5.x, e.g. "4.1", "5.0"',
  mpich: '3.x or 4.x, e.g. "3.4", "4.2"',
  mvapich: '2.x (MVAPICH2), e.g. "2.3"',
};

/** The preset family of a runtime and optional version ("2018", "4.1.5"), or why the version is not supported. */
export function presetFamilyFor(runtime: MpiRuntime, version?: string): { family: PresetFamily } | { error: string } {
  if (version === undefined) return { family: DEFAULT_FAMILY[runtime] };
  const major = Number(/^(\d+)/.exec(version)?.[1] ?? NaN);
  const refuse = { error: `${runtime} ${version} is not supported: use ${SUPPORTED_VERSIONS[runtime]}` };
  switch (runtime) {
    case 'intelmpi':
      if (major >= 2019) return { family: 'intelmpi-2019' };
      return major >= 2017 ? { family: 'intelmpi-2018' } : refuse;
    case 'openmpi':
      return major === 4 ? { family: 'openmpi-4' } : major === 5 ? { family: 'openmpi-5' } : refuse;
    case 'mpich':
      return major === 3 ? { family: 'mpich-3' } : major === 4 ? { family: 'mpich-4' } : refuse;
    case 'mvapich':
      return major === 2 ? { family: 'mvapich2' } : refuse;
  }
}

/** The family's preset, resolved from the runtime and its (already validated) version. */
function familyOf(mpiRuntime: MpiRuntime, version: string | undefined): PresetFamily {
  const r = presetFamilyFor(mpiRuntime, version);
  if ('error' in r) throw new Error(r.error);
  return r.family;
}

interface FamilyPreset {
  env: EnvVar[];
  launcherArgs: LauncherArgGroup[];
  forwardUcxPkey: boolean;
}

const FAMILY_PRESETS: Record<PresetFamily, Record<ResolvedFabric, FamilyPreset>> = {
  'intelmpi-2018': {
    rdma: {
      env: [
        { name: 'I_MPI_FABRICS', value: 'shm:ofa' },
        { name: 'I_MPI_FALLBACK', value: '0' },
      ],
      launcherArgs: [],
      forwardUcxPkey: false,
    },
    tcp: { env: [{ name: 'I_MPI_FABRICS', value: 'shm:tcp' }], launcherArgs: [], forwardUcxPkey: false },
  },
  'intelmpi-2019': {
    rdma: {
      env: [
        { name: 'I_MPI_FABRICS', value: 'shm:ofi' },
        { name: 'FI_PROVIDER', value: 'mlx' },
      ],
      launcherArgs: [],
      forwardUcxPkey: true,
    },
    tcp: {
      env: [
        { name: 'I_MPI_FABRICS', value: 'shm:ofi' },
        { name: 'FI_PROVIDER', value: 'tcp' },
      ],
      launcherArgs: [],
      forwardUcxPkey: false,
    },
  },
  'openmpi-4': {
    rdma: { env: UCX_IB_ENV, launcherArgs: [mca('pml', 'ucx'), mca('btl', '^vader,tcp,openib')], forwardUcxPkey: true },
    tcp: { env: [], launcherArgs: [mca('btl_tcp_if_include', 'eth0')], forwardUcxPkey: false },
  },
  'openmpi-5': {
    rdma: { env: UCX_IB_ENV, launcherArgs: [mca('pml', 'ucx'), mca('osc', 'ucx')], forwardUcxPkey: true },
    tcp: { env: [], launcherArgs: [mca('btl_tcp_if_include', 'eth0')], forwardUcxPkey: false },
  },
  'mpich-3': {
    rdma: { env: [], launcherArgs: [flag('-iface', 'ib0')], forwardUcxPkey: false },
    tcp: { env: [], launcherArgs: [flag('-iface', 'eth0')], forwardUcxPkey: false },
  },
  'mpich-4': {
    rdma: { env: UCX_IB_ENV, launcherArgs: [], forwardUcxPkey: true },
    tcp: { env: [], launcherArgs: [flag('-iface', 'eth0')], forwardUcxPkey: false },
  },
  mvapich2: {
    rdma: { env: [{ name: 'MV2_IBA_HCA', value: 'mlx5_0' }], launcherArgs: [], forwardUcxPkey: true },
    tcp: { env: [], launcherArgs: [flag('-iface', 'eth0')], forwardUcxPkey: false },
  },
};

/** The runtime a family belongs to. */
export function familyRuntime(family: PresetFamily): MpiRuntime {
  return family.startsWith('intelmpi') ? 'intelmpi' : family.startsWith('openmpi') ? 'openmpi' : family.startsWith('mpich') ? 'mpich' : 'mvapich';
}

/** How the managed launcher gives ranks per node, and how it forwards a variable, per runtime. */
export const LAUNCHER_SYNTAX: Record<MpiRuntime, { hosts: string; perNode: string; forwardEnv: string }> = {
  openmpi: { hosts: '--host a:N,b:N', perNode: '--map-by ppr:N:node', forwardEnv: '-x NAME' },
  intelmpi: { hosts: '-hosts a,b', perNode: '-perhost N', forwardEnv: '-genv NAME "$NAME"' },
  mpich: { hosts: '-hosts a,b', perNode: '-ppn N', forwardEnv: '-genv NAME "$NAME"' },
  mvapich: { hosts: '-hosts a,b', perNode: '-ppn N', forwardEnv: '-genv NAME "$NAME"' },
};

export function fabricPreset(mpiRuntime: MpiRuntime, fabric: ResolvedFabric, version?: string): FabricPreset {
  const family = familyOf(mpiRuntime, version);
  const p = FAMILY_PRESETS[family][fabric];
  return {
    mpiRuntime,
    fabric,
    family,
    env: [...p.env],
    launcherArgs: [...p.launcherArgs],
    forwardUcxPkey: p.forwardUcxPkey,
    containerRdmaDevices: fabric === 'rdma',
  };
}

/** The preset of a family (for the docs table). */
export function familyPreset(family: PresetFamily, fabric: ResolvedFabric): FabricPreset {
  const p = FAMILY_PRESETS[family][fabric];
  return {
    mpiRuntime: familyRuntime(family),
    fabric,
    family,
    env: [...p.env],
    launcherArgs: [...p.launcherArgs],
    forwardUcxPkey: p.forwardUcxPkey,
    containerRdmaDevices: fabric === 'rdma',
  };
}

/** Keys (as in LauncherArgGroup.key) that the user's options or environment already set. */
export function userOverriddenKeys(options: readonly string[], env: Readonly<Record<string, string>>): Set<string> {
  const keys = new Set<string>();
  for (let i = 0; i < options.length; i++) {
    const o = options[i];
    if ((o === '--mca' || o === '-mca' || o === '--gmca' || o === '-gmca') && i + 1 < options.length) {
      keys.add(`mca:${options[i + 1]}`);
    }
    keys.add(`flag:${o.split('=')[0]}`);
  }
  for (const name of Object.keys(env)) {
    if (name.startsWith('OMPI_MCA_')) keys.add(`mca:${name.slice('OMPI_MCA_'.length)}`);
  }
  return keys;
}

/** The preset minus whatever the user set themselves. */
export function applyUserOverrides(preset: FabricPreset, options: readonly string[], env: Readonly<Record<string, string>>): FabricPreset {
  const overridden = userOverriddenKeys(options, env);
  return {
    ...preset,
    env: preset.env.filter((e) => !Object.prototype.hasOwnProperty.call(env, e.name)),
    launcherArgs: preset.launcherArgs.filter((g) => !overridden.has(g.key)),
  };
}
