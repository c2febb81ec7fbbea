/**
 * ASP.NET-style route templates as the Functions host accepts them: literal segments, `{name}`,
 * optional `{name?}`, defaults `{name=value}`, catch-all `{*rest}`, and inline constraints
 * `{id:int}`, `{id:min(1)}`, `{name:alpha:length(2,8)}`, `{x:regex(^a+$)}`. Literals match case-insensitively.
 */

interface ParamPart {
  kind: 'param';
  name: string;
  optional: boolean;
  catchAll: boolean;
  defaultValue?: string;
  constraints: Constraint[];
}
type Part = { kind: 'literal'; text: string } | ParamPart;
type Constraint = { name: string; test: (value: string) => boolean };

export interface CompiledRoute {
  template: string;
  /** Per-segment precedence (lower = more specific), compared lexicographically to order routes. */
  precedence: number[];
  match(path: string): Record<string, string> | undefined;
}

export function compileRouteTemplate(template: string): CompiledRoute {
  const cleaned = template.replace(/^\/+|\/+$/g, '');
  const segments = cleaned === '' ? [] : splitTopLevel(cleaned, '/', '{', '}').map((s) => parseSegment(s, template));
  const params: ParamPart[] = [];
  let pattern = '^';
  const precedence: number[] = [];
  segments.forEach((parts, i) => {
    const onlyParam = parts.length === 1 && parts[0].kind === 'param' ? parts[0] : undefined;
    let seg = '';
    for (const part of parts) {
      if (part.kind === 'literal') {
        seg += escapeRegExp(part.text);
      } else {
        params.push(part);
        seg += part.catchAll ? '(.*)' : '([^/]+)';
      }
    }
    const slash = i === 0 ? '' : '/';
    if (onlyParam && (onlyParam.optional || onlyParam.defaultValue !== undefined || onlyParam.catchAll)) {
      // An optional last segment may be missing altogether, slash included.
      pattern += `(?:${slash}${seg})?`;
    } else {
      pattern += slash + seg;
    }
    precedence.push(segmentPrecedence(parts));
  });
  pattern += '/?$';
  const regex = new RegExp(pattern, 'i');

  return {
    template,
    precedence,
    match(path: string) {
      const m = regex.exec(path.replace(/^\/+/, ''));
      if (!m) return undefined;
      const values: Record<string, string> = {};
      for (let i = 0; i < params.length; i++) {
        const p = params[i];
        const raw = m[i + 1];
        let value: string | undefined;
        try {
          value = raw === undefined || raw === '' ? p.defaultValue : decodeURIComponent(raw);
        } catch {
          return undefined;
        }
        if (value === undefined) continue;
        if (!p.constraints.every((c) => c.test(value))) return undefined;
        values[p.name] = value;
      }
      return values;
    },
  };
}

/** Splits `s` on `sep` where it is not nested inside `open`…`close` (a regex constraint may contain '/' or ':'). */
function splitTopLevel(s: string, sep: string, open: string, close: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let current = '';
  for (const c of s) {
    if (c === open) depth++;
    if (c === close) depth--;
    if (c === sep && depth === 0) {
      out.push(current);
      current = '';
    } else {
      current += c;
    }
  }
  out.push(current);
  return out;
}

function parseSegment(segment: string, template: string): Part[] {
  if (segment === '') throw new Error(`Route template "${template}" has an empty segment`);
  const parts: Part[] = [];
  let i = 0;
  while (i < segment.length) {
    if (segment[i] === '{') {
      const end = findClosingBrace(segment, i);
      if (end < 0) throw new Error(`Route template "${template}": unbalanced "{" in segment "${segment}"`);
      parts.push(parseParam(segment.slice(i + 1, end), template));
      i = end + 1;
    } else {
      const next = segment.indexOf('{', i);
      const text = segment.slice(i, next < 0 ? undefined : next);
      if (text.includes('}')) throw new Error(`Route template "${template}": stray "}" in segment "${segment}"`);
      parts.push({ kind: 'literal', text });
      i = next < 0 ? segment.length : next;
    }
  }
  return parts;
}

