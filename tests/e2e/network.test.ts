/**
 * The environment around the job, end to end on the local stack (one stack for the file), each job an example from
 * examples/workloads submitted as committed over the public HTTP API, with real processes and real Open MPI across
 * emulated nodes:
 *  - pbs-script-compat: a PBS job script (#PBS directives, cat $PBS_NODEFILE, mpirun -np $(wc -l < $PBS_NODEFILE)
 *    -machinefile $PBS_NODEFILE) runs unchanged under mpi.launcher.compat: pbs; its dry run shows the node file and
 *    the PBS variables in the MPI task's command line (what `hpcjob explain` prints).
 *  - nfs-headnode-in-vnet: a pool in subnet "compute" mounts a file server of that subnet (the emulator's
 *    shared-network service 10.20.0.4) at the fixed paths /apps (read-only) and /data, builds the program from /apps
 *    and writes its result to /data, which is also uploaded (from: mount); the same spec in another subnet cannot
 *    reach the server and fails in the start task.
 *  - parallel-scratch-ior: every rank writes a block to the per-job shared scratch and reads back and checks the
 *    block of a rank on the other node (IOR-like); the summary is uploaded from the scratch.
 */
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startStack, REPO_ROOT, type Stack } from '../../local/stack';
import { DATA_ACCOUNT } from '../../local/azurite';
import { asUser, checkCleanup, mpiOutput, submitSpec, watchJob, type JobViewLite } from '../../local/jobRunner';
import type { ExplainDocument } from '../../shared/contract/explain';

let stack: Stack;
const WORKLOADS = path.join(REPO_ROOT, 'examples', 'workloads');

/** The jobs, by id: the example as committed, run under this id. */
const JOBS: Record<string, string> = {
  'net-pbs': 'pbs-script-compat.yaml',
  'net-nfs': 'nfs-headnode-in-vnet.yaml',
  'net-ior': 'parallel-scratch-ior.yaml',
};
const SUBNET = '/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/hpc-local/providers/Microsoft.Network/virtualNetworks/vnet-local';
/** The head node's exports: software and case data, on this machine. */
const served = mkdtempSync(path.join(os.tmpdir(), 'net-headnode-'));

function example(file: string, id: string): string {
  return `id: ${id}\n${readFileSync(path.join(WORKLOADS, file), 'utf8')}`;
}

const views = new Map<string, JobViewLite>();
const docs = new Map<string, ExplainDocument>();

beforeAll(async () => {
  const logs = path.join(REPO_ROOT, 'test-artifacts');
  mkdirSync(logs, { recursive: true });
  for (const d of ['apps', 'data']) mkdirSync(path.join(served, d));
  writeFileSync(path.join(served, 'apps', 'ranks.c'), readFileSync(path.join(REPO_ROOT, 'examples', 'mpi', 'ranks.c')));
  writeFileSync(path.join(served, 'data', 'case.txt'), 'case: cavity 2x2\n');
  stack = await startStack({
    port: 0,
    logDestination: path.join(logs, 'e2e-network-host.log'),
    demoImageFillerBytes: 64 * 1024,
    // The head node's exports are file servers jobs may mount on this deployment.
    env: { DATA_MOUNT_SOURCES: '10.20.0.4:/export/*' },
    batch: {
      networkServices: [{
        name: 'headnode', subnetId: `${SUBNET}/subnets/compute`, address: '10.20.0.4',
        exports: [{ path: '/export/apps', directory: path.join(served, 'apps') }, { path: '/export/data', directory: path.join(served, 'data') }],
      }],
    },
  });
  const software = stack.operator.blobService(DATA_ACCOUNT.name).getContainerClient('software');
  await software.createIfNotExists();
  await software.getBlockBlobClient('ranks.c').uploadFile(path.join(REPO_ROOT, 'examples', 'mpi', 'ranks.c'));
  await software.getBlockBlobClient('solver.pbs').uploadFile(path.join(WORKLOADS, 'files', 'solver.pbs'));
  await software.getBlockBlobClient('scratchio.c').uploadFile(path.join(REPO_ROOT, 'examples', 'mpi', 'scratchio.c'));
  for (const [id, file] of Object.entries(JOBS)) {
    const res = await fetch(`${stack.baseUrl}/api/jobs?dryRun=true`, {
      method: 'POST',
      headers: { 'content-type': 'application/yaml', ...(await asUser(stack)()) },
      body: example(file, id),
    });
    if (res.status !== 200) throw new Error(`dry run of ${file} answered ${res.status}: ${await res.text()}`);
    docs.set(id, (await res.json()) as ExplainDocument);
  }
  const outside = example(JOBS['net-nfs'], 'net-nfs-outside').replace('/subnets/compute', '/subnets/elsewhere');
  const ids = await Promise.all([...Object.entries(JOBS).map(([id, file]) => submitSpec(stack, example(file, id))), submitSpec(stack, outside)]);
  for (const v of await Promise.all(ids.map((id) => watchJob(stack, id, 540_000)))) views.set(v.id, v);
}, 720_000);
afterAll(async () => stack?.stop(), 60_000);

