/**
 * File systems on the nodes beyond what Batch's mountConfiguration does by itself: the NFS kinds that are spelled
 * for the user (Azure Files NFS 4.1, Azure NetApp Files), Azure Managed Lustre (Batch has no Lustre mount: the start
 * task mounts it), and fixed paths (`path: /apps`): Batch mounts land at $AZ_BATCH_NODE_MOUNTS_DIR/<name>, and the
 * start task, as root, bind-mounts them at the path codes expect.
 *
 * Why a bind mount and not a symbolic link: a bind mount is the directory itself at /apps (getcwd, realpath and
 * `df` answer /apps, so codes that record canonical paths, such as OpenFOAM cases or Fluent journals, keep /apps),
 * it can be made read-only at that path alone (`mount -o remount,bind,ro`), and `mountpoint -q` makes the step
 * idempotent; it is gone after a reboot, and Batch runs the start task again on every reboot and reimage. A link
 * would survive reboots but expose the mounts directory to every path lookup and could not be read-only by itself.
 * Pure: the start task's script and the Batch mount fields as strings.
 */
import type { MountRequest } from './workloadData';
import { shellQuote } from '../mpi/shellQuote';
import { BEEGFS_RELEASE } from '../images/beeond';

/** Azure Files NFS is served at <account>.file.<this>; Azure public cloud. */
export const AZURE_FILES_NFS_SUFFIX = 'file.core.windows.net';
/** Azure Files NFS 4.1 as Microsoft documents the mount (no key: sec=sys, the network is the authentication). */
export const AZURE_FILES_NFS_OPTIONS = 'vers=4,minorversion=1,sec=sys,nconnect=4';
/** Azure NetApp Files for HPC as Microsoft recommends it: NFS 3, hard mounts, 256 KiB transfers. */
export const NETAPP_NFS_OPTIONS = 'hard,rsize=262144,wsize=262144,vers=3,tcp';
/** Azure Managed Lustre client mount options (Microsoft's "Connect clients" page). */
export const LUSTRE_OPTIONS = 'noatime,flock';

export type MountKind = 'nfs' | 'azureFiles' | 'blobfuse' | 'cifs' | 'azureFilesNfs' | 'netappFiles' | 'lustre';
export const MOUNT_KINDS: readonly MountKind[] = ['nfs', 'azureFiles', 'blobfuse', 'cifs', 'azureFilesNfs', 'netappFiles', 'lustre'];

export function mountKind(m: MountRequest): MountKind | undefined {
  return MOUNT_KINDS.find((k) => m[k] !== undefined);
}

/** Kinds reached by private address only: the pool must be in a virtual network. */
export const NETWORK_MOUNT_KINDS: readonly MountKind[] = ['azureFilesNfs', 'netappFiles', 'lustre'];

/**
 * The NFS export (`host:/path`) a mount reads, for the NFS kinds and Lustre (`<mgs>:/<fsname>`: what the deployment's
 * DATA_MOUNT_SOURCES lists for it); undefined for the others.
 */
export function mountServerSource(m: MountRequest): string | undefined {
  if (m.nfs) return m.nfs.source;
  if (m.azureFilesNfs) return `${m.azureFilesNfs.account}.${AZURE_FILES_NFS_SUFFIX}:/${m.azureFilesNfs.account}/${m.azureFilesNfs.share}`;
  if (m.netappFiles) return `${m.netappFiles.address}:${m.netappFiles.volume}`;
  if (m.lustre) return `${m.lustre.mgs}:/${m.lustre.fsname}`;
  return undefined;
}

/** Batch's nfsMountConfiguration.mountOptions for the NFS kinds: the kind's own options, read-only, then the user's. */
export function nfsMountOptions(m: MountRequest): string | undefined {
  const own = m.azureFilesNfs ? AZURE_FILES_NFS_OPTIONS : m.netappFiles ? NETAPP_NFS_OPTIONS : undefined;
  const user = m.nfs?.options ?? m.azureFilesNfs?.options ?? m.netappFiles?.options;
  const first = [own, m.readOnly ? 'ro' : undefined].filter(Boolean).join(',');
  return [first ? `-o ${first}` : undefined, user].filter(Boolean).join(' ') || undefined;
}

