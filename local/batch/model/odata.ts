import { BatchHttpError } from '../handlers/errors';
import type { Filterable, FilterOp } from './filterable';
import type { Json } from './types';

/**
 * The subset of OData `$filter` Batch clients use: `a eq 'x'`, `a ne 'x'`, `startswith(a,'x')`,
 * combined with `and` / `or` and parentheses. Property paths may use `/` (e.g. `executionInfo/result`).
 * Each list names the properties and operators it filters on (see filterable.ts); anything else is refused.
 */
type Expr =
  | { op: 'eq' | 'ne' | 'gt' | 'ge' | 'lt' | 'le'; path: string[]; value: string | number | boolean }
  | { op: 'startswith'; path: string[]; value: string }
  | { op: 'and' | 'or'; left: Expr; right: Expr };

function badFilter(filter: string, why: string): BatchHttpError {
  return new BatchHttpError(400, 'InvalidQueryParameterValue', `The value for one of the query parameters specified in the request URI is invalid: ${why}`, [
    { key: 'QueryParameterName', value: '$filter' },
    { key: 'QueryParameterValue', value: filter },
  ]);
}

function tokenize(s: string): string[] {
  const out: string[] = [];
  const re = /\s*(datetime'[^']*'|'(?:[^']|'')*'|\(|\)|,|[A-Za-z_][\w/.]*|-?\d+(?:\.\d+)?)/iy;
  let m: RegExpExecArray | null;
  let last = 0;
  while ((m = re.exec(s))) {
    out.push(m[1]);
    last = re.lastIndex;
  }
  if (s.slice(last).trim()) throw new Error(`unexpected text at ${last}`);
  return out;
}

function parseValue(tok: string | undefined): string | number | boolean {
  if (tok === undefined) throw new Error('missing value');
  if (tok.startsWith("'")) return tok.slice(1, -1).replace(/''/g, "'");
  // OData's typed date literal, datetime'2026-01-01T00:00:00Z', compares as the date.
  if (/^datetime'/i.test(tok)) return tok.slice(tok.indexOf("'") + 1, -1);
  if (tok === 'true' || tok === 'false') return tok === 'true';
  if (/^-?\d/.test(tok)) return Number(tok);
  throw new Error(`bad value ${tok}`);
}

export function parseFilter(filter: string, filterable: Filterable): Expr {
  let toks: string[];
  try {
    toks = tokenize(filter);
  } catch (e) {
    throw badFilter(filter, (e as Error).message);
  }
  let i = 0;
  const peek = () => toks[i];
  const take = (expect?: string) => {
    const t = toks[i++];
    if (expect !== undefined && t?.toLowerCase() !== expect) throw new Error(`expected ${expect} but found ${t ?? 'end'}`);
    return t;
  };
  const primary = (): Expr => {
    if (peek() === '(') {
      take('(');
      const e = orExpr();
      take(')');
      return e;
    }
    const name = take();
    if (name === undefined) throw new Error('unexpected end');
    if (name.toLowerCase() === 'startswith') {
      take('(');
      const path = take().split('/');
      take(',');
      const value = parseValue(take());
      take(')');
      return { op: 'startswith', path, value: String(value) };
    }
    const op = take()?.toLowerCase();
    if (!op || !['eq', 'ne', 'gt', 'ge', 'lt', 'le'].includes(op)) throw new Error(`unsupported operator ${op}`);
    return { op: op as 'eq', path: name.split('/'), value: parseValue(take()) };
  };
  const andExpr = (): Expr => {
    let left = primary();
    while (peek()?.toLowerCase() === 'and') {
      take();
      left = { op: 'and', left, right: primary() };
    }
    return left;
  };
  const orExpr = (): Expr => {
    let left = andExpr();
    while (peek()?.toLowerCase() === 'or') {
      take();
      left = { op: 'or', left, right: andExpr() };
    }
    return left;
  };
  let parsed: Expr;
  try {
    parsed = orExpr();
    if (i !== toks.length) throw new Error(`unexpected ${toks[i]}`);
  } catch (e) {
    throw badFilter(filter, (e as Error).message);
  }
  return bindToFilterable(parsed, filter, filterable);
}

/** Checks every comparison against the list's filterable properties and points it at the response property. */
function bindToFilterable(e: Expr, filter: string, filterable: Filterable): Expr {
  if ('left' in e) return { ...e, left: bindToFilterable(e.left, filter, filterable), right: bindToFilterable(e.right, filter, filterable) };
  const name = e.path.join('/');
  const prop = Object.entries(filterable).find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];
  if (!prop) throw badFilter(filter, `this list cannot be filtered on ${name} (it filters on ${Object.keys(filterable).join(', ')})`);
  if (!prop.ops.includes(e.op as FilterOp)) throw badFilter(filter, `${name} does not take the operator ${e.op} (it takes ${prop.ops.join(', ')})`);
  return { ...e, path: (prop.path ?? Object.keys(filterable).find((k) => k.toLowerCase() === name.toLowerCase()) ?? name).split('/') };
}

function lookup(obj: Json, path: string[]): unknown {
  let cur: unknown = obj;
  for (const p of path) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Json)[p];
  }
  return cur;
}

