/**
 * The examples' virtual network on the local stack: the head node's NFS server that
 * examples/workloads/nfs-headnode-in-vnet.yaml mounts (10.20.0.4 in subnet "compute" of vnet-local, exporting
 * /export/apps and /export/data), as a shared-network service of the Batch emulator (local/batch/runner/
 * networkServices.ts), and the DATA_MOUNT_SOURCES setting that lets jobs mount it. `npm start` turns it on by
 * default (`--no-example-network` turns it off); tests turn it on with StackOptions.exampleNetwork.
 *
 * The exports live in `<dir>/apps` and `<dir>/data`; what the example reads (apps/ranks.c, data/case.txt) is written
 * from examples/ files when missing or different, so a restart changes nothing and the results a job wrote to
 * /data stay.
 *
 * The same subnet holds the licence server of examples/workloads/licensed-app-flexlm.yaml (local/licenceServer.ts):
 * lmgrd at 10.0.0.4:27000 and its vendor daemon at :27001, TCP services of the emulator. That example names no
 * pool.network, so the deployment's default subnet must be this one: exampleNetworkSettings() sets POOL_SUBNET_ID to
 * it, as infra/main.bicep sets it to its compute subnet. Every pool that names no subnet then joins "compute".
 *
 * The subnet also holds the managed file systems of examples/workloads/slurm-script-shared-fs.yaml, each a
 * shared-network service with its own address: an Azure NetApp Files volume (mount target 10.20.0.5, volume
 * /hpcapps: the software, apps/ranks.c), the Azure Files NFS share `cases` of the local data account (its private
 * endpoint 10.20.0.6, answering <account>.file.core.windows.net: the case, data/case.txt) and an Azure Managed
 * Lustre file system (MGS 10.20.0.7, fsname lustrefs: where the job writes). Their directories are `<dir>/anf`,
 * `<dir>/afs-nfs` and `<dir>/lustre`, laid out the same idempotent way.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { NetworkService } from './batch/runner/networkServices';
import { LICENCE_SERVER_ADDRESS, LMGRD_PORT, VENDOR_PORT, type LicenceServer } from './licenceServer';
import { DATA_ACCOUNT } from './azurite/accounts';
import { AZURE_FILES_NFS_SUFFIX } from '../shared/core/planning/nodeFilesystems';

export const EXAMPLE_SUBNET_ID =
  '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/hpc-local/providers/Microsoft.Network/virtualNetworks/vnet-local/subnets/compute';
export const HEADNODE_ADDRESS = '10.20.0.4';
/** The case file the example prints from /data. */
export const HEADNODE_CASE = 'case: cavity 2x2\n';

/** Azure NetApp Files: the volume's mount target and export path. */
export const NETAPP_ADDRESS = '10.20.0.5';
export const NETAPP_VOLUME = '/hpcapps';
/** Azure Files NFS: the private endpoint of the local data account's file service, and the share. */
export const AZURE_FILES_NFS_ADDRESS = '10.20.0.6';
export const AZURE_FILES_NFS_SHARE = 'cases';
/** Azure Managed Lustre: the MGS and the file system name. */
export const LUSTRE_MGS = '10.20.0.7';
export const LUSTRE_FSNAME = 'lustrefs';

/** The head node's export directories on this machine. */
export interface ExampleHeadnode {
  apps: string;
  data: string;
}

/**
 * Lays out the exports under `dir` (idempotent) and returns the emulator's services and the directories; with
 * `licence` (the running licence server's local ports), the licence server too.
 */
export function exampleNetwork(
  dir: string,
  repoRoot: string,
  licence?: Pick<LicenceServer, 'lmgrdPort' | 'vendorPort'>,
): { services: NetworkService[]; headnode: ExampleHeadnode } {
  const headnode = { apps: path.join(dir, 'apps'), data: path.join(dir, 'data') };
  const managed = { anf: path.join(dir, 'anf'), afsNfs: path.join(dir, 'afs-nfs'), lustre: path.join(dir, 'lustre') };
  const ranks = readFileSync(path.join(repoRoot, 'examples', 'mpi', 'ranks.c'));
  const files: [string, Buffer][] = [
    [path.join(headnode.apps, 'ranks.c'), ranks],
    [path.join(headnode.data, 'case.txt'), Buffer.from(HEADNODE_CASE)],
    [path.join(managed.anf, 'ranks.c'), ranks],
    [path.join(managed.afsNfs, 'case.txt'), Buffer.from(HEADNODE_CASE)],
  ];
  mkdirSync(managed.lustre, { recursive: true });
  for (const [file, content] of files) {
    mkdirSync(path.dirname(file), { recursive: true });
    const existing = (() => {
      try {
        return readFileSync(file);
      } catch {
        return undefined;
      }
    })();
    if (!existing?.equals(content)) writeFileSync(file, content);
  }
  return {
    headnode,
    services: [
      {
        name: 'headnode',
        subnetId: EXAMPLE_SUBNET_ID,
        address: HEADNODE_ADDRESS,
        exports: [
          { path: '/export/apps', directory: headnode.apps },
          { path: '/export/data', directory: headnode.data },
        ],
      },
      {
        name: 'netapp-files',
        subnetId: EXAMPLE_SUBNET_ID,
        address: NETAPP_ADDRESS,
        exports: [{ path: NETAPP_VOLUME, directory: managed.anf }],
      },
      {
        name: 'azure-files-nfs',
        subnetId: EXAMPLE_SUBNET_ID,
        address: AZURE_FILES_NFS_ADDRESS,
        names: [`${DATA_ACCOUNT.name}.${AZURE_FILES_NFS_SUFFIX}`],
        exports: [{ path: `/${DATA_ACCOUNT.name}/${AZURE_FILES_NFS_SHARE}`, directory: managed.afsNfs }],
      },
      {
        name: 'managed-lustre',
        subnetId: EXAMPLE_SUBNET_ID,
        address: LUSTRE_MGS,
        exports: [{ path: `/${LUSTRE_FSNAME}`, directory: managed.lustre }],
      },
      ...(licence
        ? [
            {
              name: 'licence-server',
              subnetId: EXAMPLE_SUBNET_ID,
              address: LICENCE_SERVER_ADDRESS,
              exports: [],
              tcp: [
                { port: LMGRD_PORT, target: licence.lmgrdPort },
                { port: VENDOR_PORT, target: licence.vendorPort },
              ],
            },
          ]
        : []),
    ],
  };
}

/**
 * The deployment lists the head node's exports, the NetApp volume and the Lustre file system as file servers jobs may
 * mount (Azure Files NFS is a data account's share: it needs no entry), and puts pools that name no subnet
 * in the examples' subnet (where the licence server is), as a deployment in a virtual network does.
 */
export function exampleNetworkSettings(): Record<string, string> {
  return {
    DATA_MOUNT_SOURCES: [`${HEADNODE_ADDRESS}:/export/*`, `${NETAPP_ADDRESS}:${NETAPP_VOLUME}`, `${LUSTRE_MGS}:/${LUSTRE_FSNAME}`].join(','),
    POOL_SUBNET_ID: EXAMPLE_SUBNET_ID,
  };
}
