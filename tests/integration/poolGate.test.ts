/**
 * Pools have owners, at the pipeline's end of things: the activities that place a job on a pool it did not create judge
 * that pool again, as it is now, with the job row's owner (docs/security.md, "Pools have owners"). Against real Azurite
 * and the real Batch emulator through the app's composition root, as activitiesTwice.test.ts does. On the code before
 * owners both calls below placed bob's job on a pool that had become alice's.
 */
import { startAzurite, type AzuriteHandle } from '../../local/azurite';
import { startBatchEmulator, type BatchEmulatorHandle } from '../../local/batch';
import { localAppSettings } from '../../local/stack';
import { sdkClient } from '../../local/batch/testing/sdkHelpers';
import { jobStore } from '../../shared/services';
import { recordSubmission } from '../../shared/adapters/state';
import { parseJobSpec } from '../../shared/core/spec';
import { JOB_KEY, OWNER_KEY, OWNER_VALUE, SUBMITTER_KEY } from '../../shared/adapters/batch/common';
import { poolInspect } from '../../orchestrations/activities/pool';
import { batchJobCreate } from '../../orchestrations/activities/batchJob';
import { smallSpec } from '../ops/helpers';

let azurite: AzuriteHandle;
let emu: BatchEmulatorHandle;
const saved = { ...process.env };
const BOB = 'tid/bob';
const ALICE = 'tid/alice';
const metadata = (owner: string) => [
  { name: OWNER_KEY, value: OWNER_VALUE },
  { name: JOB_KEY, value: 'old-job' },
  { name: SUBMITTER_KEY, value: owner },
];

beforeAll(async () => {
  azurite = await startAzurite();
  emu = await startBatchEmulator({ timing: { allocateMs: 20, bootMs: 20, leaveMs: 20, startTaskPollMs: 20 } });
  Object.assign(process.env, localAppSettings(azurite, emu), { SHARED_POOLS: 'gate-shared=submitter' });
}, 60_000);
afterAll(async () => {
  process.env = saved;
  await emu?.stop();
  await azurite?.stop();
}, 150_000);

async function bobsJobOn(id: string, poolId: string, poolAccess?: 'admin'): Promise<void> {
  const parsed = parseJobSpec(smallSpec(id, { command: 'true', pool: { poolId, nodes: 1 } }), 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  await recordSubmission(await jobStore(), { spec: parsed.spec, owner: BOB, ...(poolAccess ? { poolAccess } : {}) });
}

async function addPool(id: string, meta?: { name: string; value: string }[]): Promise<void> {
  await sdkClient(emu).pool.add({
    id,
    vmSize: 'Standard_D2s_v5',
    targetDedicatedNodes: 0,
    enableInterNodeCommunication: true,
    virtualMachineConfiguration: {
      imageReference: { publisher: 'microsoft-dsvm', offer: 'ubuntu-hpc', sku: '2204', version: 'latest' },
      nodeAgentSKUId: 'batch.node.ubuntu 22.04',
    },
    ...(meta ? { metadata: meta } : {}),
  });
}

const batchJobsOn = async (poolId: string) => (await sdkClient(emu).job.list()).filter((j) => j.poolInfo?.poolId === poolId).map((j) => j.id);

describe('the pipeline judges a reused pool again', () => {
  it("poolInspect with the job: allowed while the pool is bob's, refused once it is alice's (same sentence as the door)", async () => {
    await addPool('gate-1', metadata(BOB));
    await bobsJobOn('gate-job-1', 'gate-1');
    expect((await poolInspect({ poolId: 'gate-1', jobId: 'gate-job-1' })).access).toEqual({ allowed: true });
    await sdkClient(emu).pool.patch('gate-1', { metadata: metadata(ALICE) });
    expect((await poolInspect({ poolId: 'gate-1', jobId: 'gate-job-1' })).access).toEqual({
      allowed: false,
      reason: expect.stringMatching(/^pool gate-1 is not one you may use/),
    });
    // Without a job (the reads the orchestrator made before owners): no verdict.
    expect((await poolInspect({ poolId: 'gate-1' })).access).toBeUndefined();
  });

  it('batchJobCreate refuses to place the job on a pool that changed hands, and creates no Batch job there', async () => {
    await addPool('gate-2', metadata(ALICE));
    await bobsJobOn('gate-job-2', 'gate-2');
    await expect(
      batchJobCreate({ jobId: 'gate-job-2', batchJobId: 'hpc-gate-job-2', poolId: 'gate-2', releaseCommandLine: '/bin/true' }),
    ).rejects.toMatchObject({ name: 'PoolNotYours' });
    expect(await batchJobsOn('gate-2')).toEqual([]);
  });

  it("a shared pool, a pool without a recorded submitter, and an admin's recorded right", async () => {
    await addPool('gate-shared');
    await bobsJobOn('gate-job-3', 'gate-shared');
    expect((await poolInspect({ poolId: 'gate-shared', jobId: 'gate-job-3' })).access).toEqual({ allowed: true });
    // Made by hand: nobody's.
    await addPool('gate-bare');
    await bobsJobOn('gate-job-4', 'gate-bare');
    expect((await poolInspect({ poolId: 'gate-bare', jobId: 'gate-job-4' })).access).toMatchObject({ allowed: false });
    await bobsJobOn('gate-job-5', 'gate-bare', 'admin');
    expect((await poolInspect({ poolId: 'gate-bare', jobId: 'gate-job-5' })).access).toEqual({ allowed: true });
    expect(await batchJobCreate({ jobId: 'gate-job-5', batchJobId: 'hpc-gate-job-5', poolId: 'gate-bare', releaseCommandLine: '/bin/true' })).toBe(
      'hpc-gate-job-5',
    );
  });
});
