/**
 * Split a command line into words the way a POSIX shell's tokenizer would, without performing any expansion:
 * `$VAR` and `$(cmd)` stay literal text. Enough to read back command lines we build (tests, the emulator, logs);
 * it does not understand operators such as `;` or `|` (they stay inside words or become words of their own).
 * Not the emulator's splitter (local/batch/runner/commandLine.ts): a Batch node splits without a shell, which differs
 * on backslashes and whitespace (tests/unit/commandSplitters.test.ts names the cases).
 */
export function splitShellWords(line: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let i = 0;
  while (i < line.length) {
    const c = line[i];
    if (c === "'") {
      const end = line.indexOf("'", i + 1);
      if (end < 0) throw new Error(`unterminated single quote at offset ${i} in: ${line.slice(0, 120)}`);
      word += line.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '"') {
      i++;
      inWord = true;
      for (;;) {
        if (i >= line.length) throw new Error(`unterminated double quote in: ${line.slice(0, 120)}`);
        const d = line[i];
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < line.length && '$`"\\\n'.includes(line[i + 1])) {
          if (line[i + 1] !== '\n') word += line[i + 1];
          i += 2;
          continue;
        }
        word += d;
        i++;
      }
    } else if (c === '\\') {
      if (i + 1 >= line.length) throw new Error(`trailing backslash in: ${line.slice(0, 120)}`);
      if (line[i + 1] !== '\n') {
        word += line[i + 1];
        inWord = true;
      }
      i += 2;
    } else if (c === ' ' || c === '\t' || c === '\n') {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  if (inWord) words.push(word);
  return words;
}
