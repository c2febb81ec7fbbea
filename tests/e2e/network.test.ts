/**
 * The environment around the job, end to end on the local stack (one stack for the file, with the examples' network
 * and data as `npm start` provides them), each job an example from examples/workloads submitted byte for byte as
 * committed over the public HTTP API, with real processes and real Open MPI across
 * emulated nodes:
 *  - pbs-script-compat: a PBS job script (#PBS directives, cat $PBS_NODEFILE, mpirun -np $(wc -l < $PBS_NODEFILE)
 *    -machinefile $PBS_NODEFILE) runs unchanged under mpi.launcher.compat: pbs; its dry run shows the node file and
 *    the PBS variables in the MPI task's command line (what `hpcjob explain` prints).
 *  - nfs-headnode-in-vnet: a pool in subnet "compute" mounts a file server of that subnet (the emulator's
 *    shared-network service 10.20.0.4) at the fixed paths /apps (read-only) and /data, builds the program from /apps
 *    and writes its result to /data, which is also uploaded (from: mount); the same spec in another subnet cannot
 *    reach the server: Batch's mounts fail, every node is unusable (MountConfigurationError) and the job's error says so.
 *  - parallel-scratch-ior: every rank writes a block to the per-job shared scratch and reads back and checks the
 *    block of a rank on the other node (IOR-like); the summary is uploaded from the scratch.
 *  - beeond-scratch-ior: the same on scratch.kind beeond at the fixed path /scratch: the start task checks BeeOND,
 *    the master runs `beeond start` over the job's nodes (modelled by the emulator), every node binds it at /scratch,
 *    and `beeond stop` runs in the job release task.
 *  - slurm-script-shared-fs: a Slurm batch script (#SBATCH directives, SLURM_JOB_NODELIST, SLURM_NTASKS,
 *    SLURM_SUBMIT_DIR, mpirun -np $SLURM_NTASKS) runs unchanged under mpi.launcher.compat: slurm on an Azure NetApp
 *    Files volume at /apps, an Azure Files NFS share at /data and Azure Managed Lustre at /lustre (the example
 *    network's services 10.20.0.5, 10.20.0.6 as data1.file.core.windows.net, 10.20.0.7); every task writes what it saw
 *    to /lustre and the first node reads them all back; its dry run shows the three kinds' mounts and the Slurm lines.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { seedExamples } from '../../local/seedExamples';
import { asUser, checkCleanup, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import type { ExplainDocument } from '../../shared/core/contract/explain';
import { SUBMITTED_AS_WRITTEN } from '../helpers/examplesAsWritten';

let stack: Stack;
const AS_WRITTEN = SUBMITTED_AS_WRITTEN['tests/e2e/network.test.ts'];
/** The examples, by a short name: each submitted byte for byte as committed; the job id comes back from intake. */
const JOBS: Record<string, string> = {
  pbs: 'examples/workloads/pbs-script-compat.yaml',
  nfs: 'examples/workloads/nfs-headnode-in-vnet.yaml',
  ior: 'examples/workloads/parallel-scratch-ior.yaml',
  beeond: 'examples/workloads/beeond-scratch-ior.yaml',
  slurm: 'examples/workloads/slurm-script-shared-fs.yaml',
};
const SUBNET = '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/hpc-local/providers/Microsoft.Network/virtualNetworks/vnet-local';

function example(file: string): string {
  return readFileSync(path.join(REPO_ROOT, file), 'utf8');
}