async function succeeded(id: string): Promise<JobViewLite> {
  const view = views.get(id) as JobViewLite;
  if (view.state !== 'Succeeded') {
    throw new Error(`job ${id} ${view.state}: ${view.error?.message ?? ''}\n${view.result?.mpi?.stdoutTail ?? ''}\n${view.result?.mpi?.stderrTail ?? ''}\n${await mpiOutput(stack, view)}`);
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
    const text = JSON.stringify(docs.get('net-pbs'));
    expect(text).toContain('export PBS_NODEFILE=\\"$MPIJOB_NODEFILE\\"');
    expect(text).toContain('export PBS_JOBID=net-pbs PBS_JOBNAME=pbs-solver');
  });

  test('the PBS script ran unchanged: one node-file line per slot, mpirun from the node file, every rank in', async () => {
    const view = await succeeded('net-pbs');
    const out = view.result?.mpi?.stdoutTail ?? '';
    expect(out).toContain('job net-pbs on 2 nodes, 2 cpus each');
    const nodefile = out.split('\n').slice(out.split('\n').findIndex((l) => l.startsWith('node file ')) + 1).filter((l) => /^\S+$/.test(l) && !l.startsWith('RESULT'));
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

describe('a pool in the file server\'s network (nfs-headnode-in-vnet.yaml)', () => {
  test('the dry run shows the pool\'s networkConfiguration, the Batch NFS mounts and the start task binding /apps and /data', () => {
    const request = docs.get('net-nfs')?.pool.request as { networkConfiguration?: unknown; mountConfiguration?: unknown; startTask?: { commandLine: string } };
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
    const view = await succeeded('net-nfs');
    const out = view.result?.mpi?.stdoutTail ?? '';
    expect(out).toContain('case: cavity 2x2');
    expect(resultOf(view)).toEqual({ ranks: 4, rankSum: 6 });
    expect(readFileSync(path.join(served, 'data', 'result-2.txt'), 'utf8')).toBe('RESULT {"ranks":4,"rankSum":6}\n');
    const prefix = view.result?.outputs?.prefix as string;
    expect(prefix).toMatch(/^users\/[0-9a-f-]+\/[0-9a-f-]+\/jobs\/net-nfs$/);
    expect(await resultBlob(`${prefix}/mounts/data/result-2.txt`)).toBe('RESULT {"ranks":4,"rankSum":6}\n');
  });

  test('the same spec in another subnet cannot reach the server: every node\'s start task fails, the job fails in provisioning', () => {
    // The start task's stderr ("mount.nfs: Connection timed out …") is checked in tests/batch/emulator.network.test.ts;
    // the job view does not carry start-task stderr tails yet.
    const view = views.get('net-nfs-outside') as JobViewLite;
    expect(view.state).toBe('Failed');
    expect(view.error?.message).toMatch(/^Provisioning: pool hpc-net-nfs-outside: \d+ nodes failed \(\S+ starttaskfailed, \S+ starttaskfailed\)/);
  });
});

describe('a per-job parallel scratch over the nodes\' disks (parallel-scratch-ior.yaml)', () => {
  test('every rank wrote its block and read back another node\'s rank\'s block without an error; the summary outlived the pool', async () => {
    const view = await succeeded('net-ior');
    const out = view.result?.mpi?.stdoutTail ?? '';
    for (const [rank, other] of [[0, 2], [1, 3], [2, 0], [3, 1]]) expect(out).toContain(`rank ${rank} wrote block-${rank}, read block-${other}: 0 errors`);
    expect(resultOf(view)).toEqual({ ranks: 4, bytesPerRank: 1048576, errors: 0 });
    expect(await resultBlob(`${view.result?.outputs?.prefix as string}/scratch/ior/summary.txt`)).toBe('RESULT {"ranks":4,"bytesPerRank":1048576,"errors":0}\n');
  });

  test('the dry run shows the scratch: the master exports it in the coordination command, the release task removes it', () => {
    const doc = docs.get('net-ior') as ExplainDocument;
    expect(doc.scratch).toMatchObject({ kind: 'masterNfs' });
    expect(JSON.stringify(doc.mpiTask)).toContain('exportfs');
    expect(JSON.stringify(doc.batchJob.request)).toContain('umount');
  });
});
