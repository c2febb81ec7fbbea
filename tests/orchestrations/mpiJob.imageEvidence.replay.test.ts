/**
 * The image's MPI evidence, replayed with the real mpiJob orchestrator against typed fakes: a container job without
 * mpi.version reads its image's evidence in one activity after admission and before any pool; the generation it
 * gives reaches the MPI task's environment and the timeline says which evidence chose it; an image that does not
 * exist fails the job before any pool; an unreachable registry leaves the default generation with a note. Runs
 * started before the read (no settings.readImageEvidence) replay without it.
 */
import type { MpiJobInput } from '../../shared/core/contract';
import type { ImageEvidenceAnswer } from '../../shared/core/planning/imageEvidence';
import { healthyJob } from './fakeActivities';
import { expectFinishedOnceAndLast, jobInput, replay, scheduled, scheduledInputs, SETTINGS } from './jobReplay';

const IMAGE = 'registry.example.com/hpc/impi:2018';

function intelJob(id: string, opts: { readEvidence?: boolean; version?: string } = {}): MpiJobInput {
  const base = jobInput(id, { nodes: 2, command: 'app', container: { runtime: 'docker', images: [IMAGE] } });
  return {
    ...base,
    spec: { ...base.spec, mpi: { ...base.spec.mpi, runtime: 'intelmpi', options: [], ...(opts.version ? { version: opts.version } : {}) } },
    settings: { ...SETTINGS, ...(opts.readEvidence === false ? {} : { readImageEvidence: true }) },
  };
}

const IMPI_2018: ImageEvidenceAnswer = {
  read: true,
  digest: `sha256:${'a'.repeat(64)}`,
  evidence: { runtime: 'intelmpi', version: '2018', evidence: 'Env I_MPI_ROOT=/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi' },
};

const envOf = (r: Awaited<ReturnType<typeof replay>>) => {
  const [task] = scheduledInputs(r.history, 'mpiTaskAdd');
  return Object.fromEntries((task.environment ?? []).map((e) => [e.name, e.value]));
};

describe("the image's MPI evidence, replayed", () => {
  it('Intel MPI 2018 in the image: the 2018 preset (shm:tcp, no libfabric), and the timeline names the evidence', async () => {
    const job = healthyJob({ imageEvidence: () => IMPI_2018 });
    const r = await replay(intelJob('ev-2018'), job);
    expect(job.finished().state).toBe('Succeeded');
    const names = scheduled(r.history);
    expect(names.indexOf('imageEvidence')).toBeGreaterThan(names.indexOf('admissionRequest'));
    expect(names.indexOf('imageEvidence')).toBeLessThan(names.indexOf('poolCreate'));
    expect(scheduledInputs(r.history, 'imageEvidence')).toEqual([{ image: IMAGE }]);
    const env = envOf(r);
    expect(env.I_MPI_FABRICS).toBe('shm:tcp');
    expect(env.FI_PROVIDER).toBeUndefined();
    const note = scheduledInputs(r.history, 'jobNote').find((n) => n.eventId === 'image-evidence');
    expect(note?.reason).toMatch(
      /^MPI preset from image registry\.example\.com\/hpc\/impi:2018 \(sha256:a+\): no mpi\.version; the image's Env I_MPI_ROOT=.*2018.* says intelmpi 2018 → Intel MPI 2017–2018/,
    );
    expect(note?.data).toMatchObject({ kind: 'imageEvidence', mpiVersion: '2018' });
    expectFinishedOnceAndLast(r, job);
  });

  it('an image that does not exist: Failed with the field path before any pool, nothing to clean up', async () => {
    const job = healthyJob({
      imageEvidence: ({ image }) => ({ read: false, kind: 'notFound', message: `image ${image} not found in registry.example.com (404 MANIFEST_UNKNOWN)` }),
    });
    const r = await replay(intelJob('ev-missing'), job);
    expect(job.finished()).toMatchObject({
      state: 'Failed',
      reason: `container.images[0]: image ${IMAGE} not found in registry.example.com (404 MANIFEST_UNKNOWN)`,
    });
    expect(scheduled(r.history)).toEqual(['jobTransition', 'admissionRequest', 'imageEvidence', 'admissionRelease', 'jobFinish', 'jobEnded']);
    expectFinishedOnceAndLast(r, job);
  });

  it('a registry the app cannot reach: the default generation (2019+), and the timeline says why', async () => {
    const job = healthyJob({
      imageEvidence: () => ({ read: false, kind: 'unreachable', message: `image ${IMAGE}: registry.example.com could not be reached (ECONNREFUSED)` }),
    });
    const r = await replay(intelJob('ev-unreachable'), job);
    expect(job.finished().state).toBe('Succeeded');
    expect(envOf(r).FI_PROVIDER).toBe('tcp');
    expect(scheduledInputs(r.history, 'jobNote').find((n) => n.eventId === 'image-evidence')?.reason).toMatch(
      /^MPI generation not read from the image: .*could not be reached.*the default generation of intelmpi/,
    );
  });

  it('a declared mpi.version, or a run started before the read: no registry read', async () => {
    for (const input of [intelJob('ev-declared', { version: '2021' }), intelJob('ev-old', { readEvidence: false })]) {
      const job = healthyJob({ imageEvidence: () => IMPI_2018 });
      const r = await replay(input, job);
      expect(job.finished().state).toBe('Succeeded');
      expect(scheduled(r.history)).not.toContain('imageEvidence');
      expect(envOf(r).FI_PROVIDER).toBe('tcp');
    }
  });
});
