import path from 'node:path';
import type { Json } from '../model/types';
import { nodeTmpDir } from './sandbox';

/** The ssh launcher on every node's PATH (also set as Open MPI's remote-shell agent). */
export const LAUNCHER_BIN_DIR = path.join(__dirname, 'bin');
export const SSH_LAUNCHER = path.join(LAUNCHER_BIN_DIR, 'ssh');
/**
 * The emulated node image's modulefiles (mpi/openmpi for Debian's Open MPI). Azure's HPC images keep theirs under
 * /usr/share/modules/modulefiles, where `module` (environment-modules, initialised by /etc/profile.d/modules.sh)
 * finds them. Emulated nodes share this machine, whose /usr/share is not the emulator's to write, so their
 * MODULEPATH puts the emulator's own folder first and the machine's after it.
 */
export const NODE_MODULEFILES_DIR = path.join(__dirname, '..', 'nodeimage', 'modulefiles');
/** The emulated node image's hardware tools (ibstat, ib_write_bw, stream), reporting the modelled hardware (model/hardware.ts). */
export const NODE_IMAGE_BIN_DIR = path.join(__dirname, '..', 'nodeimage', 'bin');
export const NODE_MODULEPATH = [NODE_MODULEFILES_DIR, '/usr/share/modules/modulefiles'].join(':');

const INHERITED = ['HOME', 'LANG', 'LC_ALL', 'USER', 'LOGNAME', 'SHELL', 'LD_LIBRARY_PATH', 'NODE_OPTIONS'];

/**
 * Emulator-only Open MPI settings so mpirun runs across emulated nodes on one real machine:
 * - root is allowed (CI runs as root); - the remote-shell agent is our ssh launcher;
 * - only TCP over loopback, because the shared-memory transport crashes when several "hosts"
 *   share one machine; likewise PMIx's shared-memory data store (gds ds21/ds12) reports errors
 *   when several daemons share a machine, so PMIx keeps its data in a hash instead.
 * None of this applies on real Azure nodes.
 */
export function mpiEmulationEnv(): Record<string, string> {
  return {
    OMPI_ALLOW_RUN_AS_ROOT: '1',
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: '1',
    OMPI_MCA_plm_rsh_agent: SSH_LAUNCHER,
    OMPI_MCA_btl: 'self,tcp',
    OMPI_MCA_btl_tcp_if_include: 'lo',
    OMPI_MCA_oob_tcp_if_include: 'lo',
    PMIX_MCA_gds: 'hash',
    // Each "host" binds its ranks from core 0 up, and the emulated hosts share one machine's cores: two nodes' ranks
    // would share a core and a busy-polling ping-pong between them would measure the scheduler (milliseconds), not the
    // loopback (microseconds). Real nodes have their own cores.
    OMPI_MCA_hwloc_base_binding_policy: 'none',
    // Every emulated host has its own slots, so Open MPI sees no oversubscription and its idle ranks busy-poll; with
    // a dozen nodes' ranks on two cores they starve the ranks that work (a 12-rank preflight ping-pong: 4 s busy-polling,
    // 0.9 s yielding). Real nodes have their own cores and keep Open MPI's default.
    OMPI_MCA_mpi_yield_when_idle: '1',
  };
}

export interface NodeEnvInput {
  accountName: string;
  accountUrl: string;
  poolId: string;
  nodeId: string;
  ipAddress: string;
  root: string;
  hostsFile: string;
  /** The modelled hardware map (model/hardware.ts) the emulated hardware tools read. */
  hardwareFile?: string;
  nodePath: string[];
  /** The node's instance metadata service, when its pool has an identity (Azure: 169.254.169.254). */
  imdsEndpoint?: string;
  nodeBandwidthBytesPerSec?: number;
  /** The subnet of the node's pool, lowercased ('' without a virtual network): which network services it reaches. */
  subnet?: string;
  /** MODULEPATH of the pool's image (nodeimage/moduleTree.ts); default NODE_MODULEPATH for an image not in the catalog. */
  modulePath?: string;
  /** False on a Spot/low-priority node (AZ_BATCH_NODE_IS_DEDICATED). */
  isDedicated?: boolean;
  /** The TCP services' connect() shim and table (tcpServices.ts), when the emulator serves any. */
  tcpServicesEnv?: Record<string, string>;
}

