/**
 * JSON.parse keeps the last of two equal keys in one object and says nothing, while the YAML door refuses a duplicate
 * key: the two doors must read a document the same way, and a reviewer reading the first `"privileged": false` must
 * not be fooled by a second `"privileged": true` further down. This linear scan finds the first key that appears twice
 * in one object, with its path and position. It runs only on text JSON.parse has accepted, so it trusts the grammar.
 */
import { formatPath, type PathSegment } from './path';

export interface DuplicateJsonKey {
  /** Path of the repeated key, e.g. `mpi.env.A`. */
  path: string;
  key: string;
  /** Offset of the second occurrence in the text. */
  offset: number;
}

type Frame = { kind: 'object'; keys: Set<string>; key?: string } | { kind: 'array'; index: number };

export function firstDuplicateJsonKey(text: string): DuplicateJsonKey | undefined {
  const stack: Frame[] = [];
  const pathTo = (last?: string): PathSegment[] => {
    const out: PathSegment[] = [];
    for (const f of stack) if (f.kind === 'object' ? f.key !== undefined : true) out.push(f.kind === 'object' ? (f.key as string) : f.index);
    if (last !== undefined) out.push(last);
    return out;
  };
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === '"') {
      const start = i;
      i++;
      while (text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
      i++;
      const top = stack[stack.length - 1];
      // A string directly followed by ':' is a key of the innermost object.
      let j = i;
      while (j < text.length && ' \t\r\n'.includes(text[j])) j++;
      if (top?.kind === 'object' && text[j] === ':') {
        const key = JSON.parse(text.slice(start, i)) as string;
        if (top.keys.has(key)) {
          top.key = undefined;
          return { path: formatPath(pathTo(key)), key, offset: start };
        }
        top.keys.add(key);
        top.key = key;
        i = j + 1;
      }
    } else if (ch === '{') {
      stack.push({ kind: 'object', keys: new Set() });
      i++;
    } else if (ch === '[') {
      stack.push({ kind: 'array', index: 0 });
      i++;
    } else if (ch === '}' || ch === ']') {
      stack.pop();
      i++;
    } else if (ch === ',') {
      const top = stack[stack.length - 1];
      if (top?.kind === 'array') top.index++;
      else if (top) top.key = undefined;
      i++;
    } else i++;
  }
  return undefined;
}
