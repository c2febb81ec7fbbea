/**
 * The pure half of "outputs verified before success" (shared/core/planning/outputsCheck.ts): which blobs the MPI task's own
 * output files must have produced, named as Batch names them (the emulator's matcher, local/batch/runner/outputFiles.ts,
 * is the reference for the glob rules).
 */
import fc from 'fast-check';
import picomatch from 'picomatch';
import { expectedMasterUploads, expectedNodeUploads, globRegExp, MAX_VERIFIED_UPLOADS, missingUploadErrors } from '../../shared/core/planning/outputsCheck';
import { nodeUploadTask, outputsPlan } from '../../shared/core/planning/workloadData';
import { parseJobSpec } from '../../shared/core/spec';

const files = (...names: string[]) => names.map((name) => ({ name, isDirectory: false }));

function planOf(outputs: string) {
  const parsed = parseJobSpec(
    `
id: j
name: j
pool: { vmSize: Standard_D8s_v5, nodes: 2 }
mpi: { runtime: openmpi, processesPerNode: 1, command: app }
outputs: ${outputs}
`,
    'application/yaml',
  );
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return outputsPlan(parsed.spec, 'j')!;
}

describe('expected master uploads', () => {
  it("names a plain file by its path, a wildcard match below the pattern's fixed directories, and the logs", () => {
    const plan = planOf('{ account: data1, container: results, files: [ { pattern: result.txt }, { pattern: "out/*.dat" }, { pattern: "missing.txt" } ] }');
    const expected = expectedMasterUploads(
      plan.master,
      [
        ...files(
          'stdout.txt',
          'stderr.txt',
          'fileuploadout.txt',
          'fileuploaderr.txt',
          'wd/result.txt',
          'wd/out/a.dat',
          'wd/out/sub/b.dat',
          'wd/out/.hidden.dat',
        ),
        { name: 'wd/out', isDirectory: true },
      ],
      0,
    );
    expect(expected).toEqual({
      names: ['j/logs/stderr.txt', 'j/logs/stdout.txt', 'j/workdir/out/a.dat', 'j/workdir/result.txt'],
      more: 0,
      unchecked: [],
    });
  });

  it('follows the upload condition and leaves patterns outside the task directory (the scratch) unchecked', () => {
    const plan = planOf('{ account: data1, container: results, when: success, logs: false, files: [ { pattern: r.txt } ] }');
    expect(expectedMasterUploads(plan.master, files('wd/r.txt'), 1)).toEqual({ names: [], more: 0, unchecked: [] });
    const withScratch = [...plan.master, { filePattern: '$MPIJOB_SCRATCH/s.txt', path: 'j/scratch/s.txt', uploadCondition: 'taskCompletion' as const }];
    expect(expectedMasterUploads(withScratch, files('wd/r.txt'), 0)).toEqual({ names: ['j/workdir/r.txt'], more: 0, unchecked: ['$MPIJOB_SCRATCH/s.txt'] });
  });

  it('checks at most MAX_VERIFIED_UPLOADS blobs and counts the rest', () => {
    const plan = planOf('{ account: data1, container: results, logs: false, files: [ { pattern: "*.dat" } ] }');
    const many = Array.from({ length: MAX_VERIFIED_UPLOADS + 5 }, (_, i) => `wd/f${String(i).padStart(5, '0')}.dat`);
    const expected = expectedMasterUploads(plan.master, files(...many), 0);
    expect(expected.names).toHaveLength(MAX_VERIFIED_UPLOADS);
    expect(expected.more).toBe(5);
  });

  it('one error per missing blob', () => {
    expect(missingUploadErrors(['j/workdir/result.txt'])).toEqual([
      'master: j/workdir/result.txt was on the node but is not in the outputs container (its upload was lost)',
    ]);
  });
});

