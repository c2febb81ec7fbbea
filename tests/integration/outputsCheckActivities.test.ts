/**
 * The two activities of "outputs verified before success", twice each against real Azurite and the real Batch
 * emulator through the app's composition root: mpiTaskUploads reads what a task left in its directory and names the
 * blobs its output files must have produced; outputsMissing says which of them are not in the container. Both only
 * read, so a second call answers the same.
 */
import { BlobServiceClient } from '@azure/storage-blob';
import { startAzurite, DATA_ACCOUNT, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { localAppSettings } from '../../local/stack';
import { addNodeTask, createJob, getTask } from '../../shared/adapters/batch';
import { batchContext } from '../../shared/services';
import { mpiTaskUploads, outputsMissing } from '../../orchestrations/activities/outputsCheck';
import { until } from '../batch/until';

let azurite: AzuriteHandle;
let emu: BatchEmulatorHandle;
const saved = { ...process.env };

beforeAll(async () => {
  azurite = await startAzurite();
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 } });
  Object.assign(process.env, localAppSettings(azurite, emu));
}, 60_000);
afterAll(async () => {
  process.env = saved;
  await emu?.stop();
  await azurite?.stop();
}, 150_000);

it("mpiTaskUploads names the due blobs from the task's files; outputsMissing names those not in the container; twice the same", async () => {
  const batch = batchContext();
  await batch.client.pool.add({
    id: 'check-pool',
    vmSize: 'standard_d2s_v3',
    targetDedicatedNodes: 1,
    virtualMachineConfiguration: {
      imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
      nodeAgentSKUId: 'batch.node.ubuntu 22.04',
    },
  });
  await createJob(batch, { batchJobId: 'check-job', jobId: 'check', poolId: 'check-pool' });
  const node = await until('a node', async () => (await batch.client.computeNode.list('check-pool')).find((n) => n.state === 'idle'));
  await addNodeTask(batch, 'check-job', {
    id: 'mpi',
    affinityId: node.affinityId ?? '',
    commandLine: '/bin/sh -c "mkdir -p out && echo 1 > result.txt && echo 2 > out/a.dat"',
  });
  await until('the task to complete', async () => ((await getTask(batch, 'check-job', 'mpi')).state === 'completed' ? true : undefined));

  const master = [
    { filePattern: 'result.txt', path: 'check/workdir/result.txt', uploadCondition: 'taskSuccess' as const },
    { filePattern: 'out/*.dat', path: 'check/workdir/out', uploadCondition: 'taskSuccess' as const },
    { filePattern: '../*.txt', path: 'check/logs', uploadCondition: 'taskCompletion' as const },
  ];
  const input = { batchJobId: 'check-job', taskId: 'mpi', master, exitCode: 0 };
  const [e1, e2] = [await mpiTaskUploads(input), await mpiTaskUploads(input)];
  expect(e2).toEqual(e1);
  expect(e1).toEqual({
    names: ['check/logs/stderr.txt', 'check/logs/stdout.txt', 'check/workdir/out/a.dat', 'check/workdir/result.txt'],
    more: 0,
    unchecked: [],
  });

  const results = BlobServiceClient.fromConnectionString(azurite.connectionString(DATA_ACCOUNT.name)).getContainerClient('check-results');
  await results.createIfNotExists();
  for (const name of ['check/logs/stderr.txt', 'check/logs/stdout.txt', 'check/workdir/out/a.dat']) await results.getBlockBlobClient(name).upload('x', 1);
  const lookup = { account: DATA_ACCOUNT.name, container: 'check-results', names: e1.names };
  const [m1, m2] = [await outputsMissing(lookup), await outputsMissing(lookup)];
  expect(m1).toEqual(['check/workdir/result.txt']);
  expect(m2).toEqual(m1);
}, 60_000);
