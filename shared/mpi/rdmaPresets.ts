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

export function fabricPreset(mpiRuntime: MpiRuntime, fabric: ResolvedFabric): FabricPreset {
  const rdma = fabric === 'rdma';
  const base = { mpiRuntime, fabric, forwardUcxPkey: rdma, containerRdmaDevices: rdma };
  switch (mpiRuntime) {
    case 'intelmpi':
      return {
        ...base,
        env: rdma
          ? [
              { name: 'I_MPI_FABRICS', value: 'shm:ofi' },
              { name: 'FI_PROVIDER', value: 'mlx' },
              { name: 'I_MPI_FALLBACK', value: '0' },
            ]
          : [
              { name: 'I_MPI_FABRICS', value: 'shm:ofi' },
              { name: 'FI_PROVIDER', value: 'tcp' },
            ],
        launcherArgs: [],
      };
    case 'openmpi':
      return {
        ...base,
        env: rdma ? UCX_IB_ENV : [],
        launcherArgs: rdma ? [mca('pml', 'ucx'), mca('btl', '^vader,tcp,openib')] : [mca('btl_tcp_if_include', 'eth0')],
      };
    case 'mpich':
      return { ...base, env: rdma ? UCX_IB_ENV : [], launcherArgs: rdma ? [] : [flag('-iface', 'eth0')] };
    case 'mvapich':
      return {
        ...base,
        env: rdma ? [{ name: 'MV2_IBA_HCA', value: 'mlx5_0' }] : [],
        launcherArgs: rdma ? [] : [flag('-iface', 'eth0')],
      };
  }
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
export function applyUserOverrides(
  preset: FabricPreset,
  options: readonly string[],
  env: Readonly<Record<string, string>>,
): FabricPreset {
  const overridden = userOverriddenKeys(options, env);
  return {
    ...preset,
    env: preset.env.filter((e) => !Object.prototype.hasOwnProperty.call(env, e.name)),
    launcherArgs: preset.launcherArgs.filter((g) => !overridden.has(g.key)),
  };
}
