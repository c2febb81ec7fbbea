/**
 * POSIX shell quoting. Every value we put into a command line (user commands, options, image names, paths) goes
 * through `shellQuote`, so the shell sees it as one literal word whatever it contains.
 */

// Characters that never need quoting in any position. `=` is only safe after a leading `-` (`--net=host`): in
// `A=b cmd` the first word would be an assignment, but no assignment starts with `-`.
const SAFE_WORD = /^[A-Za-z0-9_@%+:,./-]+$/;
const SAFE_OPTION = /^-[A-Za-z0-9_@%+:,./=-]*$/;

/** Quote one word for a POSIX shell (sh, bash, dash). Rejects NUL, which no argv or environment can carry. */
export function shellQuote(word: string): string {
  if (word.includes('\0')) {
    throw new Error(`cannot pass a string containing a NUL byte through a shell: ${JSON.stringify(word.slice(0, 80))}`);
  }
  if (word === '') return "''";
  if (SAFE_WORD.test(word) || SAFE_OPTION.test(word)) return word;
  // Inside single quotes nothing is special except the closing quote: end the quote, emit \', reopen.
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** Quote each word and join with spaces: the shell splits it back into exactly these words. */
export function shellJoin(words: readonly string[]): string {
  return words.map(shellQuote).join(' ');
}

/** `/bin/bash -c '<script>'`: Batch runs command lines without a shell, so variable expansion needs one. */
export function bashCommandLine(script: string): string {
  return `/bin/bash -c ${shellQuote(script)}`;
}
