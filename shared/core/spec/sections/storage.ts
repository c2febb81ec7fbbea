/**
 * `mounts` and `scratch`: shared file systems. Mounts are Batch pool mounts (mountConfiguration: NFS, Azure Files,
 * blobfuse, CIFS; Azure Files NFS and Azure NetApp Files as NFS) made on every node of a pool the job creates, under
 * $AZ_BATCH_NODE_MOUNTS_DIR/<name>; Azure Managed Lustre is mounted by the pool's start task (Batch has no Lustre
 * mount). `path` also puts a mount at a fixed path on every node (/apps, /data, /home/<user>): the start task
 * bind-mounts it there (shared/core/planning/nodeFilesystems.ts). Secrets are
 * never in the spec: `secretRef` names the app setting MOUNT_SECRET_<secretRef> (a Key Vault reference in Azure).
 * `scratch` is a per-job directory every rank sees at $MPIJOB_SCRATCH: an NFS export of the master node's local
 * disk mounted by the other nodes (masterNfs), a directory on one of the mounts (mount), or a BeeGFS on demand over
 * every node's local disk (beeond); `path` also puts it at a fixed path such as /scratch.
 */
import { z } from 'zod';
import {
  CIFS_SOURCE_RE,
  CIFS_USER_RE,
  DATA_LIMITS,
  EXPORT_PATH_RE,
  FILE_SHARE_RE,
  IPV4_RE,
  LUSTRE_FSNAME_RE,
  MOUNT_NAME_RE,
  MOUNT_OPTIONS_RE,
  NFS_SOURCE_RE,
  SECRET_REF_RE,
  blobContainer,
  fixedPath,
  pattern,
  storageAccount,
} from './storageFields';

const options = () =>
  pattern(MOUNT_OPTIONS_RE, 'mount options: words of letters, digits and ",=._/:+-" separated by single spaces')
    .optional()
    .meta({ description: 'Options handed to the mount (mount(8) -o … or blobfuse options), e.g. "-o vers=4.1,nconnect=4".' });
const secretRef = () =>
  pattern(SECRET_REF_RE, 'the name of a mount secret (letters, digits, "_"): the app setting MOUNT_SECRET_<name> holds it').meta({
    description: 'Names the app setting MOUNT_SECRET_<secretRef> holding the secret (in Azure a Key Vault reference). The secret itself is never in a spec.',
  });