describe('globRegExp', () => {
  it("matches as the emulator's matcher (picomatch, dot files only when named) does", () => {
    // "[!…]" is left out: Batch documents it as a negation ("[!abc] matches any character but a, b, or c"), which
    // picomatch reads as the characters "!" and "a" (see the next test).
    const seg = fc.constantFrom('a', 'b.dat', '.h', 'x1', 'out', 'r.txt', '.mpijob-ranks', 'c.log');
    const globSeg = fc.constantFrom('*', '**', '?', '*.dat', '[ab]*', 'out', '.mpijob-ranks', 'a', '*.txt', 'r.???');
    fc.assert(
      fc.property(fc.array(globSeg, { minLength: 1, maxLength: 3 }), fc.array(seg, { minLength: 1, maxLength: 4 }), (g, p) => {
        const glob = g.join('/');
        const path = p.join('/');
        const ours = globRegExp(glob).test(path);
        const emulator = picomatch(glob, { dot: false })(path);
        // picomatch also lets a trailing "/**" match nothing ("a/**" matches the file "a"); Batch's "**" stands for
        // directories. Where they differ the check expects less, never an upload that was not made.
        if (glob.endsWith('/**')) expect(!ours || emulator).toBe(true);
        else expect(ours).toBe(emulator);
      }),
      { numRuns: 2000 },
    );
  });

  it('reads "[!…]" as Batch documents it: any character but those', () => {
    expect(globRegExp('[!a]*').test('a')).toBe(false);
    expect(globRegExp('[!a]*').test('b1')).toBe(true);
    expect(globRegExp('**/*.dat').test('x/y/z.dat')).toBe(true);
  });
});

describe('expected node uploads', () => {
  const DIR = 'workitems/hpc-j/job-1/mpi';
  const nodeUpload = (logs: boolean, isMaster: boolean) => {
    const plan = planOf(
      `{ account: data1, container: results, logs: ${logs}, files: [ { pattern: "*.log", from: allNodes }, { pattern: "out/**/*.dat", from: allNodes }, { pattern: "sum.txt", from: allNodes } ] }`,
    );
    return nodeUploadTask(plan, { id: 'node-1', affinityId: 'aff-1', taskRootDirectory: DIR, isMaster }, 'https://c?sig', 0)!;
  };

  it("names the matches of the upload task's patterns below the MPI task's directory on the node, and the node's logs", () => {
    const upload = nodeUpload(true, false);
    const expected = expectedNodeUploads(upload.outputFiles, [
      ...files(
        `${DIR}/wd/a.log`,
        `${DIR}/wd/sub/b.log`,
        `${DIR}/wd/.h.log`,
        `${DIR}/wd/out/x/y.dat`,
        `${DIR}/wd/sum.txt`,
        `${DIR}/stdout.txt`,
        `${DIR}/stderr.txt`,
        `${DIR}/wd/keep.dat`,
      ),
      { name: `${DIR}/wd/out`, isDirectory: true },
      // Another task's directory on the same node: not this upload's.
      ...files('workitems/hpc-j/job-1/up-1-a1/stdout.txt', 'workitems/other/job-1/mpi/wd/c.log'),
    ]);
    expect(expected).toEqual({
      names: [
        'j/logs/nodes/node-1/stderr.txt',
        'j/logs/nodes/node-1/stdout.txt',
        'j/nodes/node-1/a.log',
        'j/nodes/node-1/out/x/y.dat',
        'j/nodes/node-1/sum.txt',
      ],
      more: 0,
      unchecked: [],
    });
  });

  it("on the master: the every-node files only (its logs are the MPI task's own uploads)", () => {
    const upload = nodeUpload(true, true);
    expect(expectedNodeUploads(upload.outputFiles, files(`${DIR}/wd/a.log`, `${DIR}/stdout.txt`)).names).toEqual(['j/nodes/node-1/a.log']);
  });

  it('a pattern not rooted at the node root, or climbing out of it, is reported as unchecked', () => {
    expect(
      expectedNodeUploads(
        [
          { filePattern: '/mnt/x/*.log', path: 'p' },
          { filePattern: '$AZ_BATCH_NODE_ROOT_DIR/../*.log', path: 'q' },
          { filePattern: '$AZ_BATCH_NODE_SHARED_DIR/*.log', path: 'r' },
        ],
        files('a.log'),
      ),
    ).toEqual({ names: [], more: 0, unchecked: ['/mnt/x/*.log', '$AZ_BATCH_NODE_ROOT_DIR/../*.log', '$AZ_BATCH_NODE_SHARED_DIR/*.log'] });
  });

  it("is bounded like the master's: the rest are counted", () => {
    const many = Array.from({ length: MAX_VERIFIED_UPLOADS + 5 }, (_, i) => `${DIR}/wd/f${String(i).padStart(5, '0')}.log`);
    const expected = expectedNodeUploads(nodeUpload(false, false).outputFiles, files(...many));
    expect(expected.names).toHaveLength(MAX_VERIFIED_UPLOADS);
    expect(expected.more).toBe(5);
  });

  it('names a missing blob with its node', () => {
    expect(missingUploadErrors(['j/nodes/node-1/a.log'], 'node node-1')).toEqual([
      'node node-1: j/nodes/node-1/a.log was on the node but is not in the outputs container (its upload was lost)',
    ]);
  });
});
