/**
 * The node half of "outputs verified before success" against the real Batch emulator through the app's composition
 * root: nodeTaskUploads lists the files below a task's directory on its node (the node file API, filtered to that
 * directory: another task's files on the same node are not its) and names the blobs a node upload task's output
 * files must have produced from there. It only reads, so a second call answers the same.
 */
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { localAppSettings } from '../../local/stack';
import { addNodeTask, createJob, getTask } from '../../shared/adapters/batch';
import { batchContext } from '../../shared/services';
import { nodeTaskUploads } from '../../orchestrations/activities/outputsCheck';
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

it("nodeTaskUploads names the due blobs from the files below the task's directory on its node; twice the same", async () => {
  const batch = batchContext();
  await batch.client.pool.add({
    id: 'ncheck-pool',
    vmSize: 'standard_d2s_v3',
    targetDedicatedNodes: 1,
    virtualMachineConfiguration: {
      imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
      nodeAgentSKUId: 'batch.node.ubuntu 22.04',
    },
  });
  await createJob(batch, { batchJobId: 'ncheck-job', jobId: 'ncheck', poolId: 'ncheck-pool' });
  const node = await until('a node', async () => (await batch.client.computeNode.list('ncheck-pool')).find((n) => n.state === 'idle'));
  const run = async (id: string) => {
    await addNodeTask(batch, 'ncheck-job', {
      id,
      affinityId: node.affinityId ?? '',
      commandLine: '/bin/sh -c "mkdir -p sub && echo 1 > a.log && echo 2 > sub/b.log && echo 3 > c.dat"',
    });
    await until(`task ${id} to complete`, async () => ((await getTask(batch, 'ncheck-job', id)).state === 'completed' ? true : undefined));
    return (await batch.client.task.get('ncheck-job', id)).nodeInfo?.taskRootDirectory ?? '';
  };
  const dir = await run('mpi');
  await run('mpi2');
  expect(dir).not.toBe('');

  const input = {
    poolId: 'ncheck-pool',
    nodeId: node.id ?? '',
    taskRootDirectory: dir,
    outputFiles: [
      { filePattern: `$AZ_BATCH_NODE_ROOT_DIR/${dir}/wd/**/*.log`, path: `ncheck/nodes/${node.id}` },
      { filePattern: `$AZ_BATCH_NODE_ROOT_DIR/${dir}/*.txt`, path: `ncheck/logs/nodes/${node.id}` },
    ],
  };
  const [e1, e2] = [await nodeTaskUploads(input), await nodeTaskUploads(input)];
  expect(e2).toEqual(e1);
  expect(e1).toEqual({
    names: [
      `ncheck/logs/nodes/${node.id}/stderr.txt`,
      `ncheck/logs/nodes/${node.id}/stdout.txt`,
      `ncheck/nodes/${node.id}/a.log`,
      `ncheck/nodes/${node.id}/sub/b.log`,
    ],
    more: 0,
    unchecked: [],
  });
}, 60_000);