export const MountSchema = z
  .strictObject({
    name: pattern(MOUNT_NAME_RE, 'a mount name: one path segment of letters, digits, "_" and "-" (up to 64)').meta({
      description: 'Mounted at $AZ_BATCH_NODE_MOUNTS_DIR/<name> on every node (Batch relativeMountPath).',
    }),
    path: fixedPath().optional().meta({
      description:
        'Also at this fixed path on every node (the start task, as root, bind-mounts $AZ_BATCH_NODE_MOUNTS_DIR/<name> there), for codes that expect /apps, /data, /scratch or a shared home. System and Batch directories are refused.',
    }),
    readOnly: z.boolean({ error: 'must be true or false' }).optional().meta({
      description:
        'true: mount read-only on every node (the NFS kinds get "-o ro", a fixed path is bind-mounted read-only, Lustre is mounted ro). Left out or false: read-write.',
    }),
    nfs: z
      .strictObject({
        source: pattern(NFS_SOURCE_RE, 'an NFS export "host:/path" (host a DNS name or IPv4 address)'),
        options: options(),
      })
      .optional()
      .meta({
        description:
          "An NFS export (a file server, Azure NetApp Files, or NFS on Azure Files/Blob of a data account). Other than data accounts' storage, only sources the deployment lists in DATA_MOUNT_SOURCES.",
      }),
    azureFiles: z
      .strictObject({
        account: storageAccount(),
        share: pattern(FILE_SHARE_RE, 'an Azure file share name (3–63 lowercase letters, digits and single hyphens)'),
        secretRef: secretRef(),
        options: options(),
      })
      .optional()
      .meta({ description: 'An Azure Files (SMB) share of a data account; Batch needs the account key, read from the app setting secretRef names.' }),
    blobfuse: z
      .strictObject({
        account: storageAccount(),
        container: blobContainer(),
        readOnly: z
          .boolean({ error: 'must be true or false' })
          .default(false)
          .meta({ description: 'Mount read-only (the SAS the pipeline mints then only reads and lists).' }),
        options: options(),
      })
      .optional()
      .meta({ description: 'A blob container of a data account through blobfuse, with a SAS the pipeline mints (no secret in the spec).' }),
    cifs: z
      .strictObject({
        source: pattern(CIFS_SOURCE_RE, 'an SMB share "//host/share[/path]"'),
        username: pattern(CIFS_USER_RE, 'a user name (letters, digits, "._@-")'),
        secretRef: secretRef(),
        options: options(),
      })
      .optional()
      .meta({ description: 'An SMB/CIFS share listed in DATA_MOUNT_SOURCES; the password comes from the app setting secretRef names.' }),
    azureFilesNfs: z
      .strictObject({
        account: storageAccount(),
        share: pattern(FILE_SHARE_RE, 'an Azure file share name (3–63 lowercase letters, digits and single hyphens)'),
        options: options(),
      })
      .optional()
      .meta({
        description:
          "An NFS 4.1 share of a premium Azure Files account (<account>.file.core.windows.net:/<account>/<share>, vers=4,minorversion=1,sec=sys). Authenticated by the network, no key: the pool must be in a virtual network that reaches the account (pool.network or the deployment's POOL_SUBNET_ID).",
      }),
    netappFiles: z
      .strictObject({
        address: pattern(IPV4_RE, "the volume's mount target IPv4 address, e.g. 10.0.2.4"),
        volume: pattern(EXPORT_PATH_RE, "the volume's export path, e.g. /vol1"),
        options: options(),
      })
      .optional()
      .meta({
        description:
          'An Azure NetApp Files volume over NFS, by its mount target address (NFS 3 by default: "-o rw,hard,rsize=262144,wsize=262144,vers=3,tcp", Microsoft\'s recommendation for HPC). Needs the pool in the volume\'s virtual network. The address must be listed in DATA_MOUNT_SOURCES.',
      }),
    lustre: z
      .strictObject({
        mgs: pattern(IPV4_RE, "the file system's MGS IPv4 address, e.g. 10.0.3.4"),
        fsname: pattern(LUSTRE_FSNAME_RE, 'the Lustre file system name (up to 8 letters, digits, "_", "-"), "lustrefs" on Azure Managed Lustre').default(
          'lustrefs',
        ),
        options: options(),
      })
      .optional()
      .meta({
        description:
          "An Azure Managed Lustre file system, mounted by the pool's start task (mount -t lustre <mgs>@tcp:/<fsname>; Batch has no Lustre mount). The node image must have the Lustre client matching its kernel (Azure's HPC images do not all: install amlfs-lustre-client in a custom image or in pool.startTask is too late, the mount runs first). Needs the pool in the file system's virtual network; the MGS address must be listed in DATA_MOUNT_SOURCES.",
      }),
  })
  .meta({
    description:
      'One pool mount: a name and exactly one of nfs, azureFiles, blobfuse, cifs, azureFilesNfs, netappFiles, lustre; optionally a fixed path and read-only.',
  });

export const MountsSchema = z
  .array(MountSchema, { error: 'must be a list of { name, nfs | azureFiles | blobfuse | cifs | azureFilesNfs | netappFiles | lustre }' })
  .max(DATA_LIMITS.maxMounts, { error: `must list at most ${DATA_LIMITS.maxMounts} mounts` })
  .optional()
  .meta({ description: 'File systems mounted on every node of the pool the job creates (Batch mountConfiguration; not allowed with pool.poolId).' });

export const ScratchSchema = z
  .strictObject({
    kind: z.enum(['masterNfs', 'mount', 'beeond'], { error: 'must be "masterNfs", "mount" or "beeond"' }).default('masterNfs').meta({
      description:
        '"masterNfs": the master node exports a directory on its local disk over NFS and every other node mounts it (set up by the coordination command, torn down by the job release task). "mount": a per-job directory on one of mounts. "beeond": a BeeGFS on demand over the local disks of all the job\'s nodes (Batch Shipyard\'s BeeOND): the pool\'s start task checks or installs the BeeOND packages, the master runs `beeond start` over the job\'s nodes before the ranks and `beeond stop` when the job ends; only on images whose catalog entry supports it (docs/workloads.md).',
    }),
    mount: pattern(MOUNT_NAME_RE, 'the name of one of mounts')
      .optional()
      .meta({ description: 'With kind "mount": the mount holding the scratch directory ($AZ_BATCH_NODE_MOUNTS_DIR/<mount>/scratch/<jobId>).' }),
    path: fixedPath().optional().meta({
      description:
        "Also at this fixed path on every node (e.g. /scratch): the coordination command, as root, bind-mounts the job's scratch there, and $MPIJOB_SCRATCH is this path; unmounted by the job release task. The same deny-list as mounts[].path; must not be at or inside a mount's path.",
    }),
  })
  .meta({
    description:
      'A per-job shared scratch directory every rank sees at $MPIJOB_SCRATCH (the same path on every node); deleted when the job ends, after outputs are uploaded.',
  });
