/**
 * What the registry's answer about a job's image means for the job (shared/core/planning/imageEvidence.ts): which
 * image is read, which answers fail the job before any pool and which only leave a note. Pure.
 */
import { parseJobSpec } from '../../shared/core/spec';
import { imageEvidenceOutcome, imageEvidenceRequest, type ImageEvidenceAnswer } from '../../shared/core/planning/imageEvidence';

function spec(container: Record<string, unknown>, mpi: Record<string, unknown> = {}) {
  const parsed = parseJobSpec(
    JSON.stringify({
      name: 'ev',
      limits: { maxWallClock: 'PT10M' },
      pool: { vmSize: 'Standard_HB120rs_v3', nodes: 2 },
      container,
      mpi: { runtime: 'intelmpi', command: 'app', ...mpi },
    }),
    'application/json',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return parsed.spec;
}
const REF = 'myacr.azurecr.io/hpc/app:1';
const docker = (extra: Record<string, unknown> = {}) => spec({ runtime: 'docker', images: [REF], ...extra });
const managed = { server: 'myacr.azurecr.io', identity: 'managed' };
const secret = { server: 'myacr.azurecr.io', identity: { secretRef: 'ACR_TOKEN', username: 'puller' } };

test("which image is read: the first, with the spec's registry when it is that image's; none with mpi.version, natively or for library://", () => {
  expect(imageEvidenceRequest(docker())).toEqual({ image: REF });
  expect(imageEvidenceRequest(docker({ registry: secret }))).toEqual({ image: REF, registry: secret });
  expect(imageEvidenceRequest(docker({ registry: { ...secret, server: 'other.azurecr.io' } }))).toEqual({ image: REF });
  expect(imageEvidenceRequest(spec({ runtime: 'singularity', images: [`docker://${REF}`] }))).toEqual({ image: REF });
  expect(imageEvidenceRequest(spec({ runtime: 'singularity', images: ['library://lolcow/default/lolcow:latest'] }))).toBeUndefined();
  expect(imageEvidenceRequest(spec({ runtime: 'docker', images: [REF] }, { version: '2021' }))).toBeUndefined();
  expect(imageEvidenceRequest(spec({ runtime: 'none' }))).toBeUndefined();
});

describe('what an answer means', () => {
  const s = docker();
  const out = (answer: ImageEvidenceAnswer, request = { image: REF } as Parameters<typeof imageEvidenceOutcome>[1]) =>
    imageEvidenceOutcome(s, request, answer, 'Standard_HB120rs_v3');

  test('evidence of the same runtime sets the generation and says why', () => {
    const o = out({ read: true, digest: 'sha256:x', evidence: { runtime: 'intelmpi', version: '2018', evidence: 'label mpi=intelmpi-2018' } });
    expect(o).toMatchObject({
      version: '2018',
      note: expect.stringMatching(
        /^MPI preset from image .*: no mpi\.version; the image's label mpi=intelmpi-2018 says intelmpi 2018 → Intel MPI 2017–2018.*has InfiniBand → InfiniBand$/,
      ),
    });
  });

  test('evidence of another runtime, an unsupported version or no evidence: the default, with a note', () => {
    expect(out({ read: true, digest: 'sha256:x', evidence: { runtime: 'openmpi', version: '4.1.5', evidence: 'Env OMPI_VERSION=4.1.5' } })).toEqual({
      note: expect.stringContaining('but mpi.runtime is intelmpi: the evidence is not used'),
      evidence: expect.anything(),
    });
    expect(
      out({ read: true, digest: 'sha256:x', evidence: { runtime: 'intelmpi', version: '2016', evidence: 'Env I_MPI_ROOT=/opt/intel/impi/2016.1' } }),
    ).not.toHaveProperty('version');
    expect(out({ read: true, digest: 'sha256:x' })).toEqual({ note: expect.stringContaining('names no MPI in its labels or environment') });
  });

  test('not found fails with the field path; denied fails unless the nodes hold credentials the app lacks; unreachable goes on', () => {
    expect(out({ read: false, kind: 'notFound', message: `image ${REF} not found in myacr.azurecr.io (404 MANIFEST_UNKNOWN)` })).toEqual({
      fail: `container.images[0]: image ${REF} not found in myacr.azurecr.io (404 MANIFEST_UNKNOWN)`,
    });
    const denied: ImageEvidenceAnswer = { read: false, kind: 'denied', message: `image ${REF}: myacr.azurecr.io refused an anonymous pull` };
    expect(out(denied)).toEqual({
      fail: expect.stringMatching(/^container\.images\[0\]: .*refused an anonymous pull; the nodes would pull with the same credentials \(anonymous/),
    });
    expect(out(denied, { image: REF, registry: secret } as never)).toHaveProperty('fail');
    expect(out(denied, { image: REF, registry: managed } as never)).toEqual({
      note: expect.stringContaining('the nodes pull with the pool identity, which the app does not hold'),
    });
    expect(out({ read: false, kind: 'unreachable', message: 'x could not be reached' })).toEqual({
      note: expect.stringContaining('the default generation of intelmpi'),
    });
    expect(out({ read: false, kind: 'invalid', message: 'no linux/amd64 image' })).toHaveProperty('note');
  });
});