function findClosingBrace(s: string, open: number): number {
  let depth = 0;
  for (let i = open; i < s.length; i++) {
    if (s[i] === '{') depth++;
    else if (s[i] === '}' && --depth === 0) return i;
  }
  return -1;
}

function parseParam(body: string, template: string): ParamPart {
  let rest = body;
  const catchAll = rest.startsWith('*');
  if (catchAll) rest = rest.replace(/^\*+/, '');
  const nameMatch = /^[A-Za-z_][A-Za-z0-9_]*/.exec(rest);
  if (!nameMatch) throw new Error(`Route template "${template}": bad parameter "{${body}}"`);
  const name = nameMatch[0];
  rest = rest.slice(name.length);
  let optional = false;
  let defaultValue: string | undefined;
  if (rest.endsWith('?')) {
    optional = true;
    rest = rest.slice(0, -1);
  }
  const eq = rest.indexOf('=');
  if (eq >= 0 && !rest.slice(0, eq).includes('(')) {
    defaultValue = rest.slice(eq + 1);
    rest = rest.slice(0, eq);
  }
  const constraints = rest === '' ? [] : splitTopLevel(rest.slice(1), ':', '(', ')').map((c) => parseConstraint(c, template));
  return { kind: 'param', name, optional, catchAll, defaultValue, constraints };
}

const GUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;

function parseConstraint(text: string, template: string): Constraint {
  const m = /^([a-z]+)(?:\((.*)\))?$/i.exec(text);
  if (!m) throw new Error(`Route template "${template}": bad constraint "${text}"`);
  const name = m[1].toLowerCase();
  const args = m[2] === undefined ? [] : name === 'regex' ? [m[2]] : m[2].split(',').map((a) => a.trim());
  const n = (k: number): number => {
    const v = Number(args[k]);
    if (!Number.isFinite(v)) throw new Error(`Route template "${template}": constraint "${text}" needs numeric arguments`);
    return v;
  };
  const isInt = (v: string): boolean => /^[+-]?\d+$/.test(v);
  const tests: Record<string, () => (v: string) => boolean> = {
    int: () => (v) => isInt(v) && Math.abs(Number(v)) <= 2147483648,
    long: () => isInt,
    bool: () => (v) => /^(true|false)$/i.test(v),
    guid: () => (v) => GUID.test(v),
    alpha: () => (v) => /^[A-Za-z]+$/.test(v),
    double: () => (v) => NUMBER.test(v),
    float: () => (v) => NUMBER.test(v),
    decimal: () => (v) => NUMBER.test(v),
    datetime: () => (v) => !Number.isNaN(Date.parse(v)),
    min: () => (v) => isInt(v) && Number(v) >= n(0),
    max: () => (v) => isInt(v) && Number(v) <= n(0),
    range: () => (v) => isInt(v) && Number(v) >= n(0) && Number(v) <= n(1),
    minlength: () => (v) => v.length >= n(0),
    maxlength: () => (v) => v.length <= n(0),
    length: () => (v) => (args.length === 1 ? v.length === n(0) : v.length >= n(0) && v.length <= n(1)),
    regex: () => {
      const re = new RegExp(args[0] ?? '', 'i');
      return (v) => re.test(v);
    },
    required: () => (v) => v !== '',
  };
  const make = tests[name];
  if (!make) throw new Error(`Route template "${template}": unknown constraint "${name}"`);
  return { name, test: make() };
}

function segmentPrecedence(parts: Part[]): number {
  if (parts.length > 1) return 2; // complex segment: literal text plus parameters
  const p = parts[0];
  if (p.kind === 'literal') return 1;
  if (p.catchAll) return 5;
  if (p.optional || p.defaultValue !== undefined) return 4;
  return p.constraints.length > 0 ? 2 : 3;
}

export function comparePrecedence(a: CompiledRoute, b: CompiledRoute): number {
  const n = Math.max(a.precedence.length, b.precedence.length);
  for (let i = 0; i < n; i++) {
    const pa = a.precedence[i] ?? 0;
    const pb = b.precedence[i] ?? 0;
    if (pa !== pb) return pa - pb;
  }
  return 0;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
