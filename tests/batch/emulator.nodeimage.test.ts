/**
 * The emulated node image follows the image catalog (shared/core/images/catalog.ts, local/batch/nodeimage/moduleTree.ts):
 * a node of an Ubuntu-HPC 22.04 pool lists the catalog's module names, loads the right ones, and fails on a name
 * Azure's image lacks (`mpi/impi`, the CentOS-HPC name) the way environment-modules fails on Azure, which is the
 * name the intake check refuses with its suggestion. A plain Ubuntu pool has no modules at all.
 */
import type { BatchServiceClient } from '@azure/batch';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { readTaskFile, sdkClient, waitForNodes, waitForTask, LINUX_VM_CONFIGURATION } from '../../local/batch/testing/sdkHelpers';
import { userCommandLine } from '../../shared/core/mpi/userShell';
import { checkImage } from '../../shared/core/images/imageChecks';
import { parseJobSpec } from '../../shared/core/spec';

const HPC_IMAGE = {
  imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
  nodeAgentSKUId: 'batch.node.ubuntu 22.04',
};
const PRE_EXECUTION = 'module load mpi/impi';

describe('the emulated node image', () => {
  let emu: BatchEmulatorHandle;
  let client: BatchServiceClient;

  beforeAll(async () => {
    emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, jobDeleteMs: 20, poolDeleteMs: 20 } });
    client = sdkClient(emu);
  }, 60_000);
  afterAll(async () => emu?.stop(), 60_000);

  async function run(poolId: string, vm: typeof HPC_IMAGE, command: string) {
    await client.pool.add({ id: poolId, vmSize: 'standard_d2s_v3', virtualMachineConfiguration: vm, targetDedicatedNodes: 1 });
    await waitForNodes(client, poolId, 1);
    await client.job.add({ id: `j-${poolId}`, poolInfo: { poolId } });
    // The user shell the pipeline runs a pre-execution command in: bash with the node's /etc/profile.d.
    await client.task.add(`j-${poolId}`, { id: 't', commandLine: userCommandLine(command) });
    const t = await waitForTask(client, `j-${poolId}`, 't');
    return {
      exitCode: t.executionInfo?.exitCode,
      stdout: await readTaskFile(client, `j-${poolId}`, 't', 'stdout.txt'),
      stderr: await readTaskFile(client, `j-${poolId}`, 't', 'stderr.txt'),
    };
  }

  it("an Ubuntu-HPC node lists the catalog's modules and fails on the name the intake check refuses", async () => {
    const avail = await run('hpc', HPC_IMAGE, 'module -t avail 2>&1; module load mpi/impi-2021 && echo "impi home $MPI_HOME"');
    expect(avail.stdout).toEqual(expect.stringContaining('mpi/impi-2021'));
    expect(avail.stdout).toEqual(expect.stringContaining('mpi/hpcx'));
    expect(avail.stdout).toEqual(expect.stringContaining('impi home /opt/intel/oneapi/mpi/2021.16'));
    expect(avail.stdout).not.toMatch(/^mpi\/impi$/m);

    // The same spec text the check reads: refused at intake with the suggestion, failing on the node by name.
    const spec = parseJobSpec({
      name: 'x',
      pool: { vmSize: 'Standard_HB120rs_v3', nodes: 1 },
      mpi: { runtime: 'intelmpi', command: './a.out', preExecutionCommand: PRE_EXECUTION },
    });
    if (!spec.ok) throw new Error(JSON.stringify(spec.errors));
    expect(checkImage(spec.spec).findings.map((f) => [f.name, f.suggestion])).toEqual([['mpi/impi', 'mpi/impi-2021']]);
    const wrong = await run('hpc2', HPC_IMAGE, `${PRE_EXECUTION}; echo "status $?"`);
    expect(wrong.stderr).toMatch(/Unable to locate a modulefile for 'mpi\/impi'/);
    expect(wrong.stdout).toMatch(/status [1-9]/);
  }, 120_000);

  it('a plain Ubuntu node has no modules (MODULEPATH empty): mpi/openmpi does not load', async () => {
    const r = await run('plain', LINUX_VM_CONFIGURATION as typeof HPC_IMAGE, 'module load mpi/openmpi; echo "status $?"');
    expect(r.stdout).toMatch(/status [1-9]/);
  }, 120_000);
});
