/**
 * Splits a Batch task command line into argv the way a Linux node does: no shell, so no variable
 * expansion, globbing or redirection; whitespace separates words; single quotes are literal; double
 * quotes group and allow \" and \\; a backslash outside quotes escapes the next character. Not a shell's tokenizer
 * (shared/core/mpi/shellWords.ts): the two differ where a shell and the node agent do (tests/unit/commandSplitters.test.ts).
 */
export function splitCommandLine(line: string): string[] {
  const args: string[] = [];
  let cur = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated single quote in command line: ${line}`);
      cur += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      while (i < line.length && line[i] !== '"') {
        if (line[i] === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) i++;
        cur += line[i++];
      }
      if (i >= line.length) throw new Error(`unterminated double quote in command line: ${line}`);
      inWord = true;
      i++;
    } else if (c === '\\' && i + 1 < line.length) {
      cur += line[i + 1];
      inWord = true;
      i += 2;
    } else if (/\s/.test(c)) {
      if (inWord) args.push(cur);
      cur = '';
      inWord = false;
      i++;
    } else {
      cur += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) args.push(cur);
  return args;
}