/** Job ids by short name (and `outside`: the NFS example moved to another subnet, an explicit extra job). */
const ids = new Map<string, string>();
const views = new Map<string, JobViewLite>();
const docs = new Map<string, ExplainDocument>();

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  // As `npm start` runs: the examples' network (the head node 10.20.0.4 and DATA_MOUNT_SOURCES) and their data seeded.
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'e2e-network-host.log'),
    demoImageFillerBytes: 64 * 1024,
    exampleNetwork: true,
  });
  await seedExamples(stack.operator.blobService(DATA_ACCOUNT.name), REPO_ROOT);
  for (const [name, file] of Object.entries(JOBS)) {
    expect(AS_WRITTEN).toContain(file);
    const res = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml', ...(await asUser(stack)()) },
      body: example(file),
    });
    if (res.status !== 200) throw new Error(`dry run of ${file} answered ${res.status}: ${await res.text()}`);
    docs.set(name, (await res.json()) as ExplainDocument);
  }
  const outside = example(JOBS.nfs).replace('/subnets/compute', '/subnets/elsewhere');
  const submitted = await Promise.all([...Object.values(JOBS).map((file) => submitSpec(stack, example(file))), submitSpec(stack, outside)]);
  [...Object.keys(JOBS), 'outside'].forEach((name, i) => ids.set(name, submitted[i]));
  for (const [name, id] of ids) views.set(name, await watchJob(stack, id, 540_000));
}, 720_000);
afterAll(async () => stack?.stop(), 60_000);

async function succeeded(name: string): Promise<JobViewLite> {
  const view = views.get(name) as JobViewLite;
  if (view.state !== 'Succeeded') {
    throw new Error(
      `job ${view.id} ${view.state}: ${view.error?.message ?? ''}\n${view.result?.mpi?.stdoutTail ?? ''}\n${view.result?.mpi?.stderrTail ?? ''}\n${await mpiOutput(stack, view)}`,
    );
  }
  expect(await checkCleanup(stack, view)).toEqual([]);
  return view;
}

function resultOf(view: JobViewLite): Record<string, unknown> | undefined {
  const line = (view.result?.mpi?.stdoutTail ?? '').split('\n').find((l) => l.startsWith('RESULT '));
  return line ? (JSON.parse(line.slice('RESULT '.length)) as Record<string, unknown>) : undefined;
}

describe('launch.compat: pbs (pbs-script-compat.yaml)', () => {
  test('the dry run shows the node file and the PBS variables in the MPI task', () => {
    const text = JSON.stringify(docs.get('pbs'));
    expect(text).toContain('export PBS_NODEFILE=\\"$MPIJOB_NODEFILE\\"');
    expect(text).toMatch(/export PBS_JOBID=\S+ PBS_JOBNAME=pbs-solver/);
  });

  test('the PBS script ran unchanged: one node-file line per slot, mpirun from the node file, every rank in', async () => {
    const view = await succeeded('pbs');
    const out = view.result?.mpi?.stdoutTail ?? '';
    expect(out).toContain(`job ${view.id} on 2 nodes, 2 cpus each`);
    const nodefile = out
      .split('\n')
      .slice(out.split('\n').findIndex((l) => l.startsWith('node file ')) + 1)
      .filter((l) => /^\S+$/.test(l) && !l.startsWith('RESULT'));
    expect(nodefile).toHaveLength(4);
    expect(new Set(nodefile).size).toBe(2);
    expect(nodefile[0]).toBe(nodefile[1]);
    expect(resultOf(view)).toEqual({ ranks: 4, rankSum: 6 });
  });
});

/** A blob of the data account's results container. */
async function resultBlob(name: string): Promise<string> {
  return (await stack.operator.blobService(DATA_ACCOUNT.name).getContainerClient('results').getBlobClient(name).downloadToBuffer()).toString('utf8');
}

