/**
 * Intel MPI mapped by generation and size as Shipyard did (cli/import/shipyard/intelMpiMapping.ts), default outputs
 * on imported specs (defaultOutputs.ts), and the per-spec verdict line (verdict.ts). Pure.
 */
import { intelMpiMapping, sizeClass } from '../../cli/import/shipyard/intelMpiMapping';
import { applyDefaultOutputs, parseOutputsOption } from '../../cli/import/shipyard/defaultOutputs';
import { newDraft } from '../../cli/import/shipyard/context';
import { specVerdict, verdictLine } from '../../cli/import/shipyard/verdict';
import type { MappingEntry } from '../../cli/import/shipyard/report';

describe('sizeClass', () => {
  it.each([
    ['STANDARD_H16R', 'networkDirect'],
    ['STANDARD_A9', 'networkDirect'],
    ['STANDARD_NC24R', 'networkDirect'],
    ['STANDARD_HC44rs', 'sriov'],
    ['Standard_HB120rs_v3', 'sriov'],
    ['Standard_ND96asr_v4', 'sriov'],
    ['STANDARD_D1_V2', 'none'],
    ['Standard_D4s_v5', 'none'],
  ])('%s is %s', (size, cls) => expect(sizeClass(size)).toBe(cls));
});

describe('intelMpiMapping', () => {
  it("NetworkDirect (DAPL, the host's Intel MPI bound in) → cannot run on the SR-IOV successor, with the nearest choice", () => {
    const m = intelMpiMapping({ ofa: false, originalSize: 'STANDARD_H16R', targetSize: 'Standard_HB120rs_v3' });
    expect(m.verdict).toBe('cannot');
    expect(m.note).toMatch(
      /^Intel MPI over DAPL\/NetworkDirect has no path on Standard_HB120rs_v3 \(SR-IOV InfiniBand; STANDARD_H16R is retired\)\. Shipyard set I_MPI_FABRICS=shm:dapl, I_MPI_DAPL_PROVIDER=ofa-v2-ib0, I_MPI_DYNAMIC_CONNECTION=0, I_MPI_DAPL_TRANSLATION_CACHE=0/,
    );
    expect(m.note).toMatch(/Nearest working choice: rebuild the image with Intel MPI 2019 or later inside \(mpi\.version "2021"/);
    // Never claims it maps what Shipyard did.
    expect(m.note).not.toMatch(/as Shipyard/);
  });

  it('SR-IOV intelmpi-ofa (the 2018 preset) → shm:ofa, as Shipyard set', () => {
    expect(intelMpiMapping({ ofa: true, originalSize: 'STANDARD_HC44rs', targetSize: 'STANDARD_HC44rs', version: '2018' })).toMatchObject({
      verdict: 'reproduced',
      ours: 'I_MPI_FABRICS=shm:ofa',
      note: 'Shipyard set I_MPI_FABRICS=shm:ofa on STANDARD_HC44rs; the spec sets I_MPI_FABRICS=shm:ofa on STANDARD_HC44rs: the same fabric',
    });
  });

  it('SR-IOV intelmpi (2019+) → shm:ofi with FI_PROVIDER=mlx, as Shipyard set', () => {
    expect(intelMpiMapping({ ofa: false, originalSize: 'Standard_HB120rs_v3', targetSize: 'Standard_HB120rs_v3' })).toMatchObject({
      verdict: 'reproduced',
      shipyard: 'Shipyard set I_MPI_FABRICS=shm:ofi, FI_PROVIDER=mlx on Standard_HB120rs_v3',
      ours: 'I_MPI_FABRICS=shm:ofi, FI_PROVIDER=mlx',
    });
  });

  it("SR-IOV, a declared generation other than Shipyard's runtime → changed, saying so", () => {
    expect(intelMpiMapping({ ofa: true, originalSize: 'STANDARD_HC44rs', targetSize: 'STANDARD_HC44rs' })).toMatchObject({
      verdict: 'changed',
      note: expect.stringMatching(/mpi\.version unset differs from Shipyard's intelmpi-ofa/),
    });
  });

  it('no RDMA: Shipyard set nothing; ours names TCP, and says what a 2017/2018 image needs', () => {
    const m = intelMpiMapping({ ofa: false, originalSize: 'STANDARD_D1_V2', targetSize: 'STANDARD_D1_V2' });
    expect(m).toMatchObject({
      verdict: 'changed',
      shipyard: 'Shipyard set no fabric setting (Intel MPI chose one itself) on STANDARD_D1_V2',
      ours: 'I_MPI_FABRICS=shm:ofi, FI_PROVIDER=tcp',
    });
    expect(m.note).toMatch(/an image with Intel MPI 2017\/2018 does not know FI_PROVIDER=tcp: set mpi\.version/);
    expect(intelMpiMapping({ ofa: true, originalSize: 'STANDARD_D1_V2', targetSize: 'STANDARD_D1_V2', version: '2018' })).toMatchObject({
      verdict: 'changed',
      ours: 'I_MPI_FABRICS=shm:tcp',
    });
  });
});

describe('default outputs', () => {
  it('a job without outputs keeps its working directory and full logs at the given place', () => {
    const d = newDraft('a.yaml', 'j', 't');
    expect(applyDefaultOutputs(d, { account: 'data1', container: 'results', given: true })).toEqual([
      "CHANGED: outputs added: the working directory's files and the full logs go to data1/results",
    ]);
    expect(d.spec.outputs).toEqual({ account: 'data1', container: 'results', when: 'always', files: [{ pattern: '**/*', from: 'workdir' }], logs: true });
  });

  it('an assumed account says it must be allowed; none at all keeps the full logs and leaves a TODO', () => {
    const d = newDraft('a.yaml', 'j', 't');
    expect(applyDefaultOutputs(d, { account: 'mystorageaccount', container: 'shipyard-outputs', given: false })[0]).toMatch(
      /must be ones the deployment allows, DATA_ACCOUNTS and DATA_CONTAINERS/,
    );
    const none = newDraft('b.yaml', 'j', 't');
    expect(applyDefaultOutputs(none, undefined)[0]).toMatch(/^TODO: the working directory's results are not kept/);
    expect(none.spec).toEqual({ cleanup: { keepLogs: true } });
  });

  it("leaves a job's own outputs alone", () => {
    const d = newDraft('a.yaml', 'j', 't');
    d.spec.outputs = { account: 'x', container: 'y' };
    expect(applyDefaultOutputs(d, { account: 'data1', container: 'results', given: true })).toEqual([]);
    expect(d.spec.outputs).toEqual({ account: 'x', container: 'y' });
  });

  it('--outputs is validated', () => {
    expect(parseOutputsOption('data1/results')).toEqual({ account: 'data1', container: 'results', given: true });
    expect(parseOutputsOption('data1')).toEqual({ error: 'must be "account/container", got "data1"' });
    expect(parseOutputsOption('Data_1/results')).toMatchObject({ error: expect.stringMatching(/^account "Data_1"/) });
    expect(parseOutputsOption('data1/R')).toMatchObject({ error: expect.stringMatching(/^container "R"/) });
  });
});

describe('verdict', () => {
  const entry = (status: MappingEntry['status'], specs?: string[]): MappingEntry => ({
    role: 'pool',
    file: 'pool.yaml',
    path: 'pool_specification.x',
    status,
    note: 'n',
    ...(specs ? { specs } : {}),
  });
  it('runs as written / with changes (listed) / cannot run (reason)', () => {
    expect(verdictLine(specVerdict('a.yaml', [], [entry('mapped')]))).toBe('runs as written');
    expect(verdictLine(specVerdict('a.yaml', ['CHANGED: outputs added'], [entry('approximated'), entry('unsupported', ['b.yaml'])]))).toBe(
      'runs with changes (2 listed)',
    );
    expect(
      verdictLine(
        specVerdict('a.yaml', ['CANNOT RUN AS IS: Intel MPI over DAPL has no path. More words.', 'CANNOT RUN AS IS: second'], [entry('approximated')]),
      ),
    ).toBe('cannot run (Intel MPI over DAPL has no path; +1 more)');
  });
});