/** The environment every process on a node starts from (tasks add their own on top). */
export function nodeEnvironment(n: NodeEnvInput): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of INHERITED) if (process.env[k]) env[k] = process.env[k] as string;
  env.PATH = [...n.nodePath, LAUNCHER_BIN_DIR, NODE_IMAGE_BIN_DIR, process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'].join(':');
  Object.assign(env, mpiEmulationEnv());
  Object.assign(env, {
    MODULEPATH: n.modulePath ?? NODE_MODULEPATH,
    AZ_BATCH_ACCOUNT_NAME: n.accountName,
    AZ_BATCH_ACCOUNT_URL: n.accountUrl,
    AZ_BATCH_POOL_ID: n.poolId,
    AZ_BATCH_NODE_ID: n.nodeId,
    AZ_BATCH_NODE_IS_DEDICATED: n.isDedicated === false ? 'false' : 'true',
    AZ_BATCH_NODE_ROOT_DIR: n.root,
    AZ_BATCH_NODE_SHARED_DIR: path.join(n.root, 'shared'),
    AZ_BATCH_NODE_STARTUP_DIR: path.join(n.root, 'startup'),
    AZ_BATCH_NODE_MOUNTS_DIR: path.join(n.root, 'fsmounts'),
    AZ_BATCH_CERTIFICATES_DIR: path.join(n.root, 'certs'),
    // The node's own /tmp (see nodeTmpDir): Open MPI puts its session directory under TMPDIR. Not as
    // OMPI_MCA_orte_tmpdir_base: mpirun forwards its MCA settings to every daemon, which would share the master's.
    TMPDIR: nodeTmpDir(n.root),
    // Emulator-only: the hosts map for the ssh launcher, and this node's address.
    AZ_BATCH_EMULATOR_HOSTS: n.hostsFile,
    AZ_BATCH_EMULATOR_NODE_IP: n.ipAddress,
    ...(n.hardwareFile ? { AZ_BATCH_EMULATOR_HARDWARE: n.hardwareFile } : {}),
    // Emulator-only: the subnet of the node's pool (networkServices.ts), '' when the pool has no virtual network.
    AZ_BATCH_EMULATOR_NODE_SUBNET: n.subnet ?? '',
  });
  // Where MSAL, @azure/identity and our node scripts look for the instance metadata service instead of 169.254.169.254.
  if (n.imdsEndpoint) env.AZURE_POD_IDENTITY_AUTHORITY_HOST = n.imdsEndpoint;
  // Emulator-only: the TCP services of the node's virtual network (tcpServices.ts), preloaded into every process.
  Object.assign(env, n.tcpServicesEnv ?? {});
  // Emulator-only: the node's NIC cap, applied by the node tools that move bulk data between nodes (docker save/load).
  if (n.nodeBandwidthBytesPerSec) env.AZ_BATCH_EMULATOR_NODE_BANDWIDTH = String(Math.round(n.nodeBandwidthBytesPerSec));
  return env;
}

export function userEnv(settings: unknown): Record<string, string> {
  const env: Record<string, string> = {};
  if (Array.isArray(settings)) {
    for (const s of settings as Json[]) if (typeof s.name === 'string') env[s.name] = typeof s.value === 'string' ? s.value : '';
  }
  return env;
}

/**
 * AZ_BATCH_TASK_USER and AZ_BATCH_TASK_USER_IDENTITY, as Batch sets them on every task ("Environment variables",
 * Batch docs): the named user account when userIdentity.username is given, else the auto user, whose identity is
 * its scope and elevation (PoolNonAdmin, PoolAdmin, TaskNonAdmin, TaskAdmin; defaults pool and nonAdmin) and whose
 * account on Linux nodes is `_azbatch`. The emulator runs every task as the machine's own user either way.
 */
export function taskUserEnv(userIdentity: unknown): Record<string, string> {
  const ui = (userIdentity ?? {}) as Json;
  if (typeof ui.username === 'string' && ui.username !== '') return { AZ_BATCH_TASK_USER: ui.username, AZ_BATCH_TASK_USER_IDENTITY: ui.username };
  const auto = (ui.autoUser ?? {}) as Json;
  const scope = String(auto.scope ?? 'pool').toLowerCase() === 'task' ? 'Task' : 'Pool';
  const elevation = String(auto.elevationLevel ?? 'nonadmin').toLowerCase() === 'admin' ? 'Admin' : 'NonAdmin';
  return { AZ_BATCH_TASK_USER: '_azbatch', AZ_BATCH_TASK_USER_IDENTITY: `${scope}${elevation}` };
}
