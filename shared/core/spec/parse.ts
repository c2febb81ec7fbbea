/**
 * parseJobSpec: text (JSON or YAML) or an already-decoded value → a normalized JobSpec, or every
 * problem found with its JSON path. It never throws: intake answers 400 from its result alone.
 */
import YAML from 'yaml';
import { z } from 'zod';
import { crossFieldIssues, SpecIssue } from './crossField';
import { generationIssues } from '../mpi/generation';
import { normalizeSpec } from './normalize';
import { formatPath, valueAt } from './path';
import { JobSpec, JobSpecSchema, LIMITS } from './schema';
import { canonicalJson } from './canonical';
import { jsonErrorOffset } from './jsonErrorOffset';
import { checkSpecTextSize, checkYamlText, TEXT_LIMITS } from './textLimits';
import { firstDuplicateJsonKey } from './jsonDuplicateKeys';
import { forbiddenKeys } from './forbiddenKeys';

export interface SpecError {
  /** JSON path of the offending field ("pool.nodes", "container.images[0]"); "" for the document itself. */
  path: string;
  message: string;
  /** 1-based position in the submitted text, for syntax errors. */
  line?: number;
  column?: number;
}

export type ParseJobSpecResult = { ok: true; spec: JobSpec } | { ok: false; errors: SpecError[] };

/** Largest accepted request text; bigger bodies are refused before parsing. */
export const MAX_SPEC_TEXT_CHARS = TEXT_LIMITS.maxChars;

/** At most this many problems are listed (a hostile document can have tens of thousands); the rest are counted. */
export const MAX_LISTED_ERRORS = 100;

export function parseJobSpec(input: string | unknown, contentType?: string): ParseJobSpecResult {
  try {
    let raw: unknown = input;
    if (typeof input === 'string') {
      const decoded = decodeText(input, contentType);
      if (!decoded.ok) return decoded;
      raw = decoded.value;
    }
    return validateJobSpec(raw);
  } catch (err) {
    // Defensive: a bug here must become a 400 with a message, never a crashed worker.
    return { ok: false, errors: [{ path: '', message: `internal validation error: ${err instanceof Error ? err.message : String(err)}` }] };
  }
}

/** Validate a decoded value (object from JSON/YAML or a queue message). */
export function validateJobSpec(raw: unknown): ParseJobSpecResult {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { ok: false, errors: [{ path: '', message: `the job spec must be an object (a JSON object or a YAML mapping), got ${describe(raw)}` }] };
  }
  const forbidden = forbiddenKeys(raw, MAX_LISTED_ERRORS);
  if (forbidden.length) {
    return {
      ok: false,
      errors: forbidden.map((f) => ({
        path: f.path,
        message: `the key ${JSON.stringify(f.key)} is not allowed anywhere in a job spec (it names JavaScript object machinery, not a field)`,
      })),
    };
  }
  const cross = crossFieldIssues(raw);
  const crossKeys = new Set(cross.map((i) => formatPath(i.path)));
  const result = JobSpecSchema.safeParse(raw);
  const issues: SpecIssue[] = [];
  if (!result.success) {
    for (const issue of result.error.issues) issues.push(...explainIssue(issue, raw, crossKeys));
  }
  issues.push(...cross);
  if (issues.length > 0 || !result.success) return { ok: false, errors: capped(dedupe(issues)) };
  const spec = normalizeSpec(result.data);
  // Combinations no current VM size can run (Intel MPI 2017 over SR-IOV InfiniBand, CUDA older than the GPU).
  const generation = generationIssues(spec);
  if (generation.length) return { ok: false, errors: generation };
  const size = canonicalJson(spec).length;
  if (size > LIMITS.maxSpecJsonChars) {
    return { ok: false, errors: [{ path: '', message: `the job spec is too large: ${size} characters of JSON, at most ${LIMITS.maxSpecJsonChars}` }] };
  }
  return { ok: true, spec };
}

type Decoded = { ok: true; value: unknown } | { ok: false; errors: SpecError[] };

function decodeText(input: string, contentType: string | undefined): Decoded {
  // Editors on Windows like to start files with a byte-order mark; JSON.parse does not.
  const text = input.charCodeAt(0) === 0xfeff ? input.slice(1) : input;
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  const json = type === 'application/json' || type.endsWith('+json');
  // JSON.parse is native and linear; the YAML parser is not, so YAML is measured first (shared/core/spec/textLimits.ts).
  const tooBig = json ? checkSpecTextSize(text) : checkYamlText(text);
  if (tooBig) return { ok: false, errors: [{ path: '', message: tooBig.message }] };
  // YAML 1.2 is a superset of JSON, so anything else (YAML types, text/plain, no type) goes through YAML.
  return json ? decodeJson(text) : decodeYaml(text);
}

function decodeJson(text: string): Decoded {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    const at = lineColumn(text, jsonErrorOffset(text));
    return {
      ok: false,
      errors: [
        {
          path: '',
          message: `JSON syntax error at line ${at.line}, column ${at.column}: ${message}`,
          ...at,
        },
      ],
    };
  }
  // JSON.parse keeps the last of two equal keys; the YAML door refuses them, and so does this one.
  const duplicate = firstDuplicateJsonKey(text);
  if (duplicate) {
    return {
      ok: false,
      errors: [
        {
          path: duplicate.path,
          message: `JSON error: the key ${JSON.stringify(duplicate.key)} appears twice in one object`,
          ...lineColumn(text, duplicate.offset),
        },
      ],
    };
  }
  return { ok: true, value };
}

