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
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { NetworkService } from './batch/runner/networkServices';

export const EXAMPLE_SUBNET_ID = '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/hpc-local/providers/Microsoft.Network/virtualNetworks/vnet-local/subnets/compute';
export const HEADNODE_ADDRESS = '10.20.0.4';
/** The case file the example prints from /data. */
export const HEADNODE_CASE = 'case: cavity 2x2\n';

/** The head node's export directories on this machine. */
export interface ExampleHeadnode {
  apps: string;
  data: string;
}

/** Lays out the exports under `dir` (idempotent) and returns the emulator's service and the directories. */
export function exampleNetwork(dir: string, repoRoot: string): { services: NetworkService[]; headnode: ExampleHeadnode } {
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
    }],
  };
}

/** The deployment lists the head node's exports as file servers jobs may mount. */
export function exampleNetworkSettings(): Record<string, string> {
  return { DATA_MOUNT_SOURCES: `${HEADNODE_ADDRESS}:/export/*` };
}
