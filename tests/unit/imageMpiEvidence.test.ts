/**
 * The MPI generation from image evidence (shared/core/images/mpiEvidence.ts): labels and Env of an image config blob, and
 * presetChoice naming that evidence in its reason when the spec declares no mpi.version. Pure.
 */
import { mpiEvidenceFromImageConfig } from '../../shared/core/images/mpiEvidence';
import { presetChoice } from '../../shared/core/mpi/generation';

const config = (c: { Env?: string[]; Labels?: Record<string, string> }) => ({
  architecture: 'amd64',
  os: 'linux',
  config: c,
  rootfs: { type: 'layers', diff_ids: [] },
});

describe('mpiEvidenceFromImageConfig', () => {
  it.each([
    [
      { Env: ['PATH=/usr/bin', 'I_MPI_ROOT=/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi'] },
      'intelmpi',
      '2018',
      'Env I_MPI_ROOT=/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi',
    ],
    [{ Env: ['I_MPI_ROOT=/opt/intel/oneapi/mpi/2021.13'] }, 'intelmpi', '2021.13', 'Env I_MPI_ROOT=/opt/intel/oneapi/mpi/2021.13'],
    [{ Env: ['PATH=/usr/local/bin:/opt/intel/impi/2017.4.239/bin64:/usr/bin'] }, 'intelmpi', '2017', 'Env PATH entry /opt/intel/impi/2017.4.239/bin64'],
    [{ Env: ['OMPI_VERSION=4.1.5'] }, 'openmpi', '4.1.5', 'Env OMPI_VERSION=4.1.5'],
    [{ Env: ['MPICH_VERSION=3.4.3'] }, 'mpich', '3.4.3', 'Env MPICH_VERSION=3.4.3'],
    [{ Labels: { 'mpi.version': 'intelmpi-2018' } }, 'intelmpi', '2018', 'label mpi.version=intelmpi-2018'],
    [
      { Labels: { 'org.opencontainers.image.mpi': 'openmpi 5.0.3' }, Env: ['I_MPI_ROOT=/opt/intel/impi/2017.1'] },
      'openmpi',
      '5.0.3',
      'label org.opencontainers.image.mpi=openmpi 5.0.3',
    ],
    [{ Labels: { 'com.example.mpi': 'mvapich2:2.3.7' } }, 'mvapich', '2.3.7', 'label com.example.mpi=mvapich2:2.3.7'],
  ])('%j → %s %s', (c, runtime, version, evidence) => {
    expect(mpiEvidenceFromImageConfig(config(c))).toEqual({ runtime, version, evidence });
  });

  it('no evidence, or not an image config: undefined', () => {
    expect(mpiEvidenceFromImageConfig(config({ Env: ['PATH=/usr/bin'], Labels: { maintainer: 'x', 'mpi.version': 'lam 7.1' } }))).toBeUndefined();
    expect(mpiEvidenceFromImageConfig({})).toBeUndefined();
    expect(mpiEvidenceFromImageConfig('{"config":{}}')).toBeUndefined();
    expect(mpiEvidenceFromImageConfig(config({ Env: [42 as unknown as string, 'I_MPI_ROOT=/usr/lib/mpi'] }))).toBeUndefined();
  });
});

describe('presetChoice with image evidence', () => {
  const evidence = { runtime: 'intelmpi' as const, version: '2018', evidence: 'Env I_MPI_ROOT=/opt/intel/compilers_and_libraries_2018.5.274/linux/mpi' };

  it("no mpi.version: the image's generation picks the preset, and the reason names the evidence", () => {
    const c = presetChoice('intelmpi', undefined, 'auto', 'Standard_HB120rs_v3', evidence);
    expect(c.family).toBe('intelmpi-2018');
    expect(c.reason).toMatch(
      /^no mpi\.version; the image's Env I_MPI_ROOT=\/opt\/intel\/compilers_and_libraries_2018\.5\.274\/linux\/mpi says intelmpi 2018 → Intel MPI 2017–2018/,
    );
    // Without the evidence, the current generation (what the old code always chose).
    expect(presetChoice('intelmpi', undefined, 'auto', 'Standard_HB120rs_v3').family).toBe('intelmpi-2019');
  });

  it('a declared mpi.version wins; evidence of another runtime is ignored', () => {
    expect(presetChoice('intelmpi', '2021', 'auto', 'Standard_HB120rs_v3', evidence)).toMatchObject({
      family: 'intelmpi-2019',
      reason: expect.stringMatching(/^mpi\.version "2021"/),
    });
    expect(presetChoice('openmpi', undefined, 'auto', 'Standard_HB120rs_v3', evidence).reason).toMatch(/^no mpi\.version: the current generation of openmpi/);
  });
});