function compare(a: unknown, b: string | number | boolean): number {
  if (typeof a === 'string' && typeof b === 'string') {
    // Dates compare as instants; everything else case-insensitively (Batch ids and enums are).
    const da = Date.parse(a);
    const db = Date.parse(b);
    if (/^\d{4}-\d\d-\d\dT/.test(a) && !isNaN(da) && !isNaN(db)) return da - db;
    return a.toLowerCase() < b.toLowerCase() ? -1 : a.toLowerCase() > b.toLowerCase() ? 1 : 0;
  }
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return String(a) === String(b) ? 0 : 1;
}

export function matches(e: Expr, obj: Json): boolean {
  switch (e.op) {
    case 'and':
      return matches(e.left, obj) && matches(e.right, obj);
    case 'or':
      return matches(e.left, obj) || matches(e.right, obj);
    case 'startswith': {
      const v = lookup(obj, e.path);
      return typeof v === 'string' && v.toLowerCase().startsWith(e.value.toLowerCase());
    }
    default: {
      const v = lookup(obj, e.path);
      if (v === undefined) return e.op === 'ne';
      const c = compare(v, e.value);
      return { eq: c === 0, ne: c !== 0, gt: c > 0, ge: c >= 0, lt: c < 0, le: c <= 0 }[e.op];
    }
  }
}

/** `$select=id,state`: keep only the named top-level properties. */
export function applySelect(obj: Json, select: string | undefined): Json {
  if (!select) return obj;
  const keep = new Set(
    select
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  );
  const out: Json = {};
  for (const [k, v] of Object.entries(obj)) if (keep.has(k)) out[k] = v;
  return out;
}

export interface Page {
  value: Json[];
  'odata.nextLink'?: string;
}

/**
 * Filters (on the list's filterable properties), selects and pages a list. The continuation token is the offset into the filtered list;
 * the next link repeats the query so the SDK's `listNext(nextLink)` needs nothing else.
 */
export function pageOf(items: Json[], query: Record<string, string>, baseUrl: string, path: string, filterable: Filterable): Page {
  const filter = query['$filter'] ? parseFilter(query['$filter'], filterable) : undefined;
  const filtered = filter ? items.filter((it) => matches(filter, it)) : items;
  // maxresults was checked at the door against the spec's range (1..1000).
  const max = query['maxresults'] === undefined ? 1000 : Number(query['maxresults']);
  const start = Number(query['$skiptoken'] ?? 0) || 0;
  const slice = filtered.slice(start, start + max).map((o) => applySelect(o, query['$select']));
  const page: Page = { value: slice };
  if (start + max < filtered.length) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (k !== '$skiptoken' && k !== 'timeout') q.set(k, v);
    q.set('$skiptoken', String(start + max));
    page['odata.nextLink'] = `${baseUrl}${path}?${q.toString()}`;
  }
  return page;
}