describe("a pool in the file server's network (nfs-headnode-in-vnet.yaml)", () => {
  test("the dry run shows the pool's networkConfiguration, the Batch NFS mounts and the start task binding /apps and /data", () => {
    const request = docs.get('nfs')?.pool.request as { networkConfiguration?: unknown; mountConfiguration?: unknown; startTask?: { commandLine: string } };
    expect(request.networkConfiguration).toEqual({ subnetId: `${SUBNET}/subnets/compute` });
    expect(request.mountConfiguration).toEqual([
      { nfsMountConfiguration: { source: '10.20.0.4:/export/apps', relativeMountPath: 'apps', mountOptions: '-o ro -o vers=4.1' } },
      { nfsMountConfiguration: { source: '10.20.0.4:/export/data', relativeMountPath: 'data', mountOptions: '-o vers=4.1' } },
    ]);
    expect(request.startTask?.commandLine).toContain('mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/apps /apps');
    expect(request.startTask?.commandLine).toContain('mount -o remount,bind,ro /apps');
    expect(request.startTask?.commandLine).toContain('mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/data /data');
  });

  test('every node had the exports at /apps and /data; the program built from /apps wrote its result to /data, uploaded from the mount', async () => {
    const view = await succeeded('nfs');
    const out = view.result?.mpi?.stdoutTail ?? '';
    expect(out).toContain('case: cavity 2x2');
    expect(resultOf(view)).toEqual({ ranks: 4, rankSum: 6 });
    expect(readFileSync(path.join(stack.headnode?.data as string, 'result-2.txt'), 'utf8')).toBe('RESULT {"ranks":4,"rankSum":6}\n');
    const prefix = view.result?.outputs?.prefix as string;
    expect(prefix).toMatch(/^users\/[0-9a-f-]+\/[0-9a-f-]+\/jobs\/[^/]+$/);
    expect(prefix.endsWith(`/jobs/${view.id}`)).toBe(true);
    expect(await resultBlob(`${prefix}/mounts/data/result-2.txt`)).toBe('RESULT {"ranks":4,"rankSum":6}\n');
  });

  test("the same spec in another subnet cannot reach the server: Batch's mounts fail, every node is unusable, the job fails in provisioning saying why", () => {
    const view = views.get('outside') as JobViewLite;
    expect(view.state).toBe('Failed');
    expect(view.error?.message).toContain(`Provisioning: pool hpc-${view.id}: `);
    expect(view.error?.message).toMatch(/^Provisioning: pool \S+: \d+ nodes failed \(\S+ unusable, \S+ unusable\)/);
    expect(JSON.stringify(view.error)).toMatch(/MountConfigurationError: The node could not mount (apps|data) \(10\.20\.0\.4:/);
  });
});

describe("a per-job parallel scratch over the nodes' disks (parallel-scratch-ior.yaml)", () => {
  test("every rank wrote its block and read back another node's rank's block without an error; the summary outlived the pool", async () => {
    const view = await succeeded('ior');
    const out = view.result?.mpi?.stdoutTail ?? '';
    for (const [rank, other] of [
      [0, 2],
      [1, 3],
      [2, 0],
      [3, 1],
    ])
      expect(out).toContain(`rank ${rank} wrote block-${rank}, read block-${other}: 0 errors`);
    expect(resultOf(view)).toEqual({ ranks: 4, bytesPerRank: 1048576, errors: 0 });
    expect(await resultBlob(`${view.result?.outputs?.prefix as string}/scratch/ior/summary.txt`)).toBe(
      'RESULT {"ranks":4,"bytesPerRank":1048576,"errors":0}\n',
    );
  });

  test('the dry run shows the scratch: the master exports it in the coordination command, the release task removes it', () => {
    const doc = docs.get('ior') as ExplainDocument;
    expect(doc.scratch).toMatchObject({ kind: 'masterNfs' });
    expect(JSON.stringify(doc.mpiTask)).toContain('exportfs');
    expect(JSON.stringify(doc.batchJob.request)).toContain('umount');
  });
});

describe('BeeOND scratch at /scratch (beeond-scratch-ior.yaml)', () => {
  test("every rank wrote its block at /scratch and read back another node's rank's block; beeond stop ran at job end", async () => {
    const view = await succeeded('beeond');
    const out = view.result?.mpi?.stdoutTail ?? '';
    for (const [rank, other] of [
      [0, 2],
      [1, 3],
      [2, 0],
      [3, 1],
    ])
      expect(out).toContain(`rank ${rank} wrote block-${rank}, read block-${other}: 0 errors`);
    expect(resultOf(view)).toEqual({ ranks: 4, bytesPerRank: 1048576, errors: 0 });
    expect(await resultBlob(`${view.result?.outputs?.prefix as string}/scratch/ior/summary.txt`)).toBe(
      'RESULT {"ranks":4,"bytesPerRank":1048576,"errors":0}\n',
    );
  });

  test('the dry run shows the start task checking BeeOND, beeond start before the ranks, the bind at /scratch and beeond stop', () => {
    const doc = docs.get('beeond') as ExplainDocument;
    expect(doc.scratch).toMatchObject({ kind: 'beeond', path: '/scratch' });
    expect(JSON.stringify(doc.pool.request)).toContain('command -v beeond');
    expect(JSON.stringify(doc.mpiTask)).toContain('beeond start -n');
    expect(JSON.stringify(doc.mpiTask)).toContain('/scratch');
    expect(JSON.stringify(doc.batchJob.request)).toContain('beeond stop -n');
  });
});

describe('a Slurm script on Azure NetApp Files, Azure Files NFS and Azure Managed Lustre (slurm-script-shared-fs.yaml)', () => {
  test('the dry run shows the Batch mounts of the NetApp volume and the Azure Files share, the start task mounting Lustre and binding the three, and the Slurm lines', () => {
    const doc = docs.get('slurm') as ExplainDocument;
    const request = doc.pool.request as { networkConfiguration?: unknown; mountConfiguration?: unknown; startTask?: { commandLine: string } };
    expect(request.networkConfiguration).toEqual({ subnetId: `${SUBNET}/subnets/compute` });
    expect(request.mountConfiguration).toEqual([
      { nfsMountConfiguration: { source: '10.20.0.5:/hpcapps', relativeMountPath: 'apps', mountOptions: '-o hard,rsize=262144,wsize=262144,vers=3,tcp,ro' } },
      {
        nfsMountConfiguration: {
          source: 'data1.file.core.windows.net:/data1/cases',
          relativeMountPath: 'data',
          mountOptions: '-o vers=4,minorversion=1,sec=sys,nconnect=4,ro',
        },
      },
    ]);
    const start = request.startTask?.commandLine ?? '';
    expect(start).toContain('mount -t lustre -o noatime,flock 10.20.0.7@tcp:/lustrefs "$AZ_BATCH_NODE_MOUNTS_DIR"/lustre');
    for (const at of ['apps', 'data', 'lustre']) expect(start).toContain(`mount --bind "$AZ_BATCH_NODE_MOUNTS_DIR"/${at} /${at}`);
    expect(start).toContain('mount -o remount,bind,ro /apps');
    expect(start).toContain('mount -o remount,bind,ro /data');
    const text = JSON.stringify(doc.mpiTask);
    expect(text).toContain('export SLURM_HOSTFILE=\\"$MPIJOB_NODEFILE\\"');
    expect(text).toMatch(/export SLURM_JOB_ID=\S+ SLURM_JOBID=\S+ SLURM_JOB_NAME=slurm-solver/);
    expect(text).toContain('export SLURM_NNODES=\\"$MPIJOB_NODES\\" SLURM_JOB_NUM_NODES=\\"$MPIJOB_NODES\\" SLURM_NTASKS=\\"$MPIJOB_NP\\"');
    expect(text).toContain('OMPI_MCA_plm=^slurm');
  });

  test('the script ran unchanged: the allocation in SLURM_*, every task saw the same /apps and /data and wrote to the shared /lustre', async () => {
    const view = await succeeded('slurm');
    const out = view.result?.mpi?.stdoutTail ?? '';
    const head = /^job (\S+) on (\d+) nodes \(([^)]*)\), (\d+) tasks, (\d+) per node$/m.exec(out);
    expect(head?.slice(1)).toEqual([view.id, '2', expect.any(String), '4', '2']);
    const nodes = (head?.[3] ?? '').split(',');
    expect(nodes).toHaveLength(2);
    expect(new Set(nodes).size).toBe(2);
    expect(out).toMatch(/^in the submit directory \/\S+$/m);
    expect(out).toContain('case: cavity 2x2');
    expect(out).toContain('shared: 4 task files on /lustre, 4 saw the same /apps and /data');
    expect(resultOf(view)).toEqual({ ranks: 4, rankSum: 6 });
    // What the job wrote to /lustre is in the Lustre service's directory of the example network.
    const lustre = path.join(path.dirname(stack.headnode?.apps as string), 'lustre', view.id);
    expect(readFileSync(path.join(lustre, 'result.txt'), 'utf8')).toBe('RESULT {"ranks":4,"rankSum":6}\n');
    expect(
      readdirSync(lustre)
        .filter((f) => f.startsWith('task-'))
        .sort(),
    ).toEqual(['task-0.txt', 'task-1.txt', 'task-2.txt', 'task-3.txt']);
  });
});
