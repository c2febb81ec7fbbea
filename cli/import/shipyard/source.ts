/**
 * A Batch Shipyard YAML file as the importer reads it: the decoded value, and for every path in it the line it came
 * from and its source text (so `sku: 18.10` stays "18.10", not the number 18.1). Syntax errors carry line and column.
 * Pure: the caller reads the file.
 */
import YAML, { Lexer } from 'yaml';
import { formatPath, type PathSegment } from '../../../shared/core/spec/path';

/** Which Shipyard file a document is: the report groups its settings by file. */
export type ShipyardFileRole = 'config' | 'pool' | 'jobs' | 'credentials';

export interface SourceProblem {
  message: string;
  line?: number;
  column?: number;
}

export interface ShipyardSource {
  role: ShipyardFileRole;
  /** How the user named the file (shown in the report). */
  name: string;
  value: unknown;
  /** 1-based line of the node at a path ("pool_specification.vm_size"), when known. */
  lineOf(path: string): number | undefined;
  /** The scalar's text as written (plain or quoted content), when the path holds a scalar. */
  scalarText(path: string): string | undefined;
}

export type DecodeResult = { ok: true; source: ShipyardSource } | { ok: false; problems: SourceProblem[] };

/** Far above any real Shipyard file; keeps a runaway document away from the parser. */
export const SOURCE_LIMITS = { maxChars: 4 * 1024 * 1024, maxTokens: 1_000_000, maxFlowDepth: 64 } as const;

export function decodeShipyardYaml(role: ShipyardFileRole, name: string, input: string): DecodeResult {
  const text = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  const tooBig = checkSize(text);
  if (tooBig) return { ok: false, problems: [{ message: tooBig }] };
  const lines = lineStarts(text);
  const at = (offset: number) => position(lines, offset);
  const doc = YAML.parseDocument(text, { uniqueKeys: false, prettyErrors: false });
  if (doc.errors.length > 0) {
    return {
      ok: false,
      problems: doc.errors.map((e) => ({
        message: `YAML syntax error: ${e.message.split('\n')[0].replace(/ at line \d+, column \d+:?$/, '')}`,
        ...at(e.pos[0]),
      })),
    };
  }
  const nodes = new Map<string, { offset: number; text?: string }>();
  const duplicate = indexNodes(doc.contents, [], nodes, text);
  if (duplicate) {
    return { ok: false, problems: [{ message: `YAML error: the key ${JSON.stringify(duplicate.key)} appears twice in one mapping`, ...at(duplicate.offset) }] };
  }
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    return { ok: false, problems: [{ message: `YAML error: ${err instanceof Error ? err.message : String(err)}` }] };
  }
  return {
    ok: true,
    source: {
      role,
      name,
      value,
      lineOf: (path) => {
        const n = nodes.get(path);
        return n ? at(n.offset).line : undefined;
      },
      scalarText: (path) => nodes.get(path)?.text,
    },
  };
}

function checkSize(text: string): string | undefined {
  if (text.length > SOURCE_LIMITS.maxChars) return `the file is too large: ${text.length} characters, at most ${SOURCE_LIMITS.maxChars}`;
  let depth = 0;
  let tokens = 0;
  for (const token of new Lexer().lex(text)) {
    if (++tokens > SOURCE_LIMITS.maxTokens) return `the file is too complex: more than ${SOURCE_LIMITS.maxTokens} YAML tokens`;
    if (token === '[' || token === '{') {
      if (++depth > SOURCE_LIMITS.maxFlowDepth) return `collections are nested more than ${SOURCE_LIMITS.maxFlowDepth} deep`;
    } else if (token === ']' || token === '}') depth = Math.max(0, depth - 1);
  }
  return undefined;
}

/** Records where every node is; returns the first key that appears twice in one mapping (Shipyard's loader refuses those). */
function indexNodes(
  node: unknown,
  path: PathSegment[],
  out: Map<string, { offset: number; text?: string }>,
  text: string,
): { key: string; offset: number } | undefined {
  if (YAML.isAlias(node) || !YAML.isNode(node)) return undefined;
  const offset = node.range?.[0];
  const key = formatPath(path);
  // A mapping value keeps its key's position: the report points at the line naming the setting.
  if (offset !== undefined) out.set(key, { offset: out.get(key)?.offset ?? offset, text: YAML.isScalar(node) ? scalarSource(node, text) : undefined });
  if (YAML.isMap(node)) {
    const seen = new Set<string>();
    for (const pair of node.items) {
      const key = YAML.isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const keyOffset = YAML.isNode(pair.key) ? (pair.key.range?.[0] ?? 0) : 0;
      if (seen.has(key)) return { key, offset: keyOffset };
      seen.add(key);
      // A key with no value (`vm_size:`) has no value node: it is found at its key.
      out.set(formatPath([...path, key]), { offset: keyOffset });
      const dup = indexNodes(pair.value, [...path, key], out, text);
      if (dup) return dup;
    }
  } else if (YAML.isSeq(node)) {
    for (let i = 0; i < node.items.length; i++) {
      const dup = indexNodes(node.items[i], [...path, i], out, text);
      if (dup) return dup;
    }
  }
  return undefined;
}

function scalarSource(node: YAML.Scalar, text: string): string | undefined {
  if (node.type === 'PLAIN' && node.range) return text.slice(node.range[0], node.range[1]).trimEnd();
  return typeof node.value === 'string' ? node.value : node.value === null ? undefined : String(node.value);
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return starts;
}

function position(starts: number[], offset: number): { line: number; column: number } {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return { line: lo + 1, column: offset - starts[lo] + 1 };
}
