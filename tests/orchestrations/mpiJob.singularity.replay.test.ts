/**
 * The mpiJob orchestrator replayed with a Singularity job whose images are a library:// URI and a SIF file in blob
 * storage: the SIF's SAS URL is minted once (short-lived) before the pull window, every node's pull task downloads it
 * as a resource file and fills the job's SIF cache, the MPI ranks run the cached SIF, and the job release task
 * removes the job's SIF files.
 */
import { healthyJob } from './fakeActivities';
import { jobInput, replay, STEP_MS } from './jobReplay';
import type { NodeTaskRequest } from '../../shared/core/contract';
import { splitShellWords } from '../../shared/core/mpi/shellWords';

test('a SIF from blob storage: one short-lived SAS, a resource file in every pull task, the cached SIF at run time', async () => {
  const minted: { blobs: unknown; expiresAt: string }[] = [];
  const pulls: NodeTaskRequest[] = [];
  let release = '';
  let application = '';
  const job = healthyJob({
    imageBlobUrls: (input) => {
      minted.push(input);
      return input.blobs.map((b) => `https://${b.account}.blob.example/${b.container}/${b.blob}?sas`);
    },
    nodeTasksAdd: ({ tasks }) => void pulls.push(...tasks.filter((t) => t.id.startsWith('pull-'))),
    batchJobCreate: ({ batchJobId, releaseCommandLine }) => {
      release = releaseCommandLine;
      return batchJobId;
    },
    mpiTaskAdd: (req) => {
      application = req.applicationCommandLine;
    },
  });
  const input = jobInput('replay-sif', {
    nodes: 2,
    command: 'osu_allreduce',
    container: { runtime: 'singularity', images: ['library://lab/osu/osu:7.4', { account: 'data1', container: 'images', blob: 'osu/tools.sif' }] },
  });
  const r = await replay(input, job);
  expect(job.finished()).toMatchObject({ state: 'Succeeded' });

  expect(minted).toHaveLength(1);
  expect(minted[0].blobs).toEqual([{ account: 'data1', container: 'images', blob: 'osu/tools.sif' }]);
  // Minted in the pull stage, a few simulated steps after the start, valid 2 hours (the cap is 7 days here).
  const validFromStart = Date.parse(minted[0].expiresAt) - Date.parse(r.history[0].Timestamp);
  expect(validFromStart).toBeGreaterThanOrEqual(2 * 3_600_000);
  expect(validFromStart).toBeLessThanOrEqual(2 * 3_600_000 + 20 * STEP_MS);

  expect(pulls.map((t) => t.affinityId).sort()).toEqual(['aff-0', 'aff-1']);
  for (const t of pulls) {
    expect(t.resourceFiles).toEqual([{ httpUrl: 'https://data1.blob.example/images/osu/tools.sif?sas', filePath: 'mpijob-image-1.sif' }]);
    const script = splitShellWords(t.commandLine)[2];
    expect(script).toContain('singularity pull --force "$mpijob_tmp" library://lab/osu/osu:7.4');
    expect(script).toContain('mv -f -- mpijob-image-1.sif "$mpijob_tmp"');
  }
  expect(splitShellWords(application)[2]).toContain('mpijob/sif/replay-sif/0.sif');
  expect(splitShellWords(release)[2]).toBe(
    `rm -rf "$AZ_BATCH_NODE_SHARED_DIR"/mpijob/images/replay-sif || true; /bin/bash -c 'rm -rf -- "$AZ_BATCH_NODE_SHARED_DIR"/mpijob/sif/replay-sif'`,
  );
});
