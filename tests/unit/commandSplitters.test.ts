/**
 * Two splitters that look alike and are kept apart on purpose (issue 25's duplicate review): splitShellWords reads a
 * line the way a POSIX shell's tokenizer does (the product's own command lines, read back), splitCommandLine the way
 * a Batch Linux node turns a task's command line into argv without a shell (the emulator). They agree on what the
 * product sends (a program and a single-quoted script); they differ where a shell and the node agent do. If these
 * cases ever agree, one splitter can serve both.
 */
import { splitShellWords } from '../../shared/core/mpi/shellWords';
import { splitCommandLine } from '../../local/batch/runner/commandLine';

const attempt = (split: (line: string) => string[], line: string): string[] | 'throws' => {
  try {
    return split(line);
  } catch {
    return 'throws';
  }
};

test('the command lines the product builds split the same', () => {
  for (const line of [`/bin/bash -c 'set -eu; echo "$X" | tr a b'`, `/bin/sh -c "echo coordinating"`, `a "x\\"y" 'c d'`, `"a\\\\b"`]) {
    expect(splitCommandLine(line)).toEqual(splitShellWords(line));
  }
});

test.each([
  ['\\$ in double quotes', 'a "b\\$c"', ['a', 'b$c'], ['a', 'b\\$c']],
  ['\\` in double quotes', 'a "b\\`c"', ['a', 'b`c'], ['a', 'b\\`c']],
  ['a backslash-newline', 'a\\\nb', ['ab'], ['a\nb']],
  ['a trailing backslash', 'a \\', 'throws', ['a', '\\']],
  ['a carriage return', 'a\rb', ['a\rb'], ['a', 'b']],
] as const)('they differ on %s: the shell and the node agent do', (_what, line, shell, node) => {
  expect(attempt(splitShellWords, line)).toEqual(shell);
  expect(attempt(splitCommandLine, line)).toEqual(node);
});
