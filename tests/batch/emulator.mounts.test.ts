/**
 * Shared file systems on emulated nodes, through the @azure/batch SDK with real processes:
 *   - a pool's mountConfiguration is modelled as one directory per mounted source that every node (of every pool
 *     mounting that source) sees at AZ_BATCH_NODE_MOUNTS_DIR/<relativeMountPath>, with Batch's rules at the door;
 *   - the NFS model on the nodes (exportfs/mount/umount/mountpoint in nodetools) carries the job's shared scratch as
 *     the product's coordination and release scripts set it up and tear it down;
 *   - output files may come from a mounted file system (it is on the node, though outside its sandbox).
 */
import { existsSync, lstatSync, readFileSync, realpathSync } from 'node:fs';
import * as path from 'node:path';
import { BlobServiceClient, ContainerSASPermissions, StorageSharedKeyCredential, generateBlobSASQueryParameters } from '@azure/storage-blob';
import type { BatchServiceClient, BatchServiceModels } from '@azure/batch';
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { LINUX_VM_CONFIGURATION, readTaskFile, sdkClient, signedFetch, waitFor, waitForNodes, waitForTask } from '../../local/batch/testing/sdkHelpers';
import { REPO_ROOT } from '../../local/stack';
import { scratchSetupScript, scratchTeardownScript } from '../../shared/core/mpi/sharedScratch';
import { bashCommandLine } from '../../shared/core/mpi/shellQuote';

const MOUNTS: BatchServiceModels.MountConfiguration[] = [
  { nfsMountConfiguration: { source: '10.0.0.4:/exports/home', relativeMountPath: 'home', mountOptions: '-o vers=4.1' } },
  {
    azureBlobFileSystemConfiguration: {
      accountName: 'data1',
      containerName: 'inputs',
      sasKey: 'sv=2022-11-02&sr=c&sp=rl&sig=c2ln',
      relativeMountPath: 'inputs',
      blobfuseOptions: '-o ro',
    },
  },
  {
    azureFileShareConfiguration: {
      accountName: 'data1',
      azureFileUrl: 'https://data1.file.core.windows.net/refdata',
      accountKey: 'a2V5',
      relativeMountPath: 'ref',
    },
  },
  { cifsMountConfiguration: { username: 'svc', source: '//fs01/licenses', password: 'pw', relativeMountPath: 'lic' } },
];

