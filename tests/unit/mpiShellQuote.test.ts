import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { bashCommandLine, shellJoin, shellQuote } from '../../shared/core/mpi/shellQuote';
import { splitShellWords } from '../../shared/core/mpi/shellWords';

const nastyChar = fc.constantFrom(
  "'",
  '"',
  '$',
  '`',
  '\\',
  '\n',
  ' ',
  '\t',
  '*',
  '?',
  '[',
  ']',
  '{',
  '}',
  '~',
  '#',
  ';',
  '&',
  '|',
  '<',
  '>',
  '(',
  ')',
  '!',
  '=',
  '-',
  '%',
);
const nastyString = fc
  .array(fc.oneof(nastyChar, fc.string({ unit: 'binary', maxLength: 4 })), { maxLength: 12 })
  .map((parts) => parts.join(''))
  .filter((s) => !s.includes('\0'));

describe('shellQuote (pure)', () => {
  it('round-trips any word list through our tokenizer', () => {
    fc.assert(
      fc.property(fc.array(nastyString, { maxLength: 8 }), (words) => {
        expect(splitShellWords(shellJoin(words))).toEqual(words);
      }),
      { numRuns: 1000 },
    );
  });

  it('leaves plain words readable and quotes the rest', () => {
    expect(shellQuote('mpirun')).toBe('mpirun');
    expect(shellQuote('--net=host')).toBe('--net=host');
    expect(shellQuote('A=b')).toBe("'A=b'"); // would be an assignment in command position
    expect(shellQuote('')).toBe("''");
    expect(shellQuote("it's")).toBe(`'it'\\''s'`);
    expect(bashCommandLine('echo $HOME')).toBe(`/bin/bash -c 'echo $HOME'`);
    expect(() => shellQuote('a\0b')).toThrow(/NUL/);
  });

  it('tokenizes double quotes and backslashes like a shell, without expanding', () => {
    expect(splitShellWords(`a "b \\"c\\" $X" 'd e'\\ f`)).toEqual(['a', 'b "c" $X', 'd e f']);
    expect(() => splitShellWords(`'open`)).toThrow(/unterminated/);
  });
});

describe('shellQuote (integration: real shells)', () => {
  // One shell process per interpreter for a fixed, seeded sample: real parsing, bounded cost.
  const sample = fc.sample(nastyString, { numRuns: 300, seed: 42 });
  sample.push("'", "''", "a'b'c", '$(touch /tmp/should-not-exist)', '`id`', '\n', 'x\ny', '"$HOME"', '\\', '-n', '');

  it.each(['/bin/sh', '/bin/bash'])('%s reads back every quoted word byte for byte', (shell) => {
    const script = `printf '%s\\0' ${shellJoin(sample)}`;
    const r = spawnSync(shell, ['-c', script], { encoding: 'buffer', timeout: 10_000 });
    expect(r.status).toBe(0);
    const out = r.stdout.toString('utf8').split('\0');
    out.pop(); // after the final terminator
    expect(out).toEqual(sample);
  });
});