function decodeYaml(text: string): Decoded {
  // The parser's own duplicate-key check compares every key with every other (quadratic): ours is linear.
  const doc = YAML.parseDocument(text, { uniqueKeys: false, prettyErrors: true });
  if (doc.errors.length === 0) {
    const duplicate = firstDuplicateKey(doc, text);
    if (duplicate)
      return {
        ok: false,
        errors: [{ path: '', message: `YAML error: the key ${JSON.stringify(duplicate.key)} appears twice in one mapping`, ...duplicate.at }],
      };
  }
  if (doc.errors.length > 0) {
    return {
      ok: false,
      errors: doc.errors.map((e) => {
        const pos = e.linePos?.[0];
        const firstLine = e.message.split('\n')[0].replace(/:$/, '');
        return {
          path: '',
          message: `YAML syntax error: ${firstLine}`,
          ...(pos ? { line: pos.line, column: pos.col } : {}),
        };
      }),
    };
  }
  try {
    // Alias expansion is bounded so a "billion laughs" document cannot exhaust memory.
    return { ok: true, value: doc.toJS({ maxAliasCount: 100 }) };
  } catch (err) {
    return { ok: false, errors: [{ path: '', message: `YAML error: ${err instanceof Error ? err.message : String(err)}` }] };
  }
}

/** The first key that appears twice in one mapping, with where it appears the second time. */
function firstDuplicateKey(doc: YAML.Document, text: string): { key: string; at: { line?: number; column?: number } } | undefined {
  let found: { key: string; at: { line?: number; column?: number } } | undefined;
  YAML.visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = YAML.isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        if (seen.has(key)) {
          const offset = YAML.isNode(pair.key) ? pair.key.range?.[0] : undefined;
          found = { key, at: offset !== undefined ? lineColumn(text, offset) : {} };
          return YAML.visit.BREAK;
        }
        seen.add(key);
      }
      return undefined;
    },
  });
  return found;
}

/** The first MAX_LISTED_ERRORS problems, and one more saying how many were left out. */
function capped(errors: SpecError[]): SpecError[] {
  if (errors.length <= MAX_LISTED_ERRORS) return errors;
  return [...errors.slice(0, MAX_LISTED_ERRORS), { path: '', message: `… and ${errors.length - MAX_LISTED_ERRORS} more problem(s) not listed` }];
}

function lineColumn(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return { line, column };
}

function explainIssue(issue: z.core.$ZodIssue, raw: unknown, covered: Set<string>): SpecIssue[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
  const value = valueAt(raw, path);
  switch (issue.code) {
    case 'unrecognized_keys':
      return issue.keys
        .map((key) => ({ path: [...path, key], message: `unknown field "${key}" (see docs/job-spec.md for the fields allowed here)` }))
        .filter((i) => !covered.has(formatPath(i.path)));
    case 'invalid_type':
      if (value === undefined) return [{ path, message: 'is required' }];
      if (issue.message.startsWith('Invalid input')) {
        return [{ path, message: `must be ${article(issue.expected)}, got ${describe(value)}${yamlHint(issue.expected, value)}` }];
      }
      return [{ path, message: `${issue.message}, got ${describe(value)}${yamlHint(issue.expected, value)}` }];
    case 'too_small':
      if (issue.message.startsWith('Too small')) {
        const unit = issue.origin === 'array' ? ' items' : issue.origin === 'string' ? ' characters' : '';
        return [{ path, message: `must be ${issue.inclusive === false ? 'greater than' : 'at least'} ${String(issue.minimum)}${unit}` }];
      }
      return [{ path, message: issue.message }];
    case 'too_big':
      if (issue.message.startsWith('Too big')) {
        const unit = issue.origin === 'array' ? ' items' : issue.origin === 'string' ? ' characters' : '';
        return [{ path, message: `must be ${issue.inclusive === false ? 'less than' : 'at most'} ${String(issue.maximum)}${unit}` }];
      }
      return [{ path, message: issue.message }];
    case 'invalid_key':
      // Record keys: the nested issue carries our message about the allowed characters.
      return [{ path, message: `${issue.issues[0]?.message ?? issue.message} (key ${JSON.stringify(path[path.length - 1])})` }];
    default:
      return [{ path, message: issue.message }];
  }
}

function dedupe(issues: SpecIssue[]): SpecError[] {
  const seen = new Set<string>();
  const out: SpecError[] = [];
  for (const i of issues) {
    const e = { path: formatPath(i.path), message: i.message };
    const key = `${e.path}\u0000${e.message}`;
    if (!seen.has(key)) {
      seen.add(key);
      out.push(e);
    }
  }
  return out;
}

function article(expected: string): string {
  return /^[aeiou]/.test(expected) ? `an ${expected}` : `a ${expected}`;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'string') return value.length > 40 ? `the string "${value.slice(0, 40)}…"` : `the string ${JSON.stringify(value)}`;
  return `${typeof value} ${String(value)}`;
}

function yamlHint(expected: string, value: unknown): string {
  return expected === 'string' && (typeof value === 'number' || typeof value === 'boolean')
    ? ' (in YAML, quote values such as "2204" or "yes" to keep them strings)'
    : '';
}