describe('pool mounts and the NFS model on emulated nodes', () => {
  let emu: BatchEmulatorHandle;
  let azurite: AzuriteHandle;
  let client: BatchServiceClient;

  beforeAll(async () => {
    azurite = await startAzurite({ inMemory: true });
    emu = await startBatchEmulator({
      timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, jobDeleteMs: 20, poolDeleteMs: 20 },
      nodePath: [path.join(REPO_ROOT, 'local', 'batch', 'nodetools', 'bin')],
    });
    client = sdkClient(emu);
  }, 60_000);
  afterAll(async () => {
    await emu?.stop();
    await azurite?.stop();
  }, 60_000);

  it('mountConfiguration: every node sees one shared directory per mount at AZ_BATCH_NODE_MOUNTS_DIR/<relativeMountPath>; another pool mounting the same source sees the same data', async () => {
    await client.pool.add({
      id: 'mnt',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 2,
      mountConfiguration: MOUNTS,
    });
    const nodes = await waitForNodes(client, 'mnt', 2);
    const infos = emu.nodes('mnt');
    for (const n of infos) {
      for (const rel of ['home', 'inputs', 'ref', 'lic']) expect(lstatSync(path.join(n.rootDir, 'fsmounts', rel)).isSymbolicLink()).toBe(true);
    }
    expect(realpathSync(path.join(infos[0].rootDir, 'fsmounts', 'home'))).toBe(realpathSync(path.join(infos[1].rootDir, 'fsmounts', 'home')));
    expect(realpathSync(path.join(infos[0].rootDir, 'fsmounts', 'home'))).not.toBe(realpathSync(path.join(infos[0].rootDir, 'fsmounts', 'inputs')));

    // A task on one node writes through the mount; a task on the other node reads it.
    await client.job.add({ id: 'mntj', poolInfo: { poolId: 'mnt' } });
    await client.task.add('mntj', {
      id: 'write',
      commandLine: `/bin/sh -c 'echo written on $AZ_BATCH_NODE_ID > "$AZ_BATCH_NODE_MOUNTS_DIR/home/note"'`,
      affinityInfo: { affinityId: nodes[0].affinityId as string },
    });
    await waitForTask(client, 'mntj', 'write');
    await client.task.add('mntj', {
      id: 'read',
      commandLine: `/bin/sh -c 'cat "$AZ_BATCH_NODE_MOUNTS_DIR/home/note"; echo read on $AZ_BATCH_NODE_ID'`,
      affinityInfo: { affinityId: nodes[1].affinityId as string },
    });
    const read = await waitForTask(client, 'mntj', 'read');
    expect(read.executionInfo).toMatchObject({ exitCode: 0 });
    expect(await readTaskFile(client, 'mntj', 'read', 'stdout.txt')).toBe(`written on ${nodes[0].id}\nread on ${nodes[1].id}\n`);

    await client.pool.add({
      id: 'mnt2',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 1,
      mountConfiguration: [{ nfsMountConfiguration: { source: '10.0.0.4:/exports/home', relativeMountPath: 'elsewhere' } }],
    });
    await waitForNodes(client, 'mnt2', 1);
    expect(readFileSync(path.join(emu.nodes('mnt2')[0].rootDir, 'fsmounts', 'elsewhere', 'note'), 'utf8')).toMatch(/^written on /);

    // Removing a node removes its sandbox and the links, never the mounted data.
    await client.pool.deleteMethod('mnt2');
    await waitFor('pool mnt2 gone', async () => ((await client.pool.exists('mnt2')).body ? undefined : true));
    expect(readFileSync(path.join(infos[0].rootDir, 'fsmounts', 'home', 'note'), 'utf8')).toMatch(/^written on /);
  }, 60_000);

  it('refuses what Batch refuses: two file systems in one mount, a path used twice or leaving the mounts directory, blobfuse without exactly one credential; a blobfuse identity is 501', async () => {
    const add = (id: string, mountConfiguration: unknown[]) =>
      signedFetch(emu, 'POST', '/pools', {
        id,
        vmSize: 'standard_d2s_v3',
        virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
        targetDedicatedNodes: 1,
        mountConfiguration,
      });
    const cases: [unknown[], number, string, string][] = [
      [
        [{ nfsMountConfiguration: MOUNTS[0].nfsMountConfiguration, cifsMountConfiguration: MOUNTS[3].cifsMountConfiguration }],
        400,
        'InvalidPropertyValue',
        'mountConfiguration[0].cifsMountConfiguration',
      ],
      [[{}], 400, 'MissingRequiredProperty', 'mountConfiguration[0].nfsMountConfiguration'],
      [
        [MOUNTS[0], { nfsMountConfiguration: { source: 'h:/x', relativeMountPath: 'home' } }],
        400,
        'InvalidPropertyValue',
        'mountConfiguration[1].nfsMountConfiguration.relativeMountPath',
      ],
      [
        [{ nfsMountConfiguration: { source: 'h:/x', relativeMountPath: '../escape' } }],
        400,
        'InvalidPropertyValue',
        'mountConfiguration[0].nfsMountConfiguration.relativeMountPath',
      ],
      [
        [{ azureBlobFileSystemConfiguration: { accountName: 'a', containerName: 'c', relativeMountPath: 'b' } }],
        400,
        'MissingRequiredProperty',
        'mountConfiguration[0].azureBlobFileSystemConfiguration.sasKey',
      ],
      [
        [{ azureBlobFileSystemConfiguration: { accountName: 'a', containerName: 'c', relativeMountPath: 'b', sasKey: 's', accountKey: 'k' } }],
        400,
        'InvalidPropertyValue',
        'mountConfiguration[0].azureBlobFileSystemConfiguration.sasKey',
      ],
      [
        [
          {
            azureBlobFileSystemConfiguration: {
              accountName: 'a',
              containerName: 'c',
              relativeMountPath: 'b',
              identityReference: { resourceId: '/subscriptions/x' },
            },
          },
        ],
        501,
        'NotImplemented',
        'mountConfiguration[0].azureBlobFileSystemConfiguration.identityReference',
      ],
      [
        [{ azureFileShareConfiguration: { accountName: 'a', azureFileUrl: 'https://a.file.core.windows.net/s', relativeMountPath: 'b' } }],
        400,
        'MissingRequiredProperty',
        'mountConfiguration[0].azureFileShareConfiguration.accountKey',
      ],
    ];
    let n = 0;
    for (const [mounts, status, code, property] of cases) {
      const r = await add(`bad${++n}`, mounts);
      const body = r.json as { code: string; values?: { key: string; value: string }[] };
      expect([r.status, body.code]).toEqual([status, code]);
      expect(body.values?.find((v) => v.key === 'PropertyName')?.value).toBe(property);
      // Secrets are never echoed in an error.
      expect(JSON.stringify(body)).not.toMatch(/"(k|s|pw)"/);
    }
  });

  it('the shared scratch: the master exports it, the other node mounts it through the NFS model, a write on one is read on the other; the release task tears it down', async () => {
    await client.pool.add({
      id: 'scr',
      vmSize: 'standard_d2s_v3',
      virtualMachineConfiguration: LINUX_VM_CONFIGURATION,
      targetDedicatedNodes: 2,
      enableInterNodeCommunication: true,
      taskSlotsPerNode: 1,
    });
    const nodes = await waitForNodes(client, 'scr', 2);
    const scratch = { kind: 'masterNfs' as const, jobId: 'j7', waitSeconds: 30 };
    await client.job.add({
      id: 'scrj',
      poolInfo: { poolId: 'scr' },
      jobPreparationTask: { commandLine: '/bin/true' },
      jobReleaseTask: { commandLine: bashCommandLine(scratchTeardownScript(scratch)) },
    });
    // The application runs on the master: a write from the other node (through the ssh launcher, in that node's
    // sandbox and environment) must show up in the master's scratch.
    await client.task.add('scrj', {
      id: 'mi',
      commandLine: bashCommandLine(
        'set -e; export MPIJOB_SCRATCH="$AZ_BATCH_NODE_SHARED_DIR/scratch/j7"; echo from-master > "$MPIJOB_SCRATCH/m"; ' +
          'for h in ${AZ_BATCH_HOST_LIST//,/ }; do if [ "$h" != "${AZ_BATCH_MASTER_NODE%%:*}" ]; then ssh "$h" \'cat "$AZ_BATCH_NODE_SHARED_DIR/scratch/j7/m"; echo "from $AZ_BATCH_NODE_ID" > "$AZ_BATCH_NODE_SHARED_DIR/scratch/j7/w"; mountpoint "$AZ_BATCH_NODE_SHARED_DIR/scratch/j7"\'; fi; done; cat "$MPIJOB_SCRATCH/w"',
      ),
      multiInstanceSettings: { numberOfInstances: 2, coordinationCommandLine: bashCommandLine(`set -euo pipefail; ${scratchSetupScript(scratch)}`) },
    });
    const mi = await waitForTask(client, 'scrj', 'mi', 'completed', 60_000);
    const stdout = await readTaskFile(client, 'scrj', 'mi', 'stdout.txt');
    expect({ exit: mi.executionInfo?.exitCode, stdout }).toMatchObject({ exit: 0 });
    const worker = nodes.find((n) => n.id !== mi.nodeInfo?.nodeId);
    expect(stdout).toBe(`from-master\n${emu.nodes('scr').find((n) => n.id === worker?.id)?.rootDir}/shared/scratch/j7 is a mountpoint\nfrom ${worker?.id}\n`);

    // Job end: the release task on each node unmounts, withdraws the exports and deletes the scratch on the master.
    await client.job.terminate('scrj');
    await waitFor(
      'release tasks done',
      async () => {
        const status = await client.job.listPreparationAndReleaseTaskStatus('scrj');
        return status.length === 2 && status.every((s) => s.jobReleaseTaskExecutionInfo?.state === 'completed') ? status : undefined;
      },
      30_000,
    );
    for (const n of emu.nodes('scr')) {
      expect(existsSync(path.join(n.rootDir, 'shared', 'scratch', 'j7'))).toBe(false);
      expect(readFileSync(path.join(n.rootDir, 'volatile', 'emulator-nfs', 'exports'), 'utf8')).toBe('');
      expect(readFileSync(path.join(n.rootDir, 'volatile', 'emulator-nfs', 'mounts'), 'utf8')).toBe('');
    }
  }, 90_000);

  it('the NFS model refuses what a server would: a path nobody exported, a client it was not exported to, a host that is no node, a type it does not model', async () => {
    const [node] = await waitForNodes(client, 'mnt', 2);
    await client.job.add({ id: 'nfsj', poolInfo: { poolId: 'mnt' } });
    const script = [
      'mkdir -p "$AZ_BATCH_NODE_SHARED_DIR/x" "$AZ_BATCH_NODE_SHARED_DIR/mp"',
      'mount -t nfs "$AZ_BATCH_EMULATOR_NODE_IP:$AZ_BATCH_NODE_SHARED_DIR/x" "$AZ_BATCH_NODE_SHARED_DIR/mp"; echo "unexported $?"',
      'exportfs -o rw 10.9.9.9:"$AZ_BATCH_NODE_SHARED_DIR/x"; mount -t nfs "$AZ_BATCH_EMULATOR_NODE_IP:$AZ_BATCH_NODE_SHARED_DIR/x" "$AZ_BATCH_NODE_SHARED_DIR/mp"; echo "other client $?"',
      'mount -t nfs "192.0.2.1:/x" "$AZ_BATCH_NODE_SHARED_DIR/mp"; echo "no such host $?"',
      'mount -t ext4 /dev/sdb1 "$AZ_BATCH_NODE_SHARED_DIR/mp"; echo "ext4 $?"',
      'exportfs -o rw "*:/etc"; echo "outside the node $?"',
      'exportfs -o rw "*:$AZ_BATCH_NODE_SHARED_DIR/x"; mount -t nfs "$AZ_BATCH_EMULATOR_NODE_IP:$AZ_BATCH_NODE_SHARED_DIR/x" "$AZ_BATCH_NODE_SHARED_DIR/mp"; echo "exported to all $?"; mount -t nfs "$AZ_BATCH_EMULATOR_NODE_IP:$AZ_BATCH_NODE_SHARED_DIR/x" "$AZ_BATCH_NODE_SHARED_DIR/mp" 2>/dev/null; echo "twice $?"',
      'umount "$AZ_BATCH_NODE_SHARED_DIR/mp"; echo "umount $?"; mountpoint -q "$AZ_BATCH_NODE_SHARED_DIR/mp"; echo "mountpoint after $?"',
    ].join('; ');
    await client.task.add('nfsj', { id: 't', commandLine: bashCommandLine(script), affinityInfo: { affinityId: node.affinityId as string } });
    const t = await waitForTask(client, 'nfsj', 't');
    const out = await readTaskFile(client, 'nfsj', 't', 'stdout.txt');
    const err = await readTaskFile(client, 'nfsj', 't', 'stderr.txt');
    expect({ exit: t.executionInfo?.exitCode, out }).toEqual({
      exit: 0,
      out: 'unexported 32\nother client 32\nno such host 32\next4 32\noutside the node 1\nexported to all 0\ntwice 32\numount 0\nmountpoint after 32\n',
    });
    expect(err).toMatch(/access denied by server/);
    expect(err).toMatch(/only NFS mounts are modelled/);
  });

  it('output files may come from a mounted file system (it is on the node), not from elsewhere outside the sandbox', async () => {
    const account = azurite.accounts[0];
    const credential = new StorageSharedKeyCredential(account.name, account.key);
    const service = new BlobServiceClient(azurite.blobEndpoint(account.name), credential);
    await service.getContainerClient('out').create();
    const sas = generateBlobSASQueryParameters(
      { containerName: 'out', permissions: ContainerSASPermissions.parse('cw'), expiresOn: new Date(Date.now() + 3600_000) },
      credential,
    ).toString();
    const containerUrl = `${service.getContainerClient('out').url}?${sas}`;
    await client.job.add({ id: 'outj', poolInfo: { poolId: 'mnt' } });
    await client.task.add('outj', {
      id: 'o',
      commandLine: `/bin/sh -c 'mkdir -p "$AZ_BATCH_NODE_MOUNTS_DIR/home/res" && echo result > "$AZ_BATCH_NODE_MOUNTS_DIR/home/res/r.txt"'`,
      outputFiles: [
        {
          filePattern: '$AZ_BATCH_NODE_MOUNTS_DIR/home/res/*.txt',
          destination: { container: { containerUrl, path: 'm' } },
          uploadOptions: { uploadCondition: 'tasksuccess' },
        },
        { filePattern: '/etc/hostname', destination: { container: { containerUrl, path: 'etc' } }, uploadOptions: { uploadCondition: 'tasksuccess' } },
      ],
    });
    await waitForTask(client, 'outj', 'o');
    const names: string[] = [];
    for await (const b of service.getContainerClient('out').listBlobsFlat()) names.push(b.name);
    expect(names).toEqual(['m/r.txt']);
  });
});
