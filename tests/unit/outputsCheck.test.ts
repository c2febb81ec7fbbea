/**
 * The pure half of "outputs verified before success" (shared/planning/outputsCheck.ts): which blobs the MPI task's own
 * output files must have produced, named as Batch names them (the emulator's matcher, local/batch/runner/outputFiles.ts,
 * is the reference for the glob rules).
 */
import fc from 'fast-check';
import picomatch from 'picomatch';
import { expectedMasterUploads, globRegExp, MAX_VERIFIED_UPLOADS, missingUploadErrors } from '../../shared/planning/outputsCheck';
import { outputsPlan } from '../../shared/planning/workloadData';
import { parseJobSpec } from '../../shared/spec';

const files = (...names: string[]) => names.map((name) => ({ name, isDirectory: false }));

function planOf(outputs: string) {
  const parsed = parseJobSpec(`
id: j
name: j
pool: { vmSize: Standard_D8s_v5, nodes: 2 }
mpi: { runtime: openmpi, processesPerNode: 1, command: app }
outputs: ${outputs}
`, 'application/yaml');
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.errors));
  return outputsPlan(parsed.spec, 'j')!;
}

describe('expected master uploads', () => {
  it('names a plain file by its path, a wildcard match below the pattern\'s fixed directories, and the logs', () => {
    const plan = planOf('{ account: data1, container: results, files: [ { pattern: result.txt }, { pattern: "out/*.dat" }, { pattern: "missing.txt" } ] }');
    const expected = expectedMasterUploads(plan.master, [
      ...files('stdout.txt', 'stderr.txt', 'fileuploadout.txt', 'fileuploaderr.txt', 'wd/result.txt', 'wd/out/a.dat', 'wd/out/sub/b.dat', 'wd/out/.hidden.dat'),
      { name: 'wd/out', isDirectory: true },
    ], 0);
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
    expect(missingUploadErrors(['j/workdir/result.txt'])).toEqual(['master: j/workdir/result.txt was on the node but is not in the outputs container (its upload was lost)']);
  });
});

describe('globRegExp', () => {
  it('matches as the emulator\'s matcher (picomatch, dot files only when named) does', () => {
    // "[!…]" is left out: Batch documents it as a negation ("[!abc] matches any character but a, b, or c"), which
    // picomatch reads as the characters "!" and "a" (see the next test).
    const seg = fc.constantFrom('a', 'b.dat', '.h', 'x1', 'out', 'r.txt', '.mpijob-ranks', 'c.log');
    const globSeg = fc.constantFrom('*', '**', '?', '*.dat', '[ab]*', 'out', '.mpijob-ranks', 'a', '*.txt', 'r.???');
    fc.assert(fc.property(fc.array(globSeg, { minLength: 1, maxLength: 3 }), fc.array(seg, { minLength: 1, maxLength: 4 }), (g, p) => {
      const glob = g.join('/');
      const path = p.join('/');
      const ours = globRegExp(glob).test(path);
      const emulator = picomatch(glob, { dot: false })(path);
      // picomatch also lets a trailing "/**" match nothing ("a/**" matches the file "a"); Batch's "**" stands for
      // directories. Where they differ the check expects less, never an upload that was not made.
      if (glob.endsWith('/**')) expect(!ours || emulator).toBe(true);
      else expect(ours).toBe(emulator);
    }), { numRuns: 2000 });
  });

  it('reads "[!…]" as Batch documents it: any character but those', () => {
    expect(globRegExp('[!a]*').test('a')).toBe(false);
    expect(globRegExp('[!a]*').test('b1')).toBe(true);
    expect(globRegExp('**/*.dat').test('x/y/z.dat')).toBe(true);
  });
});
