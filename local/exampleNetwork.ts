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
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { NetworkService } from './batch/runner/networkServices';
import { LICENCE_SERVER_ADDRESS, LMGRD_PORT, VENDOR_PORT, type LicenceServer } from './licenceServer';

export const EXAMPLE_SUBNET_ID = '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/hpc-local/providers/Microsoft.Network/virtualNetworks/vnet-local/subnets/compute';
export const HEADNODE_ADDRESS = '10.20.0.4';
/** The case file the example prints from /data. */
export const HEADNODE_CASE = 'case: cavity 2x2\n';

/** The head node's export directories on this machine. */
export interface ExampleHeadnode {
  apps: string;
  data: string;
}

/**
 * Lays out the exports under `dir` (idempotent) and returns the emulator's services and the directories; with
 * `licence` (the running licence server's local ports), the licence server too.
 */
export function exampleNetwork(dir: string, repoRoot: string, licence?: Pick<LicenceServer, 'lmgrdPort' | 'vendorPort'>): { services: NetworkService[]; headnode: ExampleHeadnode } {
  const headnode = { apps: path.join(dir, 'apps'), data: path.join(dir, 'data') };
  const files: [string, Buffer][] = [
    [path.join(headnode.apps, 'ranks.c'), readFileSync(path.join(repoRoot, 'examples', 'mpi', 'ranks.c'))],
    [path.join(headnode.data, 'case.txt'), Buffer.from(HEADNODE_CASE)],
  ];
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
    services: [{
      name: 'headnode', subnetId: EXAMPLE_SUBNET_ID, address: HEADNODE_ADDRESS,
      exports: [{ path: '/export/apps', directory: headnode.apps }, { path: '/export/data', directory: headnode.data }],
    }, ...(licence ? [{
      name: 'licence-server', subnetId: EXAMPLE_SUBNET_ID, address: LICENCE_SERVER_ADDRESS, exports: [],
      tcp: [{ port: LMGRD_PORT, target: licence.lmgrdPort }, { port: VENDOR_PORT, target: licence.vendorPort }],
    }] : [])],
  };
}

/**
 * The deployment lists the head node's exports as file servers jobs may mount, and puts pools that name no subnet
 * in the examples' subnet (where the licence server is), as a deployment in a virtual network does.
 */
export function exampleNetworkSettings(): Record<string, string> {
  return { DATA_MOUNT_SOURCES: `${HEADNODE_ADDRESS}:/export/*`, POOL_SUBNET_ID: EXAMPLE_SUBNET_ID };
}