/** Where a mount is on every node: its fixed path, else the Batch mount directory. */
export function mountLocation(m: MountRequest): string {
  return m.path ?? `$AZ_BATCH_NODE_MOUNTS_DIR/${m.name}`;
}

/**
 * Shell lines (bash, root, strict mode) that the pool's start task runs before the user's start task: Lustre mounts,
 * then every fixed path. Idempotent (`mountpoint -q`): a rebooted or reimaged node runs them again. Empty when the
 * mounts need nothing of the start task.
 */
export function nodeFilesystemSetup(mounts: readonly MountRequest[], scratch?: { kind: string }): string[] {
  const lines: string[] = scratch?.kind === 'beeond' ? beeondInstall() : [];
  for (const m of mounts) {
    if (!m.lustre) continue;
    const dir = `"$AZ_BATCH_NODE_MOUNTS_DIR"/${shellQuote(m.name)}`;
    const options = [LUSTRE_OPTIONS, m.readOnly ? 'ro' : undefined, m.lustre.options?.replace(/^-o /, '')].filter(Boolean).join(',');
    lines.push(
      `mkdir -p ${dir}`,
      `if ! mountpoint -q ${dir}; then`,
      `  if ! command -v mount.lustre >/dev/null 2>&1; then echo ${shellQuote(`[mpijob] mount ${m.name}: this node image has no Lustre client (mount.lustre): use an image with the Lustre client for its kernel (Azure Managed Lustre's amlfs-lustre-client packages)`)} >&2; exit 1; fi`,
      `  mount -t lustre -o ${shellQuote(options)} ${shellQuote(`${m.lustre.mgs}@tcp:/${m.lustre.fsname}`)} ${dir}`,
      'fi',
    );
  }
  for (const m of mounts) {
    if (!m.path) continue;
    const at = shellQuote(m.path);
    lines.push(
      `if ! mountpoint -q ${at}; then mkdir -p ${at} && mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/${shellQuote(m.name)} ${at}; fi`,
      ...(m.readOnly ? [`mount -o remount,bind,ro ${at}`] : []),
    );
  }
  return lines;
}

/**
 * scratch.kind "beeond": the start task makes sure `beeond` is on the node, as Batch Shipyard's node preparation
 * did: kept when the image has it, else installed from the BeeGFS repository with the kernel headers the client
 * module is built against (apt or dnf; shared/core/images/beeond.ts says which images). Fails the start task, and so the
 * node, with the reason when it cannot: the job then never starts on a node without BeeOND.
 */
export function beeondInstall(): string[] {
  const repo = `https://www.beegfs.io/release/beegfs_${BEEGFS_RELEASE}`;
  const missing = shellQuote(
    '[mpijob] scratch.kind beeond: this node image has no beeond and neither apt-get nor dnf to install it: use an image with BeeOND (Ubuntu or AlmaLinux HPC) or scratch.kind masterNfs',
  );
  return [
    'if ! command -v beeond >/dev/null 2>&1; then',
    '  . /etc/os-release',
    '  if command -v apt-get >/dev/null 2>&1; then',
    `    curl -fsSL ${repo}/gpg/GPG-KEY-beegfs | gpg --dearmor --yes -o /etc/apt/trusted.gpg.d/beegfs.gpg`,
    `    echo "deb ${repo} $VERSION_CODENAME non-free" > /etc/apt/sources.list.d/beegfs.list`,
    '    apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q beeond "linux-headers-$(uname -r)"',
    '  elif command -v dnf >/dev/null 2>&1; then',
    `    curl -fsSL -o /etc/yum.repos.d/beegfs.repo ${repo}/dists/beegfs-rhel\${VERSION_ID%%.*}.repo`,
    '    dnf install -y -q beeond "kernel-devel-$(uname -r)"',
    `  else echo ${missing} >&2; exit 1; fi`,
    'fi',
    `command -v beeond >/dev/null 2>&1 || { echo ${shellQuote('[mpijob] scratch.kind beeond: installing BeeOND failed (see above)')} >&2; exit 1; }`,
  ];
}
